"""Several sequences per example through one backbone: `FoldSequences` folds them into the
batch, `UnfoldSequences` unfolds the result."""

import keras
from keras import ops


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
