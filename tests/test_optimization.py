"""Schedules and optimizer of zoo.optimization against the papers' formulas, written out here.

Expected values never come from zoo: the schedules are plain python math below, the variables
that must not decay are found by walking the model's layers, and the optimizer's behaviour is
observed through real `apply_gradients` steps on TensorFlow, JAX and PyTorch.
"""

import math

import keras
import numpy as np
import pytest

import zoo
from tests.harness import BACKENDS, run_in_backend
from zoo.optimization import SCHEDULES, WarmupCosineDecay, WarmupLinearDecay, build_optimizer


def linear_reference(learning_rate, total, warmup, step):
    """BERT A.2: linear warmup over `warmup` steps, then linear decay to 0 at `total`."""
    if step < warmup:
        return learning_rate * step / warmup
    return learning_rate * max(0.0, (total - step) / (total - warmup))


def cosine_reference(learning_rate, total, warmup, step):
    """GPT-1 4.1: linear warmup from 0, then annealed to 0 with a cosine."""
    if step < warmup:
        return learning_rate * step / warmup
    progress = min(1.0, (step - warmup) / (total - warmup))
    return learning_rate * 0.5 * (1.0 + math.cos(math.pi * progress))


REFERENCES = {"linear": linear_reference, "cosine": cosine_reference}
# (learning_rate, total_steps, warmup_steps): BERT pre-training, GPT-1 pre-training, GPT-1
# fine-tuning (0.2 % warmup), no warmup, a one-step warmup and tiny runs.
CASES = [(1e-4, 1_000_000, 10_000), (2.5e-4, 100_000, 2000), (6.25e-5, 5000, 10),
         (2e-5, 1000, 0), (3e-5, 7, 1), (5e-5, 3, 0), (1.0, 2, 1)]


def steps_of(total, warmup):
    steps = {0, 1, warmup - 1, warmup, warmup + 1, (warmup + total) // 2, total - 1, total,
             total + 10}
    return sorted(s for s in steps if s >= 0)


def assert_rates_close(actual, expected, learning_rate, where):
    # float32 arithmetic: relative 1e-6 where the rate is large, 1e-6 of the peak near 0.
    np.testing.assert_allclose(np.asarray(actual, "float64"), expected, rtol=1e-6,
                               atol=1e-6 * learning_rate, err_msg=where)


# === (a) The schedules against the formulas ===


@pytest.mark.parametrize("name", SCHEDULES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_schedule_matches_formula(name, case):
    schedule = SCHEDULES[name](*case)
    steps = steps_of(*case[1:])
    actual = [float(keras.ops.convert_to_numpy(schedule(step))) for step in steps]
    expected = [REFERENCES[name](*case, step) for step in steps]
    assert_rates_close(actual, expected, case[0], f"{name} {case} at steps {steps}")


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_landmarks(name):
    """Spelled-out values: 0 at step 0, peak at the end of warmup, 0 from total on."""
    schedule = SCHEDULES[name](2.0, total_steps=14, warmup_steps=4)
    rates = [float(keras.ops.convert_to_numpy(schedule(step))) for step in (0, 2, 4, 9, 14, 99)]
    assert rates == pytest.approx([0.0, 1.0, 2.0, 1.0, 0.0, 0.0], abs=1e-6)


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_accepts_integer_tensors(name):
    schedule = SCHEDULES[name](1e-4, 100, 10)
    step = keras.Variable(5, dtype="int64", trainable=False)
    assert float(keras.ops.convert_to_numpy(schedule(step))) == pytest.approx(5e-5, rel=1e-6)


@pytest.mark.parametrize("name", SCHEDULES)
def test_warmup_over_the_whole_run(name):
    """warmup_steps == total_steps: no decay phase, and 0 (not 0 / 0) from total on."""
    schedule = SCHEDULES[name](1e-3, 10, 10)
    rates = [float(keras.ops.convert_to_numpy(schedule(step))) for step in (0, 5, 9, 10, 11)]
    assert rates == pytest.approx([0.0, 5e-4, 9e-4, 0.0, 0.0], abs=1e-9)


@pytest.mark.parametrize("args", [(1e-4, 10, 11), (1e-4, 10, -1), (1e-4, 0, 0)])
def test_schedule_rejects_bad_step_counts(args):
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupLinearDecay(*args)


# === (b) Serialization ===


@pytest.mark.parametrize("name", SCHEDULES)
def test_config_round_trip(name):
    schedule = SCHEDULES[name](3e-5, total_steps=1234, warmup_steps=56)
    config = schedule.get_config()
    assert config == {"learning_rate": 3e-5, "total_steps": 1234, "warmup_steps": 56}
    restored = type(schedule).from_config(config)
    assert restored.get_config() == config


@pytest.mark.parametrize("name", SCHEDULES)
def test_keras_serialization_round_trip(name):
    schedule = SCHEDULES[name](3e-5, total_steps=1234, warmup_steps=56)
    serialized = keras.saving.serialize_keras_object(schedule)
    assert serialized["registered_name"] == f"zoo>{type(schedule).__name__}"
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is type(schedule)
    assert restored.get_config() == schedule.get_config()
    for step in (0, 30, 56, 700, 1234):
        assert float(keras.ops.convert_to_numpy(restored(step))) == float(
            keras.ops.convert_to_numpy(schedule(step)))


def test_optimizer_config_round_trip():
    optimizer = build_optimizer(2.5e-4, 100, 20, schedule="cosine", weight_decay=0.0)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, keras.optimizers.AdamW)
    assert isinstance(restored._learning_rate, WarmupCosineDecay)  # the schedule object
    assert restored._learning_rate.get_config() == optimizer._learning_rate.get_config()
    assert restored.global_clipnorm == 1.0


