"""Where each weight of BERT, GPT-1 and ViT lives on a JAX device mesh (keras.distribution).

`layout_map(mesh)` is the `keras.distribution.LayoutMap` of `ModelParallel`
(https://keras.io/api/distribution/layout_map/, https://keras.io/guides/distribution/): a
Megatron-style split of every transformer block over the mesh axis "model" (Shoeybi et al.
2019, section 3). The query, key and value projections and the feed-forward intermediate layer
are split by output column (for attention: by head, as the heads are consecutive column
groups), the attention output and feed-forward output layers by input row, so each block
needs one reduction after attention and one after the feed-forward layer. LayerNorm, the
output biases, the pooler and the task heads stay replicated. Optionally the token, segment
and position tables are split along the hidden axis.

Keys are matched with `re.fullmatch` against `variable.path` (e.g.
`bert_backbone/transformer_layer_0/attention/query/kernel`); each path matches at most one
key (LayoutMap refuses ambiguity). The three families share the block layers of
zoo/layers/transformer.py and attention.py, so one map serves them all. GPT-1 Table 5's
LSTMBackbone has no such blocks: its token embedding is split, its LSTM stays replicated.
"""

import keras

MODEL_AXIS = "model"
BATCH_AXIS = "batch"

# (pattern, axes) for Dense kernels [in, out] and biases [out] of every transformer block.
BLOCK_LAYOUT = (
    (r".*attention/(query|key|value)/kernel", (None, MODEL_AXIS)),
    (r".*attention/(query|key|value)/bias", (MODEL_AXIS,)),
    (r".*attention/output/kernel", (MODEL_AXIS, None)),
    (r".*ffn_intermediate/kernel", (None, MODEL_AXIS)),
    (r".*ffn_intermediate/bias", (MODEL_AXIS,)),
    (r".*ffn_output/kernel", (MODEL_AXIS, None)),
)
# Embedding tables [rows, hidden] of BERT and GPT-1 (ViT's patch embedding stays whole).
EMBEDDING_LAYOUT = (
    (r".*(token|segment|position)_embedding/embeddings", (None, MODEL_AXIS)),
)


def layout_map(mesh, shard_embeddings=True):
    """The ModelParallel layout of the three families on `mesh`.

    Args:
        mesh: a `keras.distribution.DeviceMesh` with axes ("batch", "model").
        shard_embeddings: also split the embedding tables along the hidden axis.

    Returns:
        A `keras.distribution.LayoutMap`.

    Examples:
        >>> import keras  # doctest: +SKIP
        >>> mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"))  # doctest: +SKIP
        >>> keras.distribution.set_distribution(keras.distribution.ModelParallel(
        ...     layout_map=layout_map(mesh), batch_dim_name="batch"))  # doctest: +SKIP
    """
    layouts = keras.distribution.LayoutMap(mesh)
    for pattern, axes in BLOCK_LAYOUT + (EMBEDDING_LAYOUT if shard_embeddings else ()):
        layouts[pattern] = axes
    return layouts
