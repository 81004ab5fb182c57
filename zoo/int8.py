"""int8 serving: dynamic quantization of every Dense layer, for `zoo export --quantize int8`.

What a quantized Dense computes, in TensorFlow ops (export code, so TF only):
- weights: int8, symmetric, one scale per output column, in [-63, 63] (7 bits, as ONNX
  Runtime's `reduce_range`): on CPUs without VNNI, u8 x s8 kernels add pairs of products in
  int16 (`vpmaddubsw`), where 255 * 127 * 2 saturates and 255 * 63 * 2 does not (checked
  here on a CPU with VNNI only);
- activations: uint8, asymmetric, one range per call (the minimum and maximum of the batch's
  rows, widened to hold 0), as ONNX Runtime's dynamic quantization;
- the product: oneDNN's u8 x s8 -> s32 matrix multiply (`QuantizedMatMulWithBias` with a
  zero int32 bias returns the plain integer product), then in float32 the scales, the
  activation zero point (lo * scale * column sums of the weights), the bias and the activation.

Why by hand: Keras' `model.quantize("int8")` runs its int8 matmul through ops TensorFlow
computes without int8 kernels: measured 3.0x slower than float32 on a 768 -> 3072 -> 768
block (1,024 rows, graph mode; 1.25x faster only under XLA), while oneDNN's u8 x s8 kernel took
16 ms against 42 ms for the float32 product of the same shape (AMD EPYC with avx512_vnni).
"""

import contextlib

import numpy as np
import tensorflow as tf

WEIGHT_LEVELS = 63  # 7-bit weights: see the module docstring


def quantize_kernel(kernel):
    """(int8 kernel [in, out], float32 column scales [out], float32 column sums [out]).

    Example:
        >>> import numpy as np
        >>> q, scale, sums = quantize_kernel(np.array([[0.5, -2.0], [-1.0, 1.0]]))
        >>> q.tolist(), [round(float(s), 4) for s in scale], sums.tolist()
        ([[31, -63], [-63, 31]], [0.0159, 0.0317], [-32.0, -32.0])
    """
    kernel = np.asarray(kernel, np.float32)
    scale = np.abs(kernel).max(axis=0) / WEIGHT_LEVELS
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.round(kernel / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
    return q, scale, q.sum(axis=0, dtype=np.int64).astype(np.float32)


class QuantizedDense(tf.Module):
    """The int8 weights of one `keras.layers.Dense`, and the call that uses them."""

    def __init__(self, layer):
        super().__init__(name=layer.name)
        q, scale, sums = quantize_kernel(layer.kernel.numpy())
        self.layer = layer
        self.kernel = tf.Variable(q, trainable=False, name="kernel_int8")
        self.scale = tf.Variable(scale, trainable=False, name="kernel_scale")
        self.sums = tf.Variable(sums, trainable=False, name="kernel_column_sums")
        self.bias = (None if layer.bias is None else
                     tf.Variable(tf.cast(layer.bias, tf.float32), trainable=False, name="bias"))

    def __call__(self, inputs, training=None):
        layer = self.layer
        units = int(self.kernel.shape[1])
        x = tf.cast(inputs, tf.float32)
        shape = tf.shape(x)
        rows = tf.reshape(x, [-1, int(self.kernel.shape[0])])
        lo = tf.minimum(tf.reduce_min(rows), 0.0)
        hi = tf.maximum(tf.reduce_max(rows), lo + 1e-6)  # a range that holds 0, never empty
        a, lo, hi = tf.quantization.quantize(rows, lo, hi, tf.quint8, mode="MIN_FIRST")
        product, _, _ = tf.raw_ops.QuantizedMatMulWithBias(
            a=a, b=tf.bitcast(self.kernel, tf.qint8), bias=tf.zeros([units], tf.qint32),
            min_a=lo, max_a=hi, min_b=-1.0, max_b=1.0, Toutput=tf.qint32,
            input_quant_mode="MIN_FIRST")
        # rows ~ lo + step * a and kernel ~ scale * q, so rows @ kernel ~
        # step * scale * (a @ q) + lo * scale * column_sums(q).
        step = (hi - lo) / 255.0
        offset = lo * self.scale * self.sums  # [units]: one pass over the rows, not two
        if self.bias is not None:
            offset = offset + self.bias
        y = tf.cast(tf.bitcast(product, tf.int32), tf.float32) * (step * self.scale) + offset
        if layer.activation is not None:
            y = layer.activation(y)
        y = tf.reshape(y, tf.concat([shape[:-1], [units]], axis=0))
        return tf.cast(y, layer.compute_dtype)


@contextlib.contextmanager
def dense_layers(model):
    """Within the block, every `keras.layers.Dense` of `model` (nested models and layers
    too) calls its int8 form; yields a tf.Module holding the int8 weights, for the
    SavedModel to save instead of the float32 kernels. The model is as before afterwards.

    Example:
        >>> import numpy as np, keras
        >>> model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
        >>> x = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
        >>> with dense_layers(model) as weights:
        ...     quantized = model(x).numpy()
        >>> len(weights.layers), bool(np.abs(quantized - model(x).numpy()).max() < 0.05)
        (1, True)
    """
    import keras

    dense = [layer for layer in model._flatten_layers(include_self=False, recursive=True)
             if type(layer) is keras.layers.Dense]
    holder = tf.Module(name="int8")
    holder.layers = [QuantizedDense(layer) for layer in dense]
    for layer, quantized in zip(dense, holder.layers):
        object.__setattr__(layer, "call", quantized)
    try:
        yield holder
    finally:
        for layer in dense:
            object.__delattr__(layer, "call")