# === (c) The schedule inside a real optimizer (and `model.fit`), on every backend ===

RUNS = [("linear", 0.2, 12, 4), ("cosine", 0.2, 12, 4), ("linear", 0.1, 6, 0)]
RUN_STEPS = 15  # past total_steps, where the rate stays 0
DECAY = 0.5


def optimizer_run(name, learning_rate, total, warmup):
    """`optimizer.learning_rate` before each step, and a decayed kernel after each step.

    The gradients are 0, so Adam moves nothing and each step only multiplies the kernel by
    (1 - weight_decay * lr), where lr is the rate that step was actually taken with.
    """
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="ones")])
    optimizer = build_optimizer(learning_rate, total, warmup, schedule=name, weight_decay=DECAY,
                                model=model)
    variables = model.trainable_variables
    rates, kernels = [], []
    for _ in range(RUN_STEPS):
        rates.append(keras.ops.convert_to_numpy(optimizer.learning_rate))
        optimizer.apply_gradients([(keras.ops.zeros(v.shape, v.dtype), v) for v in variables])
        kernels.append(keras.ops.convert_to_numpy(model.layers[0].kernel))
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == RUN_STEPS
    return np.array(rates), np.array(kernels)


def measured_values():
    """Schedules and optimizer runs under the current backend (also called by run_in_backend)."""
    values = {}
    for name in SCHEDULES:
        for i, case in enumerate(CASES):
            schedule = SCHEDULES[name](*case)
            values[f"{name}/{i}"] = np.array([keras.ops.convert_to_numpy(schedule(step))
                                              for step in steps_of(*case[1:])])
    for i, run in enumerate(RUNS):
        values[f"rates/{i}"], values[f"kernels/{i}"] = optimizer_run(*run)
    values.update(fit_one_step())
    return values


def check_measured_values(values, where):
    for name in SCHEDULES:
        for i, case in enumerate(CASES):
            expected = [REFERENCES[name](*case, step) for step in steps_of(*case[1:])]
            assert_rates_close(values[f"{name}/{i}"], expected, case[0], f"{where} {name} {case}")
    check_fit_one_step(values, where)
    for i, (name, learning_rate, total, warmup) in enumerate(RUNS):
        rates = [REFERENCES[name](learning_rate, total, warmup, step) for step in range(RUN_STEPS)]
        assert_rates_close(values[f"rates/{i}"], rates, learning_rate, f"{where} run {i}")
        kernel = np.cumprod([1.0 - DECAY * rate for rate in rates])  # the kernel starts at 1
        np.testing.assert_allclose(values[f"kernels/{i}"],
                                   np.broadcast_to(kernel[:, None, None], (RUN_STEPS, 3, 2)),
                                   rtol=1e-5, err_msg=f"{where} run {i}: kernel")


