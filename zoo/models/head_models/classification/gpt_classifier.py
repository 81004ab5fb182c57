"""`GPTClassifier`: GPT-1 with a linear layer on the extract token, plus its LM head."""

import keras
from keras import ops

from zoo.layers import ClassificationHead, FoldSequences, LastTokenPooling, UnfoldSequences
from zoo.models.head_models.base import HeadModel


@keras.saving.register_keras_serializable(package="zoo")
class GPTClassifier(HeadModel):
    """GPT-1 fine-tuning model: a linear layer on the extract token, plus the LM head.

    Section 3.3: the input transformations end each sequence with the extract token, whose
    final activation feeds a linear output layer W_y. With `num_sequences=n` every example
    holds n sequences (batch, n, seq): `combine="sum"` adds their representations before
    the linear layer (similarity: both orders), `combine="choices"` scores each one and the
    logits are (batch, n), normalized over choices (multiple choice). With `lm=True` the model
    also outputs `lm` logits (batch, [n,] seq, vocabulary_size) for the auxiliary language
    modelling objective L3 = L2 + lambda * L1 (section 3.2).

    Args:
        backbone: a `zoo.models.GPTBackbone`.
        num_classes: number of labels (ignored for `combine="choices"`: one score a choice).
        num_sequences: sequences per example, or None for one (batch, seq) sequence.
        combine: "sum" or "choices", how n sequences make one prediction.
        dropout: dropout before the linear layer (0.1, section 4.1 "dropout ... 0.1 to the
            classifier").
        lm: also output the language-model logits.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
        ...                              vocabulary_size=60)
        >>> model = zoo.models.GPTClassifier(backbone, 3, num_sequences=2, combine="sum")
        >>> ids = np.array([[[1, 5, 2, 7, 3], [1, 7, 2, 5, 3]]])
        >>> out = model({"token_ids": ids, "padding_mask": ids > 0})
        >>> out["logits"].shape, out["lm"].shape
        (TensorShape([1, 3]), TensorShape([1, 2, 5, 60]))
    """

    config_keys = ("num_classes", "num_sequences", "combine", "dropout", "lm")

    def __init__(self, backbone, num_classes, num_sequences=None, combine="sum", dropout=0.1,
                 lm=True, **kwargs):
        if combine not in ("sum", "choices"):
            raise ValueError(f"combine must be 'sum' or 'choices', got {combine!r}")
        init = keras.initializers.RandomNormal(stddev=0.02)
        units = 1 if num_sequences and combine == "choices" else num_classes

        # === Layers ===
        classifier = ClassificationHead(units, dropout=dropout, kernel_initializer=init,
                                        dtype=backbone.dtype_policy, name="classifier")
        pooling = LastTokenPooling(dtype=backbone.dtype_policy, name="extract_token")

        # === Functional Model ===
        shape = (num_sequences, None) if num_sequences else (None,)
        inputs = {name: keras.Input(shape, dtype="int32", name=name)
                  for name in ("token_ids", "padding_mask")}
        flat = inputs
        if num_sequences:
            flat = {name: FoldSequences(name=f"fold_{name}")(x) for name, x in inputs.items()}
        sequence = backbone(flat)["sequence_output"]  # (batch [* n], seq, hidden)
        features = pooling(sequence, flat["padding_mask"])  # (batch [* n], hidden)
        outputs = {}
        if not num_sequences:
            outputs["logits"] = classifier(features)  # (batch, num_classes)
        elif combine == "sum":
            features = UnfoldSequences(num_sequences, name="unfold_features")(features)
            outputs["logits"] = classifier(ops.sum(features, axis=1))  # (batch, num_classes)
        else:
            scores = classifier(features)  # (batch * n, 1)
            outputs["logits"] = UnfoldSequences(num_sequences, name="unfold_scores")(
                scores)[..., 0]  # (batch, n)
        if lm:
            logits = backbone.logits(sequence)  # (batch [* n], seq, vocabulary)
            if num_sequences:
                logits = UnfoldSequences(num_sequences, name="unfold_lm")(logits)
            outputs["lm"] = logits
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self._keep(backbone, num_classes=num_classes, num_sequences=num_sequences, combine=combine,
                   dropout=dropout, lm=lm, classifier=classifier)
