"""The shared harness applied to every backbone family (BERT, GPT-1, GPT-1 Table 5's LSTM, ViT),
with tiny configs."""

import keras
import numpy as np
import pytest

import zoo
from tests.harness import BACKENDS, assert_outputs_close, copy_weights, run_in_backend, to_numpy

TINY = {
    "bert": (zoo.models.BertBackbone, dict(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=24,
        max_sequence_length=32, num_segments=3)),
    "gpt": (zoo.models.GPTBackbone, dict(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=24,
        max_sequence_length=32)),
    "lstm": (zoo.models.LSTMBackbone, dict(
        vocabulary_size=50, num_layers=2, hidden_dim=16, max_sequence_length=32)),
    "vit": (zoo.models.ViTBackbone, dict(
        image_size=16, patch_size=4, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=24)),
    "vit_no_pooler": (zoo.models.ViTBackbone, dict(
        image_size=16, patch_size=4, num_layers=2, num_heads=2, hidden_dim=16, pooler=False)),
}
FAMILIES = list(TINY)
TEXT = ["bert", "gpt", "lstm"]


def build(family, seed=0, **overrides):
    """A tiny model whose every weight (biases and LayerNorms too) is random, so tests see them."""
    cls, config = TINY[family]
    keras.utils.set_random_seed(seed)
    model = cls(**{**config, **overrides})
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(keras.ops.convert_to_numpy(w) + rng.normal(0, 0.05, w.shape).astype("float32"))
    return model