def fit_one_step():
    """One `model.fit` step with zero gradients: the weight decay of the compiled train step.

    Returns every variable before ("before/<name>") and after ("after/<name>") the step.
    """
    model = keras.Sequential(name="mlp", layers=[
        keras.Input((3,)), keras.layers.Dense(4, name="dense"),
        keras.layers.LayerNormalization(name="norm"), keras.layers.Dense(1, name="head")])
    rng = np.random.default_rng(0)
    for v in model.weights:  # nonzero everywhere, so a decayed beta or bias would show
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype("float32"))
    optimizer = build_optimizer(0.1, 10**6, 0, weight_decay=DECAY, model=model)
    model.compile(optimizer=optimizer, loss=lambda y, p: 0.0 * keras.ops.sum(p))
    values = {f"before/{v.path}": keras.ops.convert_to_numpy(v) for v in model.weights}
    model.fit(np.ones((2, 3), "float32"), np.zeros((2, 1), "float32"), batch_size=2, verbose=0)
    values.update({f"after/{v.path}": keras.ops.convert_to_numpy(v) for v in model.weights})
    return values


def check_fit_one_step(values, where):
    for path in ["mlp/dense/kernel", "mlp/head/kernel"]:
        np.testing.assert_allclose(values[f"after/{path}"],
                                   values[f"before/{path}"] * (1 - 0.1 * DECAY),
                                   rtol=1e-6, err_msg=f"{where} fit: {path} not decayed")
    for path in ["mlp/dense/bias", "mlp/norm/gamma", "mlp/norm/beta", "mlp/head/bias"]:
        np.testing.assert_array_equal(values[f"after/{path}"], values[f"before/{path}"],
                                      err_msg=f"{where} fit: {path} decayed")


def test_schedule_and_decay_inside_the_optimizer():
    check_measured_values(measured_values(), "tensorflow")


def test_first_update_uses_step_zero():
    """With warmup, the first update is taken at lr(0) = 0 (BERT's global_step starts at 0)."""
    rates, kernels = optimizer_run("linear", 0.2, 12, 4)
    assert rates[0] == 0.0
    np.testing.assert_array_equal(kernels[0], np.ones((3, 2)))


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "tensorflow"])
def test_same_schedule_and_decay_on_other_backends(backend):
    values = run_in_backend(backend, "tests.test_optimization:measured_values")
    check_measured_values(values, backend)


# === (d) No weight decay on LayerNorm variables and biases ===


def expected_no_decay_paths(model):
    """LayerNormalization variables and biases, found independently of zoo.optimization."""
    paths = {v.path for layer in model._flatten_layers()
             if isinstance(layer, keras.layers.LayerNormalization) for v in layer.weights}
    return paths | {v.path for v in model.weights if v.path.rsplit("/", 1)[-1].endswith("bias")}


def bert_pretraining():
    backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
    return zoo.convert.BertForPreTraining(backbone)


# family: (build, no-decay count, decayed count, some variables that must not decay). BERT with
# its pre-training heads, one layer: 4 LayerNorms (embeddings, attention, ffn, MLM transform) and
# 10 biases (q, k, v, output, 2 ffn, pooler, MLM transform, MLM output_bias, NSP) against
# 3 embedding tables and 9 kernels. GPT: 2 LayerNorms, 6 biases; 2 embeddings, 6 kernels.
# ViT: 3 LayerNorms, 8 biases; class token, position embedding and 8 kernels.
MODELS = {
    "bert": (bert_pretraining, 18, 12, ["mlm_head/output_bias", "mlm_head/transform_norm/gamma",
                                        "embeddings_norm/beta", "nsp_head/dense/bias"]),
    "gpt": (lambda: zoo.models.create("gpt1", num_layers=1, hidden_dim=64, num_heads=2,
                                      vocabulary_size=50), 10, 8,
            ["transformer_layer_0/attention_norm/gamma", "transformer_layer_0/ffn_output/bias"]),
    "vit": (lambda: zoo.models.create("vit_tiny16", image_size=32, num_layers=1), 14, 10,
            ["final_norm/beta", "patch_embedding/projection/bias"]),
}


