"""`BertTextEmbedder`: BERT's token vectors pooled into one sentence vector (mean, [CLS] or
max), optionally L2-normalized, as sentence-transformers' `Pooling` and `Normalize` modules
and keras-hub's `BertTextEmbedder` define them."""

import keras
from keras import ops

from zoo.models.head_models.base import HeadModel

# The pooling modes, as sentence-transformers names them (`pooling_mode`).
POOLINGS = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="zoo")
class BertTextEmbedder(HeadModel):
    """BERT with a pooling over its token vectors: `embedding` (batch, hidden), float32.

    Sentence-BERT (Reimers and Gurevych, 2019, section 3): "we add a pooling operation to the
    output of BERT to derive a fixed sized sentence embedding": the mean of the output
    vectors (the default), the output of the [CLS] token, or their max over time. Padding is
    excluded as sentence-transformers' `Pooling` excludes it: the mean sums the real tokens
    and divides by their count (at least 1e-9), the max sets padded positions to -inf, and
    [CLS] is the first position (zoo pads on the right). `normalize` divides each vector by
    its L2 norm (at least 1e-12), as the `Normalize` module (torch's `F.normalize`) does, so
    a dot product is a cosine similarity. The pooling and normalization run in float32.

    Args:
        backbone: a `zoo.models.BertBackbone`.
        pooling: "mean", "cls" or "max".
        normalize: L2-normalize the vectors.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> from zoo.models.head_models import BertTextEmbedder
        >>> model = BertTextEmbedder(backbone, pooling="mean", normalize=True)
        >>> ids = np.array([[2, 7, 3, 0]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> vector = model(x)["embedding"]
        >>> vector.shape, round(float(np.linalg.norm(vector)), 4)
        (TensorShape([1, 128]), 1.0)
    """

    config_keys = ("pooling", "normalize")

    def __init__(self, backbone, pooling="mean", normalize=False, **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r}: expected one of {', '.join(POOLINGS)}")

        # === Functional Model ===
        inputs = backbone.input
        sequence = ops.cast(backbone(inputs)["sequence_output"], "float32")  # (b, seq, hidden)
        mask = ops.expand_dims(ops.cast(inputs["padding_mask"], "float32"), -1)  # (b, seq, 1)
        if pooling == "mean":
            pooled = ops.sum(sequence * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
        elif pooling == "max":
            pooled = ops.max(ops.where(mask > 0, sequence, float("-inf")), axis=1)
        else:
            pooled = sequence[:, 0, :]  # (batch, hidden)
        if normalize:
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        super().__init__(inputs=inputs, outputs={"embedding": pooled}, **kwargs)

        # === Config ===
        self._keep(backbone, pooling=pooling, normalize=normalize)
