"""zoo.export.int8's attention: the query, key and value projections as one int8 product."""

import numpy as np


def _attention_model(hidden=32, heads=4, seq=7):
    import keras

    from zoo.layers import MultiHeadSelfAttention

    x = keras.Input((seq, hidden))
    mask = keras.Input((1, 1, seq), dtype="bool")
    attention = MultiHeadSelfAttention(heads, name="attention")
    model = keras.Model([x, mask], attention(x, attention_mask=mask))
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.3, w.shape) for w in model.get_weights()])
    inputs = rng.normal(0, 1, (2, seq, hidden)).astype("float32")
    padding = np.ones((2, 1, 1, seq), bool)
    padding[1, ..., 4:] = False  # the second row's last 3 tokens are padding
    return model, attention, inputs, padding


def _quantized_products(function, *specs):
    import tensorflow as tf

    graph = tf.function(function).get_concrete_function(*specs).graph
    return [op for op in graph.get_operations() if op.type == "_QuantizedMatMul"]


def test_int8_attention_serves_query_key_and_value_as_one_product():
    """`serving_form` gives each MultiHeadSelfAttention one `_QuantizedMatMul` for its query,
    key and value (two with the output projection, where `dense_layers` alone traces four).
    The kernels side by side keep each column's int8 weights and scale, and the rows are
    quantized once either way, so the answers equal the three products' (float rounding
    apart), on the full pass and on `call_cached` (generation's path); both stay within int8
    error of float32, and the layer is as before after the block."""
    import tensorflow as tf

    from zoo.export import int8

    model, attention, x, mask = _attention_model()
    specs = (tf.TensorSpec([None, 7, 32]), tf.TensorSpec([None, 1, 1, 7], tf.bool))
    expected = model([x, mask]).numpy()
    rows = x.reshape(-1, 32)
    cache_mask = np.zeros((2, 1, 7, 9), bool)  # the new rows go to slots 1..7 of 9
    cache_mask[..., 1:8] = np.broadcast_to(mask, (2, 1, 7, 7))
    keys, values = np.zeros((2, 4, 8, 9), "float32"), np.zeros((2, 4, 9, 8), "float32")

    def cached():
        out, k, v = tf.function(attention.call_cached)(rows, 2, 7, cache_mask, keys, values, 1)
        return out.numpy(), k.numpy(), v.numpy()

    expected_cached = [t.numpy() for t in attention.call_cached(rows, 2, 7, cache_mask, keys,
                                                                values, 1)]
    with int8.serving_form(model) as weights:
        fused_products = _quantized_products(lambda a, b: model([a, b]), *specs)
        fused = tf.function(model)([x, mask]).numpy()
        fused_cached = cached()
    with int8.dense_layers(model):
        separate_products = _quantized_products(lambda a, b: model([a, b]), *specs)
        separate = tf.function(model)([x, mask]).numpy()
        separate_cached = cached()
    assert len(weights.heads) == 1 and len(weights.layers) == 1  # the output projection
    assert (len(fused_products), len(separate_products)) == (2, 4)
    np.testing.assert_allclose(fused, separate, atol=1e-5)
    for ours, theirs in zip(fused_cached, separate_cached):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    scale = np.abs(expected).max()
    for out, reference in ((fused, expected), (fused_cached[0], expected_cached[0])):
        error = np.abs(out - reference).max()
        assert 0 < error < 0.05 * scale, (error, scale)
    # The cache slots 1..7 hold the new keys and values, within int8 error; the rest stay 0.
    assert np.abs(fused_cached[1][..., 1:8] - expected_cached[1][..., 1:8]).max() < 0.05 * 3
    assert not fused_cached[1][..., [0, 8]].any() and not fused_cached[2][..., [0, 8], :].any()
    np.testing.assert_allclose(model([x, mask]).numpy(), expected)  # float32 again
    assert "heads" not in vars(attention)
