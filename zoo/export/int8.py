"""int8 serving: dynamic quantization of every Dense layer, for `zoo export --quantize int8`.

A part of the export (`zoo.export.write_version` is its one user), so it lives in its package.

What a quantized Dense computes (export code, so TensorFlow ops only):
- weights: int8, symmetric, one scale per output column, in [-63, 63] (7 bits, as ONNX
  Runtime's `reduce_range`): on CPUs without VNNI, oneDNN multiplies int8 pairs with
  `vpmaddubsw`, which adds two products in int16, where 255 * 127 * 2 saturates and
  255 * 63 * 2 does not (checked here on a CPU with VNNI only);
- activations: uint8, asymmetric, one range per call (the minimum and maximum of the batch's
  rows, widened to hold 0), as ONNX Runtime's dynamic quantization; the product is taken of
  the shifted rows and the shift (zero point times the kernel's column sums) joins the bias;
- the product, both scales, the bias and the activation (exact or tanh GELU, tanh, relu,
  sigmoid) in one oneDNN kernel: TensorFlow's `_QuantizedMatMul` with fused_ops
  [BiasAdd, <activation>, Dequantize] and float32 output, the op Intel's Neural Compressor
  writes into TensorFlow int8 graphs. Other activations run in float32 after it;
- LayerNorms (`serving_form`): oneDNN's LayerNorm kernel (`_MklLayerNorm`).
These are kernels of TensorFlow's oneDNN build (the pip `tensorflow` on x86-64, where they
run with TF_ENABLE_ONEDNN_OPTS=0 too): a TensorFlow or TF Serving built without oneDNN has no
kernel for them, so an int8 export is for x86-64 servers with oneDNN; the float32 export is the
portable one.

Why by hand: Keras' `model.quantize("int8")` runs its int8 matmul through ops TensorFlow
computes without int8 kernels, slower than float32 outside XLA; the public
`QuantizedMatMulWithBias` leaves the scales, the activation's zero point, the bias and the
activation to separate float32 ops, which give back most of the product's gain. The figures
and how to measure them: docs/measurements.md; the export's own speed: `zoo benchmark
serving` (docs/benchmarks.md).
"""

import contextlib

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_library

from zoo.layers import attention, transformer

WEIGHT_LEVELS = 63  # 7-bit weights: see the module docstring


def quantize_kernel(kernel):
    """(int8 kernel [in, out], float32 column scales [out]): kernel ~ q * scale.

    Examples:
        >>> import numpy as np
        >>> q, scale = quantize_kernel(np.array([[0.5, -2.0], [-1.0, 1.0]]))
        >>> q.tolist(), [round(float(s), 4) for s in scale]
        ([[31, -63], [-63, 31]], [0.0159, 0.0317])
    """
    kernel = np.asarray(kernel, np.float32)
    scale = np.abs(kernel).max(axis=0) / WEIGHT_LEVELS
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.round(kernel / scale), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
    return q, scale


def _fused_names():
    """keras activation function -> the name `_QuantizedMatMul` fuses it under."""
    return {keras.activations.linear: None, keras.activations.relu: "Relu",
            keras.activations.tanh: "Tanh", keras.activations.sigmoid: "Sigmoid",
            keras.activations.gelu: "GeluExact",  # its default, approximate=False
            transformer.activation_function("gelu"): "GeluExact",
            transformer.gelu_approximate: "GeluApproximate"}


def _quantized_matmul(a, width, kernel, kernel_low, kernel_high, bias, fused):
    """oneDNN's u8 x s8 product of `a` (quint8 rows, 255 steps over [0, width]) and `kernel`
    (qint8, column c in [kernel_low[c], kernel_high[c]]), + bias, then `fused`, in float32."""
    if tf.executing_eagerly():  # the op has no eager wrapper: run it as a one-op graph
        return tf.function(_quantized_matmul)(a, width, kernel, kernel_low, kernel_high, bias,
                                              fused)
    _, _, op, _ = op_def_library._apply_op_helper(
        "_QuantizedMatMul", name="QuantizedDense", device_inputs=[a, kernel, bias],
        host_inputs=[tf.constant(0.0), width, kernel_low, kernel_high],
        Tdevice_outputs=[tf.float32], Thost_outputs=[], T1=tf.quint8, T2=tf.qint8,
        Tbias=tf.float32, Tout=tf.float32, U=tf.float32,
        fused_ops=["BiasAdd", *([fused] if fused else []), "Dequantize"],
        transpose_a=False, transpose_b=False, input_quant_mode="SCALED",
        output_quant_mode="SCALED", is_weight_const=True, is_bias_const=False,
        leakyrelu_alpha=0.2)
    return op.outputs[0]


