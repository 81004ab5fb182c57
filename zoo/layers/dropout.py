"""`Dropout`: Keras' dropout, drawing its random numbers with ThreeFry when XLA compiles it on
TensorFlow.

The one TensorFlow-specific branch among the layers, and why: Keras' TensorFlow backend draws
dropout masks with `tf.random.stateless_uniform` on the default algorithm, which XLA compiles
on CPU as Philox; XLA's ThreeFry routine gives the same uniform distribution faster
(docs/measurements.md: time dropouts under `jit_compile=True` with each algorithm). Keras
offers no choice of algorithm, and TensorFlow's non-XLA kernels have no ThreeFry, so the choice
is made where the layer is traced: inside an XLA compilation
(`tf.__internal__.get_enclosing_xla_context()`, what TensorFlow itself checks) it is ThreeFry,
everywhere else it is `keras.layers.Dropout` unchanged (same masks for the same seed). JAX
already draws with ThreeFry; PyTorch keeps its own generator.

`RowDropout` is the same dropout on (batch * seq, hidden) rows, the layout the Transformer
blocks' own dropouts use: the embeddings' dropout.
"""

import keras
from keras import ops


def _traced_by_xla_on_tensorflow():
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return tf.__internal__.get_enclosing_xla_context() is not None


@keras.saving.register_keras_serializable(package="zoo")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout`, with ThreeFry random numbers under XLA on TensorFlow.

    The same function: each unit is zeroed with probability `rate` and the others are scaled
    by 1 / (1 - rate), from the layer's seed generator, advanced as Keras advances it. Only
    the algorithm behind the uniform numbers differs inside an XLA compilation on TensorFlow
    (see the module docstring), so there a seed gives other masks than Keras' layer gives.

    Its arguments are `keras.layers.Dropout`'s (`rate`, `noise_shape`, `seed`).

    Examples:
        >>> import numpy as np, keras, zoo
        >>> x = np.ones((2, 3), "float32")
        >>> ours = zoo.layers.Dropout(0.5, seed=1)(x, training=True)  # eager: Keras' masks
        >>> bool(np.array_equal(ours, keras.layers.Dropout(0.5, seed=1)(x, training=True)))
        True
    """

    def call(self, inputs, training=False):
        if not (training and 0 < self.rate < 1 and _traced_by_xla_on_tensorflow()):
            return super().call(inputs, training=training)
        import tensorflow as tf

        # As Keras' TensorFlow backend turns a seed generator's state into a stateless seed.
        seed = self.seed_generator.next()
        if seed.dtype != tf.int32:
            seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        shape = tf.shape(inputs)
        if self.noise_shape is not None:
            shape = tf.stack([shape[i] if d is None else d
                              for i, d in enumerate(self.noise_shape)])
        return tf.nn.experimental.stateless_dropout(
            inputs, rate=self.rate, noise_shape=shape, seed=seed, rng_alg="threefry")


@keras.saving.register_keras_serializable(package="zoo")
class RowDropout(Dropout):
    """`Dropout` on (batch * seq, hidden) rows: the embeddings' dropout.

    The same function as `keras.layers.Dropout` (outside XLA the same mask for the same seed:
    the random numbers are drawn in the same flat order; see `zoo.layers.Dropout`), applied
    to the row layout `TransformerBlock` uses for its own dropouts. Why: XLA on CPU compiles
    each shape of stateless random numbers into one routine, called by every dropout of that
    shape; a shape used only once is inlined into an elementwise loop, many times slower. The
    blocks' dropouts are all (batch * seq, hidden) or attention-shaped; a (batch, seq, hidden)
    embeddings dropout was the one left alone, and cost more than any block dropout of the
    same size (docs/measurements.md).

    Its arguments are `keras.layers.Dropout`'s (`rate`, `noise_shape`, `seed`).

    Examples:
        >>> import numpy as np, keras, zoo
        >>> x = np.ones((2, 3, 4), "float32")
        >>> ours = zoo.layers.RowDropout(0.5, seed=1)(x, training=True)
        >>> bool(np.array_equal(ours, keras.layers.Dropout(0.5, seed=1)(x, training=True)))
        True
    """

    def call(self, inputs, training=False):
        if self.noise_shape is not None:  # given for the input's own shape: leave it as it is
            return super().call(inputs, training=training)
        shape = ops.shape(inputs)
        rows = ops.reshape(inputs, (-1, inputs.shape[-1]))
        return ops.reshape(super().call(rows, training=training), shape)
