"""The Transformer block in its two orders: post-LayerNorm (BERT, GPT-1) and pre-LayerNorm (ViT)."""

import keras
from keras import ops

from zoo.layers.attention import MultiHeadSelfAttention
from zoo.layers.dropout import Dropout
from zoo.layers.initializers import clone_initializer


@keras.saving.register_keras_serializable(package="zoo")
class TransformerBlock(keras.layers.Layer):
    """Self-attention and a position-wise feed-forward network, each with a residual connection.

    Post-LayerNorm (BERT, GPT-1; Vaswani et al. 2017):
        x = LN(x + Attn(x));  x = LN(x + FFN(x))
    Pre-LayerNorm (ViT section 3.1, eqs. 2-3):
        x = x + Attn(LN(x));  x = x + FFN(LN(x))

    Args:
        num_heads: attention heads.
        intermediate_dim: width of the feed-forward hidden layer.
        activation: feed-forward activation; "gelu" is the exact erf form of the BERT code.
        dropout: dropout after the attention and feed-forward outputs.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_epsilon: epsilon of both LayerNorms.
        normalize_first: True for pre-LayerNorm (ViT), False for post-LayerNorm.
        kernel_initializer: initializer of every dense kernel.
    """

    def __init__(self, num_heads, intermediate_dim, activation="gelu", dropout=0.0,
                 attention_dropout=0.0, layer_norm_epsilon=1e-12, normalize_first=False,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        hidden = input_shape[-1]
        common = dict(dtype=self.dtype_policy)
        def dense():
            return dict(kernel_initializer=clone_initializer(self.kernel_initializer), **common)

        self.attention = MultiHeadSelfAttention(
            self.num_heads, dropout=self.attention_dropout, name="attention", **dense()
        )
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="attention_norm", **common
        )
        self.ffn_intermediate = keras.layers.Dense(
            self.intermediate_dim, activation=activation_function(self.activation),
            name="ffn_intermediate", **dense()
        )
        self.ffn_output = keras.layers.Dense(hidden, name="ffn_output", **dense())
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name="ffn_norm", **common
        )
        self.dropout_layer = Dropout(self.dropout, **common)
        self.attention.build(input_shape)
        self.attention_norm.build(input_shape)
        self.ffn_intermediate.build(input_shape)
        self.ffn_output.build(tuple(input_shape[:-1]) + (self.intermediate_dim,))
        self.ffn_norm.build(input_shape)

    def _ffn(self, x, training):
        return self.dropout_layer(self.ffn_output(self.ffn_intermediate(x)), training=training)

    def _attn(self, rows, batch, seq, attention_mask, training):
        rows = self.attention.call_rows(rows, batch, seq, attention_mask, training)
        return self.dropout_layer(rows, training=training)

    def call(self, x, attention_mask=None, training=None):  # x: (batch, seq, hidden)
        # The block works on (batch * seq, hidden) rows. Same function, but on TensorFlow
        # every Dense is then a 2-D MatMul + BiasAdd (+ GELU) that the graph optimizer fuses
        # into one oneDNN kernel; the 3-D path keeps them apart, which is slower, most of all
        # in mixed_bfloat16 with its unfused bfloat16 GELU (docs/measurements.md).
        batch, seq, hidden = ops.shape(x)[0], ops.shape(x)[1], x.shape[-1]
        rows = ops.reshape(x, (-1, hidden))
        if self.normalize_first:
            rows = rows + self._attn(self.attention_norm(rows), batch, seq, attention_mask,
                                     training)
            rows = rows + self._ffn(self.ffn_norm(rows), training)
        else:
            rows = self.attention_norm(
                rows + self._attn(rows, batch, seq, attention_mask, training))
            rows = self.ffn_norm(rows + self._ffn(rows, training))
        return ops.reshape(rows, (batch, seq, hidden))

    def call_cached(self, x, attention_mask, keys, values, index, write=None):
        """Inference with a key/value cache (`MultiHeadSelfAttention.call_cached`).

        x: the (batch, seq, hidden) new positions; returns their outputs and the updated
        `keys`, `values` (`write` as there). Dropout is off: this is the generation path.
        """
        batch, seq, hidden = ops.shape(x)[0], ops.shape(x)[1], x.shape[-1]
        rows = ops.reshape(x, (-1, hidden))
        if self.normalize_first:
            attended, keys, values = self.attention.call_cached(
                self.attention_norm(rows), batch, seq, attention_mask, keys, values, index, write)
            rows = rows + attended
            rows = rows + self.ffn_output(self.ffn_intermediate(self.ffn_norm(rows)))
        else:
            attended, keys, values = self.attention.call_cached(
                rows, batch, seq, attention_mask, keys, values, index, write)
            rows = self.attention_norm(rows + attended)
            rows = self.ffn_norm(rows + self.ffn_output(self.ffn_intermediate(rows)))
        return ops.reshape(rows, (batch, seq, hidden)), keys, values

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            intermediate_dim=self.intermediate_dim,
            activation=self.activation,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
            normalize_first=self.normalize_first,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config


def gelu_approximate(x):
    """GELU, tanh approximation: the form in OpenAI's GPT-1 code (`gelu` in
    finetune-transformer-lm)."""
    return keras.activations.gelu(x, approximate=True)


_ACTIVATIONS = {
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),  # erf form, BERT's code
    "gelu_approximate": gelu_approximate,
    "relu": keras.activations.relu,
}


def activation_function(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation={name!r} is not one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]
