"""`BertMultipleChoice`: BERT scoring each choice on its pooled [CLS] vector (SWAG)."""

import keras

from zoo.layers import FoldSequences, UnfoldSequences
from zoo.models.head_models.base import HeadModel, bert_classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertMultipleChoice(HeadModel):
    """BERT for multiple choice: one score per choice, `logits` (batch, num_choices).

    BERT section 4.4 (SWAG): "we construct four input sequences, each containing the
    concatenation of the given sentence (sentence A) and a possible continuation (sentence B).
    The only task-specific parameters introduced is a vector whose dot product with the [CLS]
    token representation C denotes a score for each choice which is normalized with a softmax
    layer." Inputs are (batch, num_choices, seq), folded to (batch * num_choices, seq) for the
    backbone; the vector reads `pooled_output` with dropout before it, as the released
    `run_swag.py` and transformers' BertForMultipleChoice do.

    Args:
        backbone: a `zoo.models.BertBackbone` (with its pooler).
        num_choices: choices per example (SWAG and RACE 4, Story Cloze 2).
        dropout: dropout on the pooled vector.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertMultipleChoice(backbone, num_choices=2)
        >>> ids = np.array([[[2, 7, 3, 8, 3], [2, 7, 3, 9, 3]]])
        >>> segments = np.array([[[0, 0, 0, 1, 1], [0, 0, 0, 1, 1]]])
        >>> model({"token_ids": ids, "segment_ids": segments, "padding_mask": ids > 0}
        ...       )["logits"].shape
        TensorShape([1, 2])
    """

    config_keys = ("num_choices", "dropout")

    def __init__(self, backbone, num_choices, dropout=0.1, **kwargs):
        if not backbone.pooler:
            raise ValueError("multiple choice scores the pooled [CLS] vector; "
                             f"{backbone.name} has pooler=False")

        # === Layers ===
        classifier = bert_classifier(backbone, 1, dropout)

        # === Functional Model ===
        inputs = {name: keras.Input((num_choices, None), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        flat = {name: FoldSequences(name=f"fold_{name}")(x) for name, x in inputs.items()}
        pooled = backbone(flat)["pooled_output"]  # (batch * n, hidden)
        scores = classifier(pooled)  # (batch * n, 1)
        logits = UnfoldSequences(num_choices, name="unfold_scores")(scores)[..., 0]  # (b, n)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_choices=num_choices, dropout=dropout, classifier=classifier)
