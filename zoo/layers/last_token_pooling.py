"""The hidden state of the last real token (GPT-1's extract token)."""

import keras
from keras import ops


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
