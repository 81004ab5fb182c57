"""float32 serving with the Dense weights in the graph: the float32 export's default form.

A part of the export (`zoo.export.write_version` is its user, as of `zoo.export.int8`), so
TensorFlow ops only.

Why: TensorFlow's oneDNN matmul (the pip `tensorflow` on x86-64) reorders a weight into its
blocked layout at every call unless it knows the weight never changes. A weight read from a
variable may change, so it is reordered at every request: about 15 ms of a one-text request's
50 ms through BERT-base on 2 cores (docs/measurements.md). A weight that is a graph constant
feeding the matmul directly is marked constant by TensorFlow's graph rewrite
(`is_filter_const`), and oneDNN reorders it once, at the first call, and keeps it: what a
server otherwise gets only from `TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1` in its environment.

What a served Dense computes within `dense_constants`: K x + b then its activation, K and b
constants of the layer's values, on (rows, features): the layer's own function. The product
and the bias are one `_FusedMatMul` [BiasAdd], the op TensorFlow's graph optimizer makes of a
MatMul and its BiasAdd on variables, written here because it does not fuse them on a
constant weight in a loaded SavedModel of the whole model (measured: the weights then stay
unmarked and are reordered at every call). It is a stock TensorFlow op with a kernel in every
CPU build (a build without oneDNN runs the same graph, with no gain: the export stays
portable); the activation follows as its own ops, since that portable kernel fuses no GELU.
Each attention's query, key and value are one product of their kernels side by side
(`ConstantHeads`, as the int8 export's `QuantizedHeads`): one call where there were three.
Each layer's product is one `tf.function` that every signature calls, so the SavedModel
stores each weight once.

The cost: the constants are written into saved_model.pb instead of variables/ (no bigger in
all, each weight still stored once), and a GraphDef holds at most 2 GiB, so a model whose
Dense weights pass `LIMIT_BYTES` keeps them as variables (`dense_constants` says so).
"""

import contextlib

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_library

from zoo.layers import attention

# Dense weights past this many bytes stay variables: saved_model.pb (a protocol buffer) holds
# at most 2 GiB, and the rest of the graph and the tokenizer's vocabulary need room too.
LIMIT_BYTES = 1 << 30


class ConstantDense:
    """One `keras.layers.Dense`'s call with its weights as graph constants (made when a
    graph is traced: eagerly, the layer's own call)."""

    def __init__(self, layer, kernel=None, bias=None):
        # `kernel` and `bias`, when given, replace the layer's own (`ConstantHeads`).
        self.layer = layer
        kernel = layer.kernel.numpy() if kernel is None else kernel
        if bias is None:
            bias = np.zeros(kernel.shape[1]) if layer.bias is None else layer.bias.numpy()
        self.kernel = np.asarray(kernel, np.float32)
        self.bias = np.asarray(bias, np.float32)

        # One function a layer, whose graph holds the constants: every signature calls it,
        # so the SavedModel stores each weight once (a constant traced into each signature
        # would be stored once a signature).
        self.rows = tf.function(self._rows, autograph=False, input_signature=[
            tf.TensorSpec([None, self.kernel.shape[0]], tf.float32)])

    def _rows(self, rows):
        _, _, op, _ = op_def_library._apply_op_helper(
            "_FusedMatMul", name="ConstantDense", a=rows, b=tf.constant(self.kernel),
            args=[tf.constant(self.bias)], fused_ops=["BiasAdd"], transpose_a=False,
            transpose_b=False, epsilon=0.0001, leakyrelu_alpha=0.2)
        return self.layer.activation(op.outputs[0])

    def __call__(self, inputs, training=None):
        if tf.executing_eagerly():
            return type(self.layer).call(self.layer, inputs, training=training)
        x = tf.cast(inputs, tf.float32)
        width, units = self.kernel.shape
        rows = tf.reshape(x, [-1, width]) if x.shape.rank != 2 else x
        y = self.rows(rows)
        if x.shape.rank != 2:
            y = tf.reshape(y, tf.concat([tf.shape(x)[:-1], [units]], axis=0))
        return tf.cast(y, self.layer.compute_dtype)


class ConstantHeads:
    """A `MultiHeadSelfAttention`'s query, key and value projections as one product of
    constants (`ConstantDense` of the three kernels side by side), its `heads` in the
    export."""

    def __init__(self, attention):
        self.attention = attention
        parts = (attention.query_dense, attention.key_dense, attention.value_dense)
        self.product = ConstantDense(parts[0], np.concatenate(
            [part.kernel.numpy() for part in parts], axis=1), np.concatenate(
            [np.zeros(part.units) if part.bias is None else part.bias.numpy()
             for part in parts]))

    def __call__(self, rows, batch, seq):  # as MultiHeadSelfAttention.heads
        if tf.executing_eagerly():
            return type(self.attention).heads(self.attention, rows, batch, seq)
        n, d = self.attention.num_heads, self.attention.head_dim
        qkv = tf.transpose(tf.reshape(self.product(rows), (batch, seq, 3, n, d)),
                           (2, 0, 3, 1, 4))  # (3, batch, heads, seq, head_dim)
        return qkv[0], tf.transpose(qkv[1], (0, 1, 3, 2)), qkv[2]


def _eligible(layer):
    return (type(layer) is keras.layers.Dense and layer.built
            and layer.compute_dtype == "float32" and layer.kernel.dtype == "float32"
            and getattr(layer, "quantization_mode", None) is None
            and not getattr(layer, "lora_enabled", False))


@contextlib.contextmanager
def dense_constants(model, progress=print):
    """Within the block, every float32 `keras.layers.Dense` of `model` (nested layers too)
    traces with its kernel and bias as graph constants (`ConstantDense`); yields the number
    of layers so served (0 when their weights pass `LIMIT_BYTES`: then they stay variables,
    said through `progress`). The model is as before afterwards.

    Examples:
        >>> import numpy as np, keras, tensorflow as tf
        >>> model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, "gelu")])
        >>> x = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
        >>> with dense_constants(model) as count:
        ...     traced = tf.function(model)(x).numpy()
        >>> count, bool(np.abs(traced - model(x).numpy()).max() < 1e-6)
        (1, True)
    """
    layers = list(model._flatten_layers(include_self=False, recursive=True))
    dense = [layer for layer in layers if _eligible(layer)]
    size = sum(int(np.prod(layer.kernel.shape)) * 4 for layer in dense)
    if size > LIMIT_BYTES:
        progress(f"keeping the Dense weights as variables ({size / 2 ** 30:.1f} GiB: a "
                 "graph holds at most 2 GiB); a oneDNN server then wants "
                 "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1")
        dense = []
    attentions = [layer for layer in layers
                  if isinstance(layer, attention.MultiHeadSelfAttention) and layer.built
                  and all(any(part is d for d in dense) for part in (
                      layer.query_dense, layer.key_dense, layer.value_dense))]
    for layer in dense:
        object.__setattr__(layer, "call", ConstantDense(layer))
    for layer in attentions:
        object.__setattr__(layer, "heads", ConstantHeads(layer))
    try:
        yield len(dense)
    finally:
        for layer in dense:
            object.__delattr__(layer, "call")
        for layer in attentions:
            object.__delattr__(layer, "heads")


__all__ = ["LIMIT_BYTES", "ConstantDense", "ConstantHeads", "dense_constants"]