@pytest.mark.parametrize("family", MODELS)
def test_weight_decay_skips_layernorm_and_biases(family):
    build, num_excluded, num_decayed, some_excluded = MODELS[family]
    model = build()
    rng = np.random.default_rng(0)
    for v in model.weights:  # nonzero everywhere, so a decayed beta or bias would show
        v.assign(rng.uniform(0.5, 1.5, v.shape) * rng.choice([-1.0, 1.0], v.shape))
    excluded = expected_no_decay_paths(model)
    assert len(excluded) == num_excluded and len(model.weights) - num_excluded == num_decayed
    assert set(some_excluded) <= excluded

    learning_rate, weight_decay = 0.1, 0.5
    # warmup 0 and a long run: lr(0) = learning_rate exactly.
    optimizer = build_optimizer(learning_rate, 10**6, 0, weight_decay=weight_decay, model=model)
    before = {v.path: keras.ops.convert_to_numpy(v) for v in model.trainable_weights}
    # Zero gradients: Adam moves nothing, so every change is the decoupled weight decay
    # (keras AdamW: variable -= variable * weight_decay * lr).
    variables = model.trainable_weights
    optimizer.apply_gradients([(keras.ops.zeros(v.shape, v.dtype), v) for v in variables])
    for v in variables:
        after = keras.ops.convert_to_numpy(v)
        if v.path in excluded:
            np.testing.assert_array_equal(after, before[v.path], err_msg=f"{v.path} decayed")
        else:
            np.testing.assert_allclose(after, before[v.path] * (1 - learning_rate * weight_decay),
                                       rtol=1e-6, err_msg=f"{v.path} not decayed by lr * wd")


def test_weight_decay_needs_the_model():
    with pytest.raises(ValueError, match="model="):
        build_optimizer(1e-4, 100, 10)
    assert build_optimizer(1e-4, 100, 10, weight_decay=0.0).weight_decay == 0.0


def test_unknown_schedule():
    with pytest.raises(ValueError, match="'step'.*linear, cosine"):
        build_optimizer(1e-4, 100, 10, schedule="step", weight_decay=0.0)


def test_adam_settings():
    """BERT's optimizer: beta_1 0.9, beta_2 0.999, epsilon 1e-6, clipped to global norm 1."""
    optimizer = build_optimizer(1e-4, 100, 10, weight_decay=0.0)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
    assert optimizer.global_clipnorm == 1.0 and optimizer.clipnorm is None


# === (e) Global gradient-norm clipping ===


def adam_step(clip_norm, grads):
    """One AdamW step (no decay) on two variables; their values and the Adam state after it."""
    variables = [keras.Variable(np.ones(2, "float32")), keras.Variable(np.ones(1, "float32"))]
    optimizer = build_optimizer(1e-2, 10, 0, weight_decay=0.0, clip_norm=clip_norm)
    optimizer.apply_gradients(zip([np.asarray(g, "float32") for g in grads], variables))
    return [keras.ops.convert_to_numpy(v) for v in variables + optimizer.variables]


