"""`BertTokenClassifier`: BERT with a classifier on every token (CoNLL-2003 NER, fine-tuned)."""

import keras

from zoo.models.head_models.base import HeadModel, bert_classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertTokenClassifier(HeadModel):
    """BERT with a token-level classifier on `sequence_output`: `logits` (batch, seq, num_tags).

    BERT section 5.3 (CoNLL-2003 NER): "we use the representation of the first sub-token as the
    input to the token-level classifier over the NER label set"; the model scores every
    position, and the task reads (and weights the loss at) each word's first sub-token. Dropout
    0.1 before the classifier as in the released `run_classifier.py`.

    Args:
        backbone: a `zoo.models.BertBackbone`.
        num_tags: the size of the tag set.
        dropout: dropout on the token vectors.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertTokenClassifier(backbone, num_tags=9)
        >>> ids = np.array([[2, 7, 3]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> model(x)["logits"].shape
        TensorShape([1, 3, 9])
    """

    config_keys = ("num_tags", "dropout")

    def __init__(self, backbone, num_tags, dropout=0.1, **kwargs):
        # === Layers ===
        classifier = bert_classifier(backbone, num_tags, dropout)

        # === Functional Model ===
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        logits = classifier(sequence)  # (batch, seq, num_tags)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_tags=num_tags, dropout=dropout, classifier=classifier)
