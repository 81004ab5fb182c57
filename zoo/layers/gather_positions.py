"""Hidden states at given positions (BERT's masked-LM loss reads only the masked ones)."""

import keras
from keras import ops


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
