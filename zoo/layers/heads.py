"""Task heads on top of a backbone: BERT's masked-LM head and a dense classification head."""

import keras
from keras import ops

from zoo.layers.dropout import Dropout
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


@keras.saving.register_keras_serializable(package="zoo")
class ClassificationHead(keras.layers.Layer):
    """Dropout then a dense layer to `num_classes` logits, on a pooled (batch, hidden) vector.

    BERT's next-sentence head (`cls/seq_relationship`, 2 classes) and ViT's classifier
    (section 3.1: a single linear layer at fine-tuning time) are both this layer.

    Args:
        num_classes: number of output logits.
        dropout: dropout rate on the input (training only).
        kernel_initializer: initializer of the dense kernel.
    """

    def __init__(self, num_classes, dropout=0.0, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        # Per position on (batch, seq, hidden) inputs too (token tagging after a masked
        # BiLSTM): the padding mask passes through unchanged.
        self.supports_masking = True
        self.num_classes = num_classes
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        self.dropout_layer = Dropout(self.dropout, dtype=self.dtype_policy)
        self.dense = keras.layers.Dense(
            self.num_classes, kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy, name="dense",
        )
        self.dense.build(input_shape)

    def call(self, x, training=None):  # x: (batch, hidden)
        return self.dense(self.dropout_layer(x, training=training))  # (batch, num_classes)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_classes,)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout=self.dropout,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config


@keras.saving.register_keras_serializable(package="zoo")
class GatherPositions(keras.layers.Layer):
    """Hidden states at given positions: (batch, seq, hidden), (batch, k) -> (batch, k, hidden).

    BERT's masked-LM loss is computed only at the masked positions (`gather_indexes` in the
    released `run_pretraining.py`), so the vocabulary projection runs on k << seq vectors. A
    one-hot contraction rather than a gather keeps it one op on every backend.
    """

    def call(self, x, positions):
        one_hot = ops.one_hot(positions, ops.shape(x)[1], dtype=x.dtype)  # (batch, k, seq)
        return ops.einsum("bks,bsh->bkh", one_hot, x)



@keras.saving.register_keras_serializable(package="zoo")
class LastTokenPooling(keras.layers.Layer):
    """The hidden state of the last real token: (batch, seq, hidden) -> (batch, hidden).

    GPT-1 section 3.3: the classifier reads the final transformer activation of the extract
    token, which the input transformations put last (`zoo.data.packing`).
    """

    def call(self, x, padding_mask):
        last = ops.sum(ops.cast(padding_mask, "int32"), axis=1) - 1  # (batch,)
        one_hot = ops.one_hot(last, ops.shape(x)[1], dtype=x.dtype)  # (batch, seq)
        return ops.einsum("bs,bsh->bh", one_hot, x)



@keras.saving.register_keras_serializable(package="zoo")
class FoldSequences(keras.layers.Layer):
    """(batch, n, ...) -> (batch * n, ...): several sequences per example through one backbone.

    GPT-1's similarity (both orders) and multiple-choice inputs hold n sequences per example.
    """

    def call(self, x):
        return ops.reshape(x, (-1,) + tuple(ops.shape(x)[2:]))



@keras.saving.register_keras_serializable(package="zoo")
class UnfoldSequences(keras.layers.Layer):
    """(batch * n, ...) -> (batch, n, ...), the inverse of `FoldSequences`."""

    def __init__(self, num_sequences, **kwargs):
        super().__init__(**kwargs)
        self.num_sequences = num_sequences

    def call(self, x):
        return ops.reshape(x, (-1, self.num_sequences) + tuple(ops.shape(x)[1:]))


    def get_config(self):
        return {**super().get_config(), "num_sequences": self.num_sequences}
