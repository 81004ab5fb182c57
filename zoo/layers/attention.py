"""Multi-head self-attention (Vaswani et al. 2017, section 3.2) with padding and causal masks."""

import math

import keras
from keras import ops

from zoo.layers.dropout import Dropout
from zoo.layers.initializers import clone_initializer


@keras.saving.register_keras_serializable(package="zoo")
class AttentionMask(keras.layers.Layer):
    """Boolean attention mask (batch, 1, query, key) from a (batch, seq) padding mask.

    True means "may attend". Padding masks the keys only: padded queries still produce an
    output, which callers ignore, so the outputs of real tokens do not depend on how much
    padding follows. With `causal=True`, query t also may not see keys after t. Built once per
    forward pass and shared by every block.

    Args:
        causal: add the lower-triangular (decoder) mask.
    """

    def __init__(self, causal=False, **kwargs):
        super().__init__(**kwargs)
        self.causal = causal

    def call(self, padding_mask):
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (batch, 1, 1, seq)
        if self.causal:
            seq = ops.shape(padding_mask)[1]
            causal = ops.arange(seq)[:, None] >= ops.arange(seq)[None, :]  # (seq, seq)
            mask = ops.logical_and(mask, causal[None, None])  # (batch, 1, seq, seq)
        return mask

    def compute_output_spec(self, padding_mask):
        batch, seq = padding_mask.shape
        return keras.KerasTensor((batch, 1, seq if self.causal else 1, seq), dtype="bool")

    def get_config(self):
        config = super().get_config()
        config.update(causal=self.causal)
        return config


def slice_write(cache, new, index, axis):
    """`cache` with `new` written from `index` along `axis` (`keras.ops.slice_update`)."""
    start = [0] * len(cache.shape)
    start[axis] = index
    return ops.slice_update(cache, start, new)


@keras.saving.register_keras_serializable(package="zoo")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads.

    Query, key, value and output projections are plain (hidden, hidden) dense kernels so that
    checkpoints of BERT, GPT-1 and ViT map onto them one tensor each. Heads are split by a
    reshape and a transpose to (batch, heads, seq, head_dim); logits and context are two
    batched matmuls, the same function as `keras.ops.dot_product_attention` with the softmax
    in float32, and the same ops in training (dropout on the probabilities) and inference.

    Why not `keras.ops.dot_product_attention`: on TensorFlow it runs two einsums and scales
    and masks the logits as separate ops; written as matmul, scale and an additive mask,
    TensorFlow's graph optimizer fuses the three into one oneDNN kernel
    (`_MklFusedBatchMatMulV2`; its pattern needs the mask, so ViT keeps a separate scale),
    and XLA (JAX) also compiles it faster: `zoo benchmark models` measures both (figures in
    docs/measurements.md).

    Args:
        num_heads: number of attention heads; must divide the hidden size.
        dropout: dropout rate on the attention probabilities (training only).
        kernel_initializer: initializer of the four projection kernels.
    """

    def __init__(self, num_heads, dropout=0.0, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        hidden = input_shape[-1]
        if hidden % self.num_heads:
            raise ValueError(
                f"{self.name}: hidden size {hidden} is not divisible by num_heads={self.num_heads}"
            )
        self.head_dim = hidden // self.num_heads

        def dense(name):
            return keras.layers.Dense(
                hidden, kernel_initializer=clone_initializer(self.kernel_initializer),
                dtype=self.dtype_policy, name=name)

        self.query_dense = dense("query")
        self.key_dense = dense("key")
        self.value_dense = dense("value")
        self.output_dense = dense("output")
        for layer in (self.query_dense, self.key_dense, self.value_dense):
            layer.build(input_shape)
        self.output_dense.build(input_shape)
        self.dropout_layer = Dropout(self.dropout, dtype=self.dtype_policy)

    def call(self, x, attention_mask=None, training=None):  # x: (batch, seq, hidden)
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        rows = self.call_rows(ops.reshape(x, (-1, x.shape[-1])), batch, seq, attention_mask,
                              training)
        return ops.reshape(rows, (batch, seq, x.shape[-1]))

    def heads(self, rows, batch, seq):
        """The queries (batch, heads, seq, head_dim), keys (batch, heads, head_dim, seq) and
        values (batch, heads, seq, head_dim) of (batch * seq, hidden) rows.

        `call_rows` and `call_cached` take their projections here only, so that the int8
        export can serve the three as one product (`zoo.export.int8.serving_form`).
        """
        n, d = self.num_heads, self.head_dim

        def split(projection, order):  # (batch * seq, hidden) -> (batch, heads, ., .)
            return ops.transpose(ops.reshape(projection(rows), (batch, seq, n, d)), order)

        return (split(self.query_dense, (0, 2, 1, 3)), split(self.key_dense, (0, 2, 3, 1)),
                split(self.value_dense, (0, 2, 1, 3)))

    def call_rows(self, rows, batch, seq, attention_mask=None, training=None):
        """The same on (batch * seq, hidden) rows: every projection is then a 2-D matmul.

        `TransformerBlock` keeps its activations as rows, because TensorFlow's graph
        optimizer fuses a 2-D MatMul with its BiasAdd (and GELU) into one oneDNN kernel,
        which it does not do for the 3-D Dense path (see `TransformerBlock.call`).
        """
        n, d = self.num_heads, self.head_dim
        q, k, v = self.heads(rows, batch, seq)
        logits = ops.cast(ops.matmul(q, k), "float32") * (1.0 / math.sqrt(d))
        if attention_mask is not None:  # additive, so that the three ops fuse on TensorFlow
            logits = logits + ops.where(attention_mask, 0.0, -1e9)
        # One key (a 1-token input): the softmax is 1, and ops.softmax would warn about it.
        probs = ops.ones_like(logits) if logits.shape[-1] == 1 else ops.softmax(logits, axis=-1)
        probs = ops.cast(probs, q.dtype)  # (batch, heads, seq, seq)
        if training and self.dropout > 0:
            probs = self.dropout_layer(probs, training=training)
        context = ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))  # (b, seq, heads, d)
        return self.output_dense(ops.reshape(context, (-1, n * d)))

    def call_cached(self, rows, batch, seq, attention_mask, keys, values, index, write=None):
        """Inference on `seq` new (batch * seq, hidden) rows with a key/value cache.

        The new rows' keys and values are written into the cache at slots [index, index +
        seq); the queries attend to every slot `attention_mask` (batch, 1, seq, length)
        allows. `keys` is (batch, heads, head_dim, length), already transposed for the logits
        matmul so that no step transposes the whole cache; `values` is (batch, heads, length,
        head_dim). `write(cache, new, index, axis)` puts `new` into `cache` at `index` along
        `axis` (default `ops.slice_update`; `zoo.generation.CachedLM` picks one per backend).
        Returns the (batch * seq, hidden) output rows and the updated caches.
        """
        write = write or slice_write
        n, d = self.num_heads, self.head_dim
        q, k, v = self.heads(rows, batch, seq)
        keys = write(keys, ops.cast(k, keys.dtype), index, 3)
        values = write(values, ops.cast(v, values.dtype), index, 2)
        logits = ops.cast(ops.matmul(q, keys), "float32") * (1.0 / math.sqrt(d))
        logits = logits + ops.where(attention_mask, 0.0, -1e9)  # (batch, heads, seq, length)
        probs = ops.cast(ops.softmax(logits, axis=-1), q.dtype)
        context = ops.transpose(ops.matmul(probs, values), (0, 2, 1, 3))  # (b, seq, heads, d)
        return self.output_dense(ops.reshape(context, (-1, n * d))), keys, values

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            dropout=self.dropout,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