class QuantizedDense(tf.Module):
    """The int8 weights of one `keras.layers.Dense`, and the call that uses them.

    `kernel` and `bias` (float arrays), when given, replace the layer's own: the product of
    several layers on the same rows (`QuantizedHeads`), with `layer`'s activation and dtype.
    """

    def __init__(self, layer, kernel=None, bias=None, name=None):
        super().__init__(name=name or layer.name)
        kernel = layer.kernel.numpy() if kernel is None else kernel
        if bias is None and layer.bias is not None:
            bias = layer.bias.numpy()
        q, scale = quantize_kernel(kernel)
        self.layer = layer
        self.kernel = tf.Variable(q, trainable=False, name="kernel_int8")
        # The kernel's range per column for the op: 127 steps of the column's scale either
        # side of 0 (both stored: a negation per call costs serving time).
        self.kernel_high = tf.Variable(scale * 127.0, trainable=False, name="kernel_high")
        self.kernel_low = tf.Variable(-scale * 127.0, trainable=False, name="kernel_low")
        # sum_k kernel[k, c] (of the int8 kernel): the activations' zero point times these,
        # added to the bias, turns the product of shifted rows into that of the rows.
        self.sums = tf.Variable(q.sum(axis=0, dtype=np.int64) * scale, dtype=tf.float32,
                                trainable=False, name="kernel_column_sums")
        bias = np.zeros(q.shape[1], np.float32) if bias is None else np.asarray(bias)
        self.bias = tf.Variable(bias.astype(np.float32), trainable=False, name="bias")
        self.fused = _fused_names().get(layer.activation, False)  # False: not fusable

    def __call__(self, inputs, training=None):
        units = int(self.kernel.shape[1])
        x = tf.cast(inputs, tf.float32)
        shape = tf.shape(x)
        rows = tf.reshape(x, [-1, int(self.kernel.shape[0])])
        # uint8 over the batch's range (widened to hold 0), as ONNX Runtime's dynamic
        # quantization: rows ~ low + (high - low) / 255 * a. Against int8 over
        # [-max |x|, max |x|]: smaller errors, most after a GELU (whose outputs are >= -0.17),
        # and no slower (u8 x s8 is the instruction VNNI has; docs/measurements.md).
        low = tf.minimum(tf.reduce_min(rows), 0.0)
        high = tf.maximum(tf.reduce_max(rows), low + 1e-6)  # never an empty range
        a, low, high = tf.quantization.quantize(rows, low, high, tf.quint8, mode="MIN_FIRST")
        y = _quantized_matmul(a, high - low, tf.bitcast(self.kernel, tf.qint8),
                              self.kernel_low, self.kernel_high, self.bias + low * self.sums,
                              self.fused or None)
        if self.fused is False:
            y = self.layer.activation(y)
        y = tf.reshape(y, tf.concat([shape[:-1], [units]], axis=0))
        return tf.cast(y, self.layer.compute_dtype)


class QuantizedHeads(tf.Module):
    """A `MultiHeadSelfAttention`'s query, key and value projections as one int8 product.

    The three kernels side by side ([hidden, 3 * hidden]) are quantized column by column, so
    their int8 weights and scales are those of the three apart; one product and one transpose
    of the heads replace three each (docs/measurements.md has the gain).
    """

    def __init__(self, attention):
        super().__init__(name=attention.name + "_qkv")
        self.attention = attention
        parts = (attention.query_dense, attention.key_dense, attention.value_dense)
        biases = [np.zeros(part.units) if part.bias is None else part.bias.numpy()
                  for part in parts]
        self.product = QuantizedDense(
            parts[0], kernel=np.concatenate([part.kernel.numpy() for part in parts], axis=1),
            bias=np.concatenate(biases), name=attention.name + "_qkv")

    def __call__(self, rows, batch, seq):  # as MultiHeadSelfAttention.heads
        n, d = self.attention.num_heads, self.attention.head_dim
        qkv = tf.transpose(tf.reshape(self.product(rows), (batch, seq, 3, n, d)),
                           (2, 0, 3, 1, 4))  # (3, batch, heads, seq, head_dim)
        return qkv[0], tf.transpose(qkv[1], (0, 1, 3, 2)), qkv[2]