def inputs_for(family, batch=2, seq=7, seed=1):
    rng = np.random.default_rng(seed)
    if family.startswith("vit"):
        return {"images": rng.standard_normal((batch, 16, 16, 3)).astype("float32")}
    ids = rng.integers(1, 50, (batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, seq - 2:] = 0  # second example is padded
    ids[mask == 0] = 0
    inputs = {"token_ids": ids, "padding_mask": mask}
    if family == "bert":
        inputs["segment_ids"] = (np.arange(seq)[None] >= seq // 2).astype("int32").repeat(batch, 0)
    return inputs


def run(model, inputs):
    return to_numpy(model(inputs, training=False))


@pytest.mark.parametrize("family", FAMILIES)
def test_build_and_output_shapes(family):
    model = build(family)
    out = run(model, inputs_for(family))
    hidden = TINY[family][1]["hidden_dim"]
    seq = 1 + 16 if family.startswith("vit") else 7
    assert out["sequence_output"].shape == (2, seq, hidden)
    if family not in ("gpt", "lstm"):
        assert out["pooled_output"].shape == (2, hidden)
    assert all(np.isfinite(v).all() for v in out.values())


@pytest.mark.parametrize("family", ["bert", "gpt", "vit"])
def test_random_initialization_gives_every_weight_its_own_values(family):
    """A Keras 3 initializer without a seed fixes its seed when created: one instance used
    for several weights gave the query, key, value and output kernels of every layer the same
    values (found from grappler merging them in a frozen graph). Each weight now draws its own
    (zoo.layers.clone_initializer), and the same global seed still gives the same model."""
    cls, config = TINY[family]
    keras.utils.set_random_seed(3)
    model = cls(**config)
    heads = (zoo.models.BertForPreTraining(model) if family == "bert" else
             zoo.models.GPTClassifier(model, 2, lm=True) if family == "gpt" else
             zoo.models.ViTClassifier(model, 3))
    random = [w for w in heads.weights
              if np.std(keras.ops.convert_to_numpy(w)) > 0 and "norm" not in w.path]
    assert len(random) >= 10
    values = [np.ravel(keras.ops.convert_to_numpy(w)) for w in random]
    for i, a in enumerate(values):
        for j in range(i + 1, len(values)):
            n = min(len(a), len(values[j]), 64)
            assert not np.array_equal(a[:n], values[j][:n]), (random[i].path, random[j].path)
    keras.utils.set_random_seed(3)
    again = cls(**config)
    for w, v in zip(model.weights, again.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(w),
                                      keras.ops.convert_to_numpy(v))


@pytest.mark.parametrize("family", FAMILIES)
def test_config_round_trip(family):
    model = build(family)
    config = model.get_config()
    clone = type(model).from_config(config)
    assert clone.get_config() == config
    copy_weights(model, clone)
    x = inputs_for(family)
    assert_outputs_close(run(clone, x), run(model, x), atol=0, where=family)


@pytest.mark.parametrize("family", FAMILIES)
def test_keras_file_round_trip(family, tmp_path):
    model = build(family)
    path = str(tmp_path / f"{family}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
    x = inputs_for(family)
    assert_outputs_close(run(loaded, x), run(model, x), atol=0, where=family)


# The renamed head models: former name -> (class, backbone family). Under their former names
# all four lived in the module zoo.models.head_models.pretraining.
RENAMED = {
    "BertPretrainingModel": (zoo.models.BertForPreTraining, "bert"),
    "BertPretrainer": (zoo.models.BertMaskedLM, "bert"),
    "GPTLanguageModel": (zoo.models.GPTLMHeadModel, "gpt"),
    "CausalLanguageModel": (zoo.models.CausalLM, "gpt"),
}


@pytest.mark.parametrize("old_name", list(RENAMED))
def test_a_keras_file_saved_under_a_former_name_loads(old_name, tmp_path):
    """A .keras file that names its model "zoo>OLD" (as the code before the rename saved it)
    loads as the renamed class, with the same outputs; the old Python name is the new class."""
    import json
    import zipfile

    cls, family = RENAMED[old_name]
    assert getattr(zoo.models, old_name) is cls
    model = cls(build(family))
    model.save(tmp_path / "new.keras")
    old = tmp_path / "old.keras"
    with zipfile.ZipFile(tmp_path / "new.keras") as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                assert config["registered_name"] == f"zoo>{cls.__name__}"
                config.update(registered_name=f"zoo>{old_name}", class_name=old_name,
                              module="zoo.models.head_models.pretraining")
                data = json.dumps(config)
            target.writestr(item, data)
    loaded = keras.saving.load_model(old)
    assert type(loaded) is cls
    x = inputs_for(family)
    if cls is zoo.models.BertMaskedLM:
        x["mask_positions"] = np.array([[1, 3], [0, 2]], "int32")
    assert_outputs_close(run(loaded, x), run(model, x), atol=0, where=old_name)


@pytest.mark.parametrize("family", TEXT)
@pytest.mark.parametrize("seq", [1, 5, 32])
def test_variable_sequence_length(family, seq):
    model = build(family)
    out = run(model, inputs_for(family, seq=seq))
    assert out["sequence_output"].shape == (2, seq, 16)


@pytest.mark.parametrize("family", TEXT)
def test_padding_invariance(family):
    """Appending padding leaves the outputs of real tokens (and BERT's pooled output) unchanged."""
    model = build(family)
    short = inputs_for(family, seq=6)
    for key in short:
        short[key][1] = short[key][0]  # both rows real, no padding
    short["padding_mask"][:] = 1
    long = {k: np.concatenate([v, np.zeros((2, 9), v.dtype)], axis=1) for k, v in short.items()}
    long["token_ids"][:, 6:] = 7  # whatever the pad positions hold must not matter
    a, b = run(model, short), run(model, long)
    np.testing.assert_allclose(b["sequence_output"][:, :6], a["sequence_output"], atol=1e-5)
    if family == "bert":
        np.testing.assert_allclose(b["pooled_output"], a["pooled_output"], atol=1e-5)


@pytest.mark.parametrize("family", ["gpt", "lstm"])
def test_causal_invariance_gpt(family):
    """Changing token t leaves GPT-1's outputs at positions < t unchanged, and changes t; the
    same for the LSTM of GPT-1 Table 5."""
    model = build(family)
    x = inputs_for(family, seq=10)
    x["padding_mask"][:] = 1
    changed = {k: v.copy() for k, v in x.items()}
    changed["token_ids"][:, 6] = (changed["token_ids"][:, 6] % 49) + 1
    a, b = run(model, x)["sequence_output"], run(model, changed)["sequence_output"]
    np.testing.assert_allclose(b[:, :6], a[:, :6], atol=1e-6)
    assert np.abs(b[:, 6] - a[:, 6]).max() > 1e-3


def test_bert_is_bidirectional():
    """Counterpart of the causal test: in BERT a later token does change earlier outputs."""
    model = build("bert")
    x = inputs_for("bert", seq=10)
    x["padding_mask"][:] = 1
    changed = {k: v.copy() for k, v in x.items()}
    changed["token_ids"][:, 6] = (changed["token_ids"][:, 6] % 49) + 1
    a, b = run(model, x)["sequence_output"], run(model, changed)["sequence_output"]
    assert np.abs(b[:, 0] - a[:, 0]).max() > 1e-3


def test_a_left_to_right_bert_pools_its_last_real_token():
    """BERT Table 5 "LTR & No NSP": under the causal mask [CLS] sees only itself, so the
    pooled vector is the last real token's state, which changes with any earlier token."""
    model = build("bert", causal=True, pooler=False)
    x = inputs_for("bert", seq=10)
    x["padding_mask"][:] = 0
    x["padding_mask"][0, :7], x["padding_mask"][1, :4] = 1, 1
    out = run(model, x)
    np.testing.assert_allclose(out["pooled_output"], out["sequence_output"][[0, 1], [6, 3]],
                               atol=1e-6)
    changed = {k: v.copy() for k, v in x.items()}
    changed["token_ids"][0, 1] = (changed["token_ids"][0, 1] % 49) + 1
    pooled = run(model, changed)["pooled_output"]
    assert np.abs(pooled[0] - out["pooled_output"][0]).max() > 1e-3
    np.testing.assert_allclose(pooled[1], out["pooled_output"][1], atol=1e-6)


def test_a_bilstm_under_a_left_to_right_bert_reads_the_right_context_and_no_padding(tmp_path):
    """BERT Table 5 "+ BiLSTM" (`lstm_units`): under the causal mask position 0's span logit
    sees no later token; through the BiLSTM it does. Padded positions change nothing, and the
    heads come back from a .keras file with the same outputs."""
    x = inputs_for("bert", seq=10)  # the second example's last two positions are padding
    later = {k: v.copy() for k, v in x.items()}
    later["token_ids"][:, 6] = (later["token_ids"][:, 6] % 49) + 1
    padded = {k: v.copy() for k, v in x.items()}
    padded["token_ids"][1, 8:] = 7
    for lstm_units, right_context in ((None, False), (8, True)):
        model = zoo.models.BertSpanQA(build("bert", causal=True, pooler=False),
                                      lstm_units=lstm_units)
        start = run(model, x)["start_positions"]
        moved = np.abs(run(model, later)["start_positions"][:, 0] - start[:, 0]).max()
        assert (moved > 1e-4) == right_context, (lstm_units, moved)
        np.testing.assert_allclose(run(model, padded)["start_positions"][1, :8], start[1, :8],
                                   atol=1e-6)
    classifier = zoo.models.BertClassifier(build("bert", causal=True, pooler=False), 3,
                                           lstm_units=8)
    logits = run(classifier, x)["logits"]
    assert np.abs(run(classifier, later)["logits"] - logits).max() > 1e-4
    np.testing.assert_allclose(run(classifier, padded)["logits"][1], logits[1], atol=1e-6)
    for model, key in ((model, "start_positions"), (classifier, "logits")):
        model.save(tmp_path / "head.keras")
        loaded = keras.saving.load_model(tmp_path / "head.keras")
        assert loaded.lstm_units == 8 and loaded.bilstm is not None
        np.testing.assert_allclose(run(loaded, x)[key], run(model, x)[key], atol=1e-6)


def test_bert_hidden_states():
    model = build("bert", return_hidden_states=True)
    out = run(model, inputs_for("bert"))
    assert out["hidden_states"].shape == (2, 3, 7, 16)  # embeddings + 2 layers
    np.testing.assert_array_equal(out["hidden_states"][:, -1], out["sequence_output"])


@pytest.mark.parametrize("family", FAMILIES)
def test_mixed_precision_bfloat16(family):
    reference = build(family)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = build(family)
    finally:
        keras.config.set_dtype_policy(previous)
    copy_weights(reference, model)
    x = inputs_for(family)
    out = run(model, x)
    assert model.compute_dtype == "bfloat16" and model.weights[0].dtype == "float32"
    assert all(np.isfinite(v).all() for v in out.values())
    # bfloat16 keeps ~3 significant digits: outputs of LayerNorm-scale stay within a few 1e-2.
    assert_outputs_close(out, run(reference, x), atol=0.1, where=f"{family} bf16 vs fp32")


# The checkpoint heads: every kind of weight-holding layer the families use (dense, embedding
# and tied decoder, patch convolution and class token, LayerNorm, task-head dense).
CHECKPOINT_MODELS = {
    "bert": zoo.models.BertForPreTraining,
    "gpt": zoo.models.GPTLMHeadModel,
    "lstm": zoo.models.GPTLMHeadModel,
    "vit": lambda backbone: zoo.models.ViTClassifier(backbone, num_classes=5),
}


@pytest.mark.parametrize("family", list(CHECKPOINT_MODELS))
def test_bfloat16_weights_compute_mixed_bfloat16_bit_for_bit(family):
    """`export.with_bfloat16_weights` gives the bits of the model built under mixed_bfloat16.

    The reference is built as a run trained under mixed_bfloat16 builds it (global policy,
    float32 variables) with the same weights. Rounding a weight to bfloat16 once, at load, is
    the rounding mixed_bfloat16 does on every call, so eager, graph and XLA outputs are equal
    bit for bit; storing a LayerNorm in bfloat16 would change them.
    """
    import tensorflow as tf

    from zoo import export

    wrap = CHECKPOINT_MODELS[family]
    model = wrap(build(family))
    rng = np.random.default_rng(2)
    for w in model.weights:  # the heads too (ViT's classifier starts at zero)
        w.assign(keras.ops.convert_to_numpy(w) + rng.normal(0, 0.05, w.shape).astype("float32"))
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        reference = wrap(build(family, seed=1))
    finally:
        keras.config.set_dtype_policy(previous)
    copy_weights(model, reference)
    served = export.with_bfloat16_weights(model)

    assert {w.dtype for w in reference.weights} == {"float32"}
    dtypes = {w.path: w.dtype for w in served.weights}
    assert [w.path for w in model.weights] == list(dtypes)
    float32 = {path.rsplit("/", 1)[-1] for path, dtype in dtypes.items() if dtype == "float32"
               and "/lstm_cell/" not in path}  # an LSTM's weights stay float32 (read per step)
    assert float32 <= {"gamma", "beta", "output_bias"}, dtypes  # LayerNorm, MLM output bias
    assert all(dtypes[path] == "bfloat16" for path in dtypes
               if path.endswith(("/kernel", "/embeddings", "/class_token"))
               and "/lstm_cell/" not in path)
    x = inputs_for(family)
    fp32 = run(model, x)
    for mode in ("eager", "graph", "xla"):
        if mode == "eager":
            expected, actual = run(reference, x), run(served, x)
        else:
            def call(m):
                return to_numpy(tf.function(lambda x: m(x, training=False),
                                            jit_compile=mode == "xla")(x))
            expected, actual = call(reference), call(served)
        assert set(actual) == set(expected) == set(fp32)
        for key in expected:
            assert actual[key].dtype == expected[key].dtype == "bfloat16"
            np.testing.assert_array_equal(actual[key], expected[key], err_msg=f"{mode} {key}")
            # and not the float32 model: the comparison can fail
            assert np.abs(actual[key].astype("float32") - fp32[key]).max() > 0, key


def test_bfloat16_weights_rebuild_the_bilstm_heads():
    """`export.with_bfloat16_weights` rebuilds a model whose BiLSTM's inner layers Keras names
    anew when one is built again in the process (`forward_lstm` -> `forward_lstm_3`): the
    BiLSTM heads (BERT Table 5 "+ BiLSTM", feature-based NER) serve the bits they compute
    under mixed_bfloat16."""
    from zoo import export

    heads = {
        "classifier": lambda: zoo.models.BertClassifier(
            build("bert", causal=True, pooler=False), 3, lstm_units=8),
        "span_qa": lambda: zoo.models.BertSpanQA(build("bert", pooler=False), lstm_units=8),
        "feature_tagger": lambda: zoo.models.BertFeatureTagger(
            build("bert", return_hidden_states=True), 3, "last", lstm_units=8),
    }
    x = inputs_for("bert")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        for name, make in heads.items():
            make()  # another of its kind built first: the rebuilt one's inner names move on
            model = make()
            served = export.with_bfloat16_weights(model)
            expected, actual = run(model, x), run(served, x)
            for key in expected:
                np.testing.assert_array_equal(actual[key], expected[key], err_msg=name)
    finally:
        keras.config.set_dtype_policy(previous)


def test_attention_is_keras_dot_product_attention():
    """Our attention (matmuls, additive mask) computes `keras.ops.dot_product_attention`'s
    function on the same projections, with padding and causal masks, in inference and in
    training; dropout on the probabilities acts in training only."""
    from keras import ops

    layer = zoo.layers.MultiHeadSelfAttention(num_heads=2, dropout=0.5)
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
    padding = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    layer(x)  # build
    heads = [ops.reshape(dense(x), (2, 5, 2, 4))
             for dense in (layer.query_dense, layer.key_dense, layer.value_dense)]
    for causal in (False, True):
        mask = zoo.layers.AttentionMask(causal=causal)(padding)
        context = ops.dot_product_attention(*heads, mask=mask)
        expected = layer.output_dense(ops.reshape(context, (2, 5, 8)))
        np.testing.assert_allclose(layer(x, attention_mask=mask, training=False), expected,
                                   atol=1e-6, err_msg=f"causal={causal}")
        layer.dropout_layer.rate = 0.0  # the training path, dropout a no-op
        np.testing.assert_allclose(layer(x, attention_mask=mask, training=True), expected,
                                   atol=1e-6, err_msg=f"causal={causal}, training")
        layer.dropout_layer.rate = 0.5
        dropped = np.asarray(layer(x, attention_mask=mask, training=True))
        assert np.max(np.abs(dropped - np.asarray(expected))) > 1e-3, "no dropout in training"


def test_row_dropout_is_keras_dropout():
    """RowDropout (the embeddings' dropout) draws the same mask as keras.layers.Dropout."""
    x = np.random.default_rng(0).standard_normal((3, 5, 16)).astype("float32")
    for seed in (1, 7):
        expected = keras.layers.Dropout(0.3, seed=seed)(x, training=True)
        got = zoo.layers.RowDropout(0.3, seed=seed)(x, training=True)
        np.testing.assert_array_equal(to_numpy({"x": got})["x"], to_numpy({"x": expected})["x"])
    assert 0 < np.mean(to_numpy({"x": got})["x"] == 0) < 0.6
    np.testing.assert_array_equal(zoo.layers.RowDropout(0.3)(x, training=False), x)


def test_dropout_under_xla_draws_threefry_with_keras_rate_and_scale():
    """zoo.layers.Dropout: Keras' masks outside XLA; inside an XLA compilation on TensorFlow
    its random numbers come from ThreeFry (the compiled HLO says which), with the rate and
    the 1 / (1 - rate) scale of Keras' dropout, one new mask per call, and noise_shape."""
    import tensorflow as tf  # a runtime dependency: the test runs on every install
    x = np.ones((64, 256), "float32")
    for seed in (1, 7):  # graph (no XLA): Keras' layer, mask for mask
        ours, theirs = zoo.layers.Dropout(0.3, seed=seed), keras.layers.Dropout(0.3, seed=seed)
        np.testing.assert_array_equal(
            tf.function(lambda v: ours(v, training=True))(x),
            tf.function(lambda v: theirs(v, training=True))(x))

    def compiled(layer):
        return tf.function(lambda v: layer(v, training=True), jit_compile=True)

    layer, keras_layer = zoo.layers.Dropout(0.3, seed=3), keras.layers.Dropout(0.3, seed=3)
    step, keras_step = compiled(layer), compiled(keras_layer)

    def algorithms(compiled_step):  # of the rng-bit-generator ops in the HLO
        hlo = compiled_step.experimental_get_compiler_ir(x)(stage="hlo")
        return {line.split("algorithm=")[1].split(",")[0] for line in hlo.splitlines()
                if "rng-bit-generator(" in line}

    assert algorithms(step) == {"rng_three_fry"}
    assert algorithms(keras_step) == {"rng_philox"}
    first, second = np.asarray(step(x)), np.asarray(step(x))
    assert set(np.unique(first)) == {0.0, np.float32(1 / 0.7)}
    kept = np.mean(first != 0)  # 16,384 draws: the standard error of the rate is 0.0036
    assert abs(kept - 0.7) < 0.02, kept
    assert not np.array_equal(first, second)  # the seed generator advanced
    assert not np.array_equal(first, np.asarray(keras_step(x)))
    again = compiled(zoo.layers.Dropout(0.3, seed=3))
    np.testing.assert_array_equal(np.asarray(again(x)), first)  # same seed, same masks
    rows = np.asarray(compiled(zoo.layers.Dropout(0.5, noise_shape=(64, 1), seed=5))(x))
    assert all(len(np.unique(row)) == 1 for row in rows) and 0 < np.mean(rows == 0) < 1
    bf16 = compiled(zoo.layers.Dropout(0.3, seed=3, dtype="mixed_bfloat16"))
    assert 0.6 < np.mean(np.asarray(tf.cast(bf16(x), "float32")) != 0) < 0.8


def test_vit_other_resolution():
    model = build("vit")
    same = model.with_image_size(16)
    x = inputs_for("vit")
    assert_outputs_close(run(same, x), run(model, x), atol=0)
    bigger = model.with_image_size(32)
    out = run(bigger, {"images": np.zeros((1, 32, 32, 3), "float32")})
    assert out["sequence_output"].shape == (1, 1 + 64, 16)
    old = keras.ops.convert_to_numpy(model.patch_embedding.position_embedding)
    new = keras.ops.convert_to_numpy(bigger.patch_embedding.position_embedding)
    np.testing.assert_array_equal(new[:, 0], old[:, 0])  # class-token position kept
    # Upsampling 4x4 -> 8x8 by 2: the mean over the grid is nearly kept (bicubic, half-pixel).
    np.testing.assert_allclose(new[0, 1:].mean(0), old[0, 1:].mean(0), atol=0.02)


# --- Same weights, same outputs on TensorFlow, JAX and PyTorch --------------------------------


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("backends")
    saved = {}
    for family in FAMILIES:
        model, x = build(family), inputs_for(family)
        model.save(str(root / f"{family}.keras"))
        np.savez(root / f"{family}_inputs.npz", **x)
        saved[family] = (root, run(model, x))
    return saved


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "tensorflow"])
def test_same_outputs_on_every_backend(backend, saved_models):
    root = saved_models[FAMILIES[0]][0]
    results = run_in_backend(backend, "tests.test_backbones:forward_all", root)
    for family in FAMILIES:
        _, expected = saved_models[family]
        got = {k.split("/", 1)[1]: v for k, v in results.items() if k.startswith(family + "/")}
        assert_outputs_close(got, expected, atol=1e-5, where=f"{family} on {backend}")


def forward_all(root):
    """Run every saved tiny model under the current backend (called by `run_in_backend`)."""
    from tests.harness import forward_saved_model

    results = {}
    for family in FAMILIES:
        out = forward_saved_model(f"{root}/{family}.keras", f"{root}/{family}_inputs.npz")
        results.update({f"{family}/{k}": v for k, v in out.items()})
    return results


# --- Presets: parameter counts equal the reference implementation ----------------------------

# Published figures (issue #2), from transformers' BertModel / OpenAIGPTModel / ViTModel.
PUBLISHED = {"bert_base": 109_482_240, "bert_large": 335_141_888, "gpt1": 116_534_784,
             "vit_base16": 86_389_248}


def reference_parameter_count(class_name, config):
    """transformers' count for the same architecture, built on the meta device (no memory)."""
    import torch
    import transformers

    h = config["hidden_dim"]
    with torch.device("meta"):
        if class_name == "BertBackbone":
            ref = transformers.BertModel(transformers.BertConfig(
                vocab_size=config["vocabulary_size"], hidden_size=h,
                num_hidden_layers=config["num_layers"], num_attention_heads=config["num_heads"],
                intermediate_size=config.get("intermediate_dim") or 4 * h,
                max_position_embeddings=config["max_sequence_length"],
                type_vocab_size=config["num_segments"]))
        elif class_name == "LSTMBackbone":
            # torch's LSTM adds two bias vectors per gate (b_ih + b_hh), Keras' has one.
            ref = torch.nn.ModuleList([torch.nn.Embedding(config["vocabulary_size"], h),
                                       torch.nn.LSTM(h, h, config["num_layers"])])
            return (sum(p.numel() for p in ref.parameters())
                    - 4 * h * config["num_layers"])
        elif class_name == "GPTBackbone":
            ref = transformers.OpenAIGPTModel(transformers.OpenAIGPTConfig(
                vocab_size=config["vocabulary_size"], n_embd=h, n_layer=config["num_layers"],
                n_head=config["num_heads"], n_positions=config["max_sequence_length"]))
        else:
            ref = transformers.ViTModel(transformers.ViTConfig(
                image_size=config["image_size"], patch_size=config["patch_size"], hidden_size=h,
                num_hidden_layers=config["num_layers"], num_attention_heads=config["num_heads"],
                intermediate_size=config.get("intermediate_dim") or 4 * h), add_pooling_layer=True)
    return sum(p.numel() for p in ref.parameters())


@pytest.mark.parametrize("name", zoo.models.names())
def test_preset_parameter_count(name):
    class_name, config = zoo.models.presets.PRESETS[name]
    count = zoo.models.count_parameters(name)
    assert count == reference_parameter_count(class_name, config)
    if name in PUBLISHED:
        assert count == PUBLISHED[name]


def test_counting_parameters_draws_no_weights_and_counts_what_create_builds(monkeypatch):
    """`count_parameters` calls no initializer (drawing BERT-large's 335 million values is what
    takes the time) and gives what the built model's `count_params` does."""
    calls = []
    for cls in (keras.initializers.TruncatedNormal, keras.initializers.RandomNormal,
                keras.initializers.VarianceScaling, keras.initializers.Zeros,
                keras.initializers.Ones):
        original = cls.__call__
        monkeypatch.setattr(cls, "__call__", lambda self, *a, _original=original, **k: (
            calls.append(type(self).__name__), _original(self, *a, **k))[1])
    assert zoo.models.count_parameters("bert_large") == PUBLISHED["bert_large"]
    assert calls == []
    for name, overrides in (("bert_tiny", {}), ("gpt1_lstm", {"hidden_dim": 32}),
                            ("vit_base16", {"num_layers": 1, "image_size": 32})):
        assert (zoo.models.count_parameters(name, **overrides)
                == zoo.models.create(name, **overrides).count_params()), name
        keras.backend.clear_session()
    assert calls  # the check above sees initializers when weights are drawn


def test_table6_size_is_an_override():
    """BERT paper Table 6 row L=3, H=768, A=12: feed-forward width follows as 4H."""
    model = zoo.models.create("bert_base", num_layers=3)
    config = dict(zoo.models.presets.PRESETS["bert_base"][1], num_layers=3)
    assert model.intermediate_dim == 3072
    assert model.count_params() == reference_parameter_count("BertBackbone", config)


def test_create_rejects_unknown_names():
    with pytest.raises(KeyError, match="bert_huge.*known presets: bert_tiny"):
        zoo.models.create("bert_huge")
    with pytest.raises(TypeError, match=r"unknown override\(s\) \['hidden_size'\]"):
        zoo.models.create("bert_tiny", hidden_size=64)


def test_default_activations_match_the_references():
    """GPT-1's default is the tanh GELU of transformers' OpenAIGPT; BERT's is the erf GELU."""
    import inspect

    import torch
    import transformers
    from transformers.models.openai import modeling_openai

    from zoo.layers.transformer import activation_function

    x = np.linspace(-6, 6, 401).astype("float32")
    gpt_default = inspect.signature(zoo.models.GPTBackbone).parameters["activation"].default
    hf_gpt = modeling_openai.ACT_FNS[transformers.OpenAIGPTConfig().afn]
    bert_default = inspect.signature(zoo.models.BertBackbone).parameters["activation"].default
    hf_bert = transformers.activations.ACT2FN[transformers.BertConfig().hidden_act]
    for ours, theirs in ((gpt_default, hf_gpt), (bert_default, hf_bert)):
        expected = theirs(torch.tensor(x)).numpy()
        got = keras.ops.convert_to_numpy(activation_function(ours)(x))
        np.testing.assert_allclose(got, expected, atol=1e-6)
