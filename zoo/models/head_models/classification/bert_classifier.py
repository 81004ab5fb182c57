"""`BertClassifier`: BERT with a classifier on the pooled [CLS] vector (or on a BiLSTM)."""

import keras
from keras import ops

from zoo.models.head_models.base import HeadModel, bert_classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertClassifier(HeadModel):
    """BERT with a classifier on `pooled_output`: `logits` (batch, num_classes).

    BERT section 4.1: the final hidden vector of [CLS] (through the pooler) times a new
    classification weight matrix W (K x H); dropout 0.1 before it as in the released
    `run_classifier.py`. With `num_classes=1` the output is a regression score (STS-B).

    With `lstm_units`, a randomly initialized BiLSTM reads the token vectors instead (BERT
    section 5.1, Table 5 "LTR & No NSP + BiLSTM"): the classifier reads its two final states,
    the forward one at the last real token and the backward one at the first; the backbone's
    pooler is not used (build it with `pooler=False`).

    Args:
        backbone: a `zoo.models.BertBackbone`.
        num_classes: number of labels (1: regression).
        dropout: dropout on the pooled vector.
        lstm_units: units per direction of the BiLSTM; None: no BiLSTM.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertClassifier(backbone, num_classes=3)
        >>> ids = np.array([[2, 7, 3]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> model(x)["logits"].shape
        TensorShape([1, 3])
    """

    config_keys = ("num_classes", "dropout", "lstm_units")

    def __init__(self, backbone, num_classes, dropout=0.1, lstm_units=None, **kwargs):
        # === Layers ===
        classifier = bert_classifier(backbone, num_classes, dropout)
        bilstm = (None if lstm_units is None else
                  keras.layers.Bidirectional(keras.layers.LSTM(lstm_units), name="bilstm"))

        # === Functional Model ===
        inputs = backbone.input
        if bilstm is None:
            pooled = backbone(inputs)["pooled_output"]  # (batch, hidden)
        else:
            sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
            mask = ops.cast(inputs["padding_mask"], "bool")
            pooled = bilstm(sequence, mask=mask)  # (batch, 2 * lstm_units)
        logits = classifier(pooled)  # (batch, num_classes)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_classes=num_classes, dropout=dropout, lstm_units=lstm_units,
                   classifier=classifier, bilstm=bilstm)