@contextlib.contextmanager
def dense_layers(model, skip=()):
    """Within the block, every `keras.layers.Dense` of `model` (nested models and layers
    too) but those in `skip` calls its int8 form; yields a tf.Module holding the int8
    weights, for the SavedModel to save instead of the float32 kernels. The model is as
    before afterwards.

    Examples:
        >>> import numpy as np, keras
        >>> init = keras.initializers.GlorotUniform(seed=0)  # largest difference over 200
        >>> model = keras.Sequential([keras.Input((8,)),  # seeds: 0.038
        ...                           keras.layers.Dense(4, kernel_initializer=init)])
        >>> x = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
        >>> with dense_layers(model) as weights:
        ...     quantized = model(x).numpy()
        >>> len(weights.layers), bool(np.abs(quantized - model(x).numpy()).max() < 0.05)
        (1, True)
    """

    dense = [layer for layer in model._flatten_layers(include_self=False, recursive=True)
             if type(layer) is keras.layers.Dense and not any(layer is s for s in skip)]
    holder = tf.Module(name="int8")
    holder.layers = [QuantizedDense(layer) for layer in dense]
    for layer, quantized in zip(dense, holder.layers):
        object.__setattr__(layer, "call", quantized)
    try:
        yield holder
    finally:
        for layer in dense:
            object.__delattr__(layer, "call")


def _onednn_layer_norm(layer):
    """`layer`'s call as oneDNN's LayerNorm kernel (TensorFlow's `_MklLayerNorm`, one op where
    Keras' form is ten), on rows; other axes, or RMS scaling, keep Keras' call."""
    keras_call = layer.call
    axes = [layer.axis] if isinstance(layer.axis, int) else list(layer.axis)

    def call(inputs, *args, **kwargs):
        rank = inputs.shape.rank
        if layer.rms_scaling or len(axes) != 1 or axes[0] not in (-1, rank - 1):
            return keras_call(inputs, *args, **kwargs)
        x = tf.cast(inputs, tf.float32)
        width = int(x.shape[-1])
        scale = tf.ones([width]) if layer.gamma is None else tf.cast(layer.gamma, tf.float32)
        offset = tf.zeros([width]) if layer.beta is None else tf.cast(layer.beta, tf.float32)
        rows = _layer_norm(tf.reshape(x, [-1, width]), scale, offset, float(layer.epsilon))
        return tf.cast(tf.reshape(rows, tf.shape(x)), layer.compute_dtype)

    return call


def _layer_norm(rows, scale, offset, epsilon):
    if tf.executing_eagerly():  # as _quantized_matmul
        return tf.function(_layer_norm)(rows, scale, offset, epsilon)
    _, _, op, _ = op_def_library._apply_op_helper(
        "_MklLayerNorm", name="LayerNorm", x=rows, scale=scale, offset=offset, epsilon=epsilon)
    return op.outputs[0]


@contextlib.contextmanager
def serving_form(model):
    """What `zoo export --quantize int8` serves: within the block, every Dense layer of `model`
    in int8 (`dense_layers`), each `MultiHeadSelfAttention`'s query, key and value as one
    int8 product (`QuantizedHeads`), and every LayerNormalization over the last axis in
    oneDNN's LayerNorm kernel (faster than TensorFlow's portable ops, docs/measurements.md;
    the int8 export needs TensorFlow's oneDNN kernels anyway; the float32 export keeps
    portable ops). Yields `dense_layers`' module, with `heads` (the `QuantizedHeads`) and
    `norms`: the number of LayerNorms served so.

    Examples:
        >>> import numpy as np, keras, tensorflow as tf
        >>> init = keras.initializers.GlorotUniform(seed=0)  # largest difference over 60
        >>> model = keras.Sequential([keras.Input((8,)),  # seeds: 0.037
        ...                           keras.layers.Dense(16, kernel_initializer=init),
        ...                           keras.layers.LayerNormalization()])
        >>> x = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
        >>> with serving_form(model) as weights:
        ...     served, traced = model(x).numpy(), tf.function(model)(x).numpy()
        >>> weights.norms, bool(np.abs(served - model(x).numpy()).max() < 0.05)
        (1, True)
        >>> bool(np.abs(served - traced).max() < 1e-6)
        True
    """

    layers = list(model._flatten_layers(include_self=False, recursive=True))
    norms = [layer for layer in layers if type(layer) is keras.layers.LayerNormalization]
    attentions = [layer for layer in layers
                  if isinstance(layer, attention.MultiHeadSelfAttention) and layer.built]
    fused = [part for layer in attentions
             for part in (layer.query_dense, layer.key_dense, layer.value_dense)]
    with dense_layers(model, skip=fused) as holder:
        holder.heads = [QuantizedHeads(layer) for layer in attentions]
        for layer, heads in zip(attentions, holder.heads):
            object.__setattr__(layer, "heads", heads)
        for layer in norms:
            object.__setattr__(layer, "call", _onednn_layer_norm(layer))
        holder.norms = len(norms)
        try:
            yield holder
        finally:
            for layer in norms:
                object.__delattr__(layer, "call")
            for layer in attentions:
                object.__delattr__(layer, "heads")
