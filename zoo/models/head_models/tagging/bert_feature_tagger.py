"""`BertFeatureTagger`: feature-based NER, a BiLSTM tagger on a frozen BERT's hidden states."""

import keras
from keras import ops

from zoo.layers import HiddenStateFeatures
from zoo.models.head_models.base import HeadModel, bert_classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertFeatureTagger(HeadModel):
    """Feature-based NER (BERT section 5.4, Table 7): a frozen BERT, a BiLSTM and a classifier.

    "We use the representation of one or more layers without fine-tuning any parameters of
    BERT. These contextual embeddings are used as input to a randomly initialized two-layer
    768-dimensional BiLSTM before the classification layer." The backbone must be built with
    `return_hidden_states=True`; it is frozen (not trainable, run in inference mode) and
    `HiddenStateFeatures` picks the combination. Output `logits` (batch, seq, num_tags).

    Args:
        backbone: a `zoo.models.BertBackbone` with `return_hidden_states=True`.
        num_tags: the size of the tag set.
        features: one of `FEATURES`.
        lstm_units: units per direction of each BiLSTM layer (768 in the paper).
        dropout: dropout on the BiLSTM output, before the classifier.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=4, vocabulary_size=50,
        ...                              return_hidden_states=True)
        >>> model = zoo.models.BertFeatureTagger(backbone, 9, "concat_last_four", lstm_units=8)
        >>> ids = np.array([[2, 7, 3]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> model(x)["logits"].shape
        TensorShape([1, 3, 9])
    """

    config_keys = ("num_tags", "features", "lstm_units", "dropout")

    def __init__(self, backbone, num_tags, features, lstm_units=768, dropout=0.1, **kwargs):
        if not backbone.return_hidden_states:
            raise ValueError(f"{backbone.name}: the feature-based model reads hidden_states; "
                             "build the backbone with return_hidden_states=True")
        backbone.trainable = False

        # === Layers ===
        select = HiddenStateFeatures(features, dtype=backbone.dtype_policy, name="features")
        lstms = [keras.layers.Bidirectional(
            keras.layers.LSTM(lstm_units, return_sequences=True), name=f"bilstm_{i}")
            for i in range(2)]
        classifier = bert_classifier(backbone, num_tags, dropout)

        # === Functional Model ===
        inputs = backbone.input
        hidden_states = backbone(inputs, training=False)["hidden_states"]  # (b, L+1, seq, h)
        x = select(hidden_states)  # (batch, seq, hidden or 4 * hidden)
        mask = ops.cast(inputs["padding_mask"], "bool")
        for lstm in lstms:
            x = lstm(x, mask=mask)  # (batch, seq, 2 * lstm_units)
        logits = classifier(x)  # (batch, seq, num_tags)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_tags=num_tags, features=features, lstm_units=lstm_units,
                   dropout=dropout, select=select, classifier=classifier)