def test_global_norm_clipping():
    # Global norm 10 across both variables (6, 0 and 8): clipped to norm 1 = (0.6, 0, 0.8).
    large, clipped = [[6.0, 0.0], [8.0]], [[0.6, 0.0], [0.8]]
    for got, want in zip(adam_step(1.0, large), adam_step(None, clipped)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # Without clipping the same gradients give a different Adam state.
    unclipped = adam_step(None, large)
    assert any(not np.allclose(a, b) for a, b in zip(unclipped, adam_step(None, clipped)))
    # A gradient already inside the norm is left alone.
    small = [[0.3, 0.0], [0.4]]
    for got, want in zip(adam_step(1.0, small), adam_step(None, small)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("clip_norm", [None, 0, 0.0])
def test_clipping_off(clip_norm):
    assert build_optimizer(1e-4, 100, 10, weight_decay=0.0, clip_norm=clip_norm).global_clipnorm \
        is None


def test_clipping_norm_counts_a_repeated_embedding_row_once():
    """An embedding looked up at ids 1, 1, 1, 2 on TensorFlow has a sparse gradient of four
    rows of ones; the gradient is 3s in row 1 and 1s in row 2, norm sqrt(3 * 9 + 3) = 5.48
    (Keras 3.15's own norm squares the four rows apart: sqrt(12) = 3.46). SGD at rate 1,
    clipped to norm 1, must move each row by gradient / 5.48."""
    import tensorflow as tf

    embedding = keras.layers.Embedding(5, 3, embeddings_initializer="zeros")
    embedding.build((None,))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(embedding(tf.constant([1, 1, 1, 2])))
    gradient = tape.gradient(loss, embedding.embeddings)
    assert isinstance(gradient, tf.IndexedSlices) and gradient.values.shape[0] == 4
    optimizer = build_optimizer(1.0, 10, 0, weight_decay=0.0, clip_norm=1.0, optimizer="sgd",
                                momentum=0.0)
    optimizer.apply_gradients([(gradient, embedding.embeddings)])
    dense = np.zeros((5, 3), "float32")
    dense[1], dense[2] = 3.0, 1.0
    np.testing.assert_allclose(keras.ops.convert_to_numpy(embedding.embeddings),
                               -dense / math.sqrt(30.0), rtol=1e-6)


# === (f) AdamW against torch.optim.AdamW on the same gradients ===


def test_adamw_matches_torch_on_the_same_gradients():
    """Three AdamW steps with decay, clipping and a sparse embedding gradient, against
    torch.optim.AdamW fed the same (dense) gradients after torch's clip_grad_norm_.

    On TensorFlow the update is the fused kernel (zoo.optimization.fused_adam_update). The ids
    repeat a token (its gradient rows must add up), and the gradient scales (5, 0.05, 3) clip
    the first and last steps but not the second. Epsilon is 1e-10 on both sides: Keras adds it
    to sqrt(v), torch to sqrt(v) / sqrt(1 - beta_2^t), so only a negligible epsilon makes the
    two formulas the same update.
    """
    import tensorflow as tf
    import torch

    rng = np.random.default_rng(0)
    model = keras.Sequential([keras.Input((4,), dtype="int32"), keras.layers.Embedding(7, 3),
                              keras.layers.Dense(2)])
    for v in model.weights:
        v.assign(rng.normal(size=v.shape).astype("float32"))
    table, kernel, bias = model.weights
    params = {v.path: torch.nn.Parameter(torch.tensor(keras.ops.convert_to_numpy(v)))
              for v in model.weights}
    learning_rate, total, weight_decay = 0.05, 1000, 0.1
    optimizer = build_optimizer(learning_rate, total, 0, weight_decay=weight_decay,
                                epsilon=1e-10, model=model)
    reference = torch.optim.AdamW(
        [{"params": [params[table.path], params[kernel.path]], "weight_decay": weight_decay},
         {"params": [params[bias.path]], "weight_decay": 0.0}],
        lr=learning_rate, betas=(0.9, 0.999), eps=1e-10)
    ids = tf.constant([[1, 1, 3, 1], [2, 3, 5, 6]])
    target = tf.constant(rng.normal(size=(2, 4, 2)).astype("float32"))
    for step, scale in enumerate([5.0, 0.05, 3.0]):
        with tf.GradientTape() as tape:
            loss = scale * tf.reduce_sum(model(ids) * target)
        grads = tape.gradient(loss, model.trainable_weights)
        assert isinstance(grads[0], tf.IndexedSlices) and grads[0].values.shape[0] == 8
        for v, g in zip(model.trainable_weights, grads):
            params[v.path].grad = torch.tensor(tf.convert_to_tensor(g).numpy())
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        assert (float(norm) > 1.0) == (scale != 0.05)
        for group in reference.param_groups:  # BERT's linear decay, warmup 0: lr(step)
            group["lr"] = learning_rate * (total - step) / total
        reference.step()
        for v in model.weights:
            np.testing.assert_allclose(keras.ops.convert_to_numpy(v),
                                       params[v.path].detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {step}: {v.path}")


def test_adamw_traces_the_steps_scalars_once_on_tensorflow():
    """The learning-rate schedule (two `where`s: SelectV2) and Adam's bias corrections (Pow)
    are traced a fixed number of times a step however many variables there are; Keras'
    TensorFlow backend evaluates the schedule again for every decayed variable."""
    import tensorflow as tf

    def traced_ops(layers):
        model = keras.Sequential([keras.Input((3,))] + [keras.layers.Dense(3)
                                                        for _ in range(layers)])
        optimizer = build_optimizer(1e-3, 100, 10, weight_decay=0.01, model=model)
        optimizer.build(model.trainable_variables)
        grads = [tf.ones(v.shape) for v in model.trainable_variables]
        step = tf.function(lambda: optimizer.apply(grads, model.trainable_variables))
        graph = step.get_concrete_function().graph
        kinds = [op.type for op in graph.get_operations()]
        kinds += [node.op for f in graph.as_graph_def().library.function for node in f.node_def]
        return {kind: kinds.count(kind) for kind in ("SelectV2", "Pow", "ResourceApplyAdam")}

    two, six = traced_ops(2), traced_ops(6)
    assert (two["ResourceApplyAdam"], six["ResourceApplyAdam"]) == (4, 12)
    assert two["Pow"] == six["Pow"] == 2, (two, six)
    assert two["SelectV2"] == six["SelectV2"], (two, six)
