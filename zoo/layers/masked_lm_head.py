"""BERT's masked-LM head: transform, then logits over the vocabulary on the tied token
embedding."""

import keras
from keras import ops

from zoo.layers.initializers import clone_initializer
from zoo.layers.transformer import activation_function


@keras.saving.register_keras_serializable(package="zoo")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head: dense, activation and LayerNorm, then logits over the vocabulary.

    The output projection is the token embedding matrix (BERT appendix A.1 and the released
    `cls/predictions` code: the decoder is tied to `word_embeddings`) plus a per-token output
    bias. Pass the backbone's `token_embedding` layer to tie it; the layer keeps only a
    reference, and `get_config` leaves it out, so the model owning both layers reconnects
    them. Without one (e.g. rebuilt alone by `from_config`) the head owns a
    (vocabulary_size, hidden) matrix of its own.

    Args:
        vocabulary_size: number of output tokens.
        activation: activation of the transform ("gelu" = exact erf form).
        layer_norm_epsilon: epsilon of the transform's LayerNorm.
        token_embedding: the `keras.layers.Embedding` whose matrix is the decoder, or None.
        kernel_initializer: initializer of the transform kernel (and of an own decoder).
    """

    def __init__(self, vocabulary_size, activation="gelu", layer_norm_epsilon=1e-12,
                 token_embedding=None, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if token_embedding is not None and token_embedding.input_dim != vocabulary_size:
            raise ValueError(
                f"{self.name}: vocabulary_size={vocabulary_size} but the tied token embedding "
                f"has {token_embedding.input_dim} rows"
            )
        self.vocabulary_size = vocabulary_size
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.token_embedding = token_embedding
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        hidden = input_shape[-1]
        self.transform_dense = keras.layers.Dense(
            hidden, activation=activation_function(self.activation),
            kernel_initializer=clone_initializer(self.kernel_initializer), dtype=self.dtype_policy,
            name="transform",
        )
        self.transform_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="transform_norm"
        )
        self.transform_dense.build(input_shape)
        self.transform_norm.build(input_shape)
        if self.token_embedding is None:
            self.decoder_embeddings = self.add_weight(
                name="decoder_embeddings", shape=(self.vocabulary_size, hidden),
                initializer=clone_initializer(self.kernel_initializer),
            )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocabulary_size,), initializer="zeros"
        )

    def call(self, x):  # x: (batch, seq, hidden)
        x = self.transform_norm(self.transform_dense(x))
        if self.token_embedding is not None:
            decoder = self.token_embedding.embeddings
        else:
            decoder = self.decoder_embeddings
        logits = ops.matmul(x, ops.transpose(ops.cast(decoder, x.dtype)))  # (batch, seq, vocab)
        return logits + ops.cast(self.output_bias, x.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.vocabulary_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size,
            activation=self.activation,
            layer_norm_epsilon=self.layer_norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
