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


@keras.saving.register_keras_serializable(package="zoo")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads.

    Query, key, value and output projections are plain (hidden, hidden) dense kernels so that
    checkpoints of BERT, GPT-1 and ViT map onto them one tensor each. Heads are split by a
    reshape to (batch, seq, heads, head_dim), the layout `keras.ops.dot_product_attention`
    takes, so there is no per-head loop and no transpose on our side.

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

    def call_rows(self, rows, batch, seq, attention_mask=None, training=None):
        """The same on (batch * seq, hidden) rows: every projection is then a 2-D matmul.

        `TransformerBlock` keeps its activations as rows, because TensorFlow's graph
        optimizer fuses a 2-D MatMul with its BiasAdd (and GELU) into one oneDNN kernel,
        which it does not do for the 3-D Dense path (see `TransformerBlock.call`).
        """
        def heads(projection):  # (batch * seq, hidden) -> (batch, seq, heads, head_dim)
            return ops.reshape(projection(rows), (batch, seq, self.num_heads, self.head_dim))

        q, k, v = heads(self.query_dense), heads(self.key_dense), heads(self.value_dense)
        if training and self.dropout > 0:
            # The fused op has no dropout on the probabilities, so training with attention
            # dropout takes the explicit path; both paths compute the same function.
            logits = ops.einsum("btnh,bsnh->bnts", q, k) / ops.cast(
                math.sqrt(self.head_dim), q.dtype
            )
            if attention_mask is not None:
                logits = ops.where(attention_mask, logits, ops.cast(-1e9 if logits.dtype == "float32"
                                                          else -3e4, logits.dtype))
            probs = ops.cast(ops.softmax(ops.cast(logits, "float32"), axis=-1), q.dtype)
            probs = self.dropout_layer(probs, training=training)
            context = ops.einsum("bnts,bsnh->btnh", probs, v)  # (b, s, heads, d)
        else:
            context = ops.dot_product_attention(q, k, v, mask=attention_mask)  # (b, s, heads, d)
        return self.output_dense(ops.reshape(context, (-1, self.num_heads * self.head_dim)))

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
