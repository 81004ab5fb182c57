"""JAX training through keras.distribution: `train.strategy` jax_data_parallel and
jax_model_parallel over two CPU devices, and jax_model_parallel on a 2 x 2 ("batch", "model")
mesh of four (`train.model_parallel=2`), give the weights and outputs of one device.

The JAX parts run in subprocesses (tests/harness.py `run_in_backend`) started with
XLA_FLAGS=--xla_force_host_platform_device_count=2 (or 4), so JAX sees that many CPU devices.
The expected values are the same code on one device (strategy default, no distribution),
trained once, in the two-device process: the 2 x 2 mesh is compared with that run too.
"""

import os

import numpy as np
import pytest

from tests.harness import run_in_backend
from zoo import config as config_lib
from zoo import training
from zoo_tasks import runs

# XLA:CPU aborts the process when the devices of a collective (the gradient all-reduce) arrive
# more than 40 s apart. The devices are threads of one process here, and on 2 busy cores (the
# other test worker training beside it) one of them once arrived late: "Termination timeout
# for `all reduce ...` of 40 seconds exceeded ... only 1 of them arrived on time". A late
# device is slow, not wrong: wait up to 10 minutes (openxla/xla#32115 made this a flag).
_PATIENCE = ("--xla_cpu_collective_call_warn_stuck_timeout_seconds=120 "
             "--xla_cpu_collective_call_terminate_timeout_seconds=600")
# Later (CI of 36e6eb3) a device never arrived: 600 s, then the abort. XLA:CPU runs each device's
# part of a program as a task of a thread pool sized like the machine (2 threads on 2 cores, at
# least one a device), and a device blocked in the all-reduce holds its thread while it waits;
# with every thread so held or busy, the other device's task has none to start on. PJRT_NPROC
# (read by XLA's DefaultThreadPoolSize) gives the pools twice as many threads as devices, so a
# waiting device never keeps the other from starting; the extra threads idle otherwise.
# The programs here are tiny and run a few times each, so XLA's compiling them is most of the
# CPU (model_parallel_forward: ~300 one-op programs, 17 of its 29 CPU-s). JAX's
# jax_disable_most_optimizations (LLVM at -O0, no expensive passes) halves that (8 CPU-s) and
# leaves what is compared alone: the sharding, the SPMD partitioning and its all-reduces run
# as ever, and both sides of each comparison (one device, the mesh) compile under it.
_FAST_COMPILE = {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}
TWO_DEVICES = {"XLA_FLAGS": f"--xla_force_host_platform_device_count=2 {_PATIENCE}",
               "PJRT_NPROC": "4", **_FAST_COMPILE}
FOUR_DEVICES = {"XLA_FLAGS": f"--xla_force_host_platform_device_count=4 {_PATIENCE}",
                "PJRT_NPROC": "8", **_FAST_COMPILE}
TWO_BY_TWO = ("train.devices=4", "train.model_parallel=2")
STRATEGIES = ("default", "jax_data_parallel", "jax_model_parallel")
STEPS = 4


def sst2(root, vocabulary, strategy, *overrides):
    """A 4-step bert_tiny SST-2 run on the samples; global batch 16 whatever the strategy."""
    return config_lib.resolve("bert/glue_sst2", [
        "model.preset=bert_tiny", f"model.vocabulary={vocabulary}",
        f"data.dir={os.path.join(root, 'glue', 'SST-2')}", "data.sequence_length=32",
        "train.batch_size=16", "train.learning_rate=1e-3", f"train.steps={STEPS}",
        f"train.eval_every={STEPS}", f"train.strategy={strategy}", "train.jit_compile=true",
        *overrides])


def train_once(root, vocabulary, tmp, strategy, *overrides):
    """One run of `strategy`: {"<strategy>:accuracy", "<strategy>:<weight path>": value}."""
    import keras

    import zoo  # noqa: F401  (registers the zoo classes)

    run_dir = os.path.join(tmp, strategy)
    metrics = runs.train(sst2(root, vocabulary, strategy, *overrides), run_dir)
    assert keras.distribution.distribution() is None  # train() restores the default
    out = {f"{strategy}:accuracy": np.array(metrics["accuracy"])}
    model = keras.saving.load_model(os.path.join(run_dir, "final.keras"))
    for weight in model.weights:
        out[f"{strategy}:{weight.path}"] = keras.ops.convert_to_numpy(weight)
    return out


def train_each_strategy(root, vocabulary, tmp):
    """Under JAX with 2 devices: train once per strategy; the final weights of each."""
    import keras

    assert len(keras.distribution.list_devices()) == 2
    out = {}
    for strategy in STRATEGIES:
        out.update(train_once(root, vocabulary, tmp, strategy))
    for name, overrides in (("too_many", ["train.devices=3"]),
                            ("op_by_op", ["train.jit_compile=false"])):
        try:
            training.jax_distribution(sst2(root, vocabulary, "jax_data_parallel",
                                           *overrides).train)
        except config_lib.ConfigError as error:
            out[name] = np.array(str(error))
    return out


def tiny_backbones():
    """BERT, GPT-1 and ViT backbones of the test size, with their inputs."""
    from zoo.models import BertBackbone, GPTBackbone, ViTBackbone

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 100, (4, 16)).astype("int32")
    mask = np.ones((4, 16), "int32")
    mask[:, 12:] = 0
    size = dict(num_layers=2, num_heads=2, hidden_dim=32, intermediate_dim=64)
    return {
        "bert": (lambda: BertBackbone(vocabulary_size=100, max_sequence_length=16, **size),
                 {"token_ids": ids, "segment_ids": (np.arange(16) >= 8).astype("int32")[None]
                  .repeat(4, 0), "padding_mask": mask}),
        "gpt1": (lambda: GPTBackbone(vocabulary_size=100, max_sequence_length=16, **size),
                 {"token_ids": ids, "padding_mask": mask}),
        "vit": (lambda: ViTBackbone(image_size=32, patch_size=8, **size),
                {"images": rng.normal(size=(4, 32, 32, 3)).astype("float32")}),
    }


def _compiled_call(model, inputs):
    """The model's outputs from one jitted program, as training runs it (its stateless call on
    its weights, which carry their shardings), not op by op: each op run eagerly is an XLA
    program of its own to compile (~150 per forward pass here, most of its CPU)."""
    import jax

    def call(trainable, non_trainable, inputs):
        return model.stateless_call(trainable, non_trainable, inputs)[0]

    return jax.jit(call)([v.value for v in model.trainable_variables],
                         [v.value for v in model.non_trainable_variables], inputs)


def model_parallel_forward():
    """Under JAX with 2 devices: each family's outputs on one device and with the layout map.

    Returns per family the outputs of both, the number of variables the layout map shards,
    and for each of those how many devices hold it and which axis is split.
    """
    import keras

    from zoo.models import layout

    devices = keras.distribution.list_devices()
    assert len(devices) == 2
    mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), devices)
    out = {}
    for family, (build, inputs) in tiny_backbones().items():
        single = build()
        expected = _compiled_call(single, inputs)
        with keras.distribution.ModelParallel(layout_map=layout.layout_map(mesh),
                                              batch_dim_name="batch").scope():
            sharded = build()  # a functional model: its weights are made here
            for source, target in zip(single.weights, sharded.weights):
                assert source.path == target.path
                target.assign(source)
            actual = _compiled_call(sharded, inputs)
        mapped = [w for w in sharded.weights if layout.layout_map(mesh)[w.path] is not None]
        out[f"{family}:mapped"] = np.array(len(mapped))
        out[f"{family}:sharded"] = np.array(sum(
            len(w.value.sharding.device_set) == 2 and not w.value.sharding.is_fully_replicated
            for w in mapped))
        # The split axis of each mapped variable: its single shard is half as long there.
        out[f"{family}:split_axes"] = np.array(sorted({
            (w.path[w.path.index("transformer_layer_0"):], str(int(np.argmax(
                np.array(w.shape) != np.array(w.value.sharding.shard_shape(w.shape))))))
            for w in mapped if "transformer_layer_0" in w.path}))
        for key in expected:
            out[f"{family}:single:{key}"] = keras.ops.convert_to_numpy(expected[key])
            out[f"{family}:sharded:{key}"] = keras.ops.convert_to_numpy(actual[key])
    return out


def jax_checks(root, vocabulary, tmp):
    """Both of the above and tests/test_training.py's `fit_on_backend` (no distribution: the
    default device) in one process: one JAX start-up for all three."""
    from tests.test_training import fit_on_backend

    fit = {f"fit:{key}": value for key, value in fit_on_backend(root, vocabulary).items()}
    return {**train_each_strategy(root, vocabulary, tmp), **model_parallel_forward(), **fit}


def train_on_two_by_two_mesh(root, vocabulary, tmp):
    """Under JAX with 4 devices: the final weights of a 2 x 2 mesh (one device's are those of
    `train_each_strategy`); the mesh, where each device's slice of a query kernel starts, and
    the mesh's ConfigErrors."""
    import keras

    import zoo  # noqa: F401  (registers the zoo classes)

    assert len(keras.distribution.list_devices()) == 4
    out = train_once(root, vocabulary, tmp, "jax_model_parallel", *TWO_BY_TWO)
    distribution = training.jax_distribution(
        sst2(root, vocabulary, "jax_model_parallel", *TWO_BY_TWO).train)
    mesh = distribution.device_mesh
    out["mesh_shape"] = np.array(mesh.shape)
    out["mesh_axes"] = np.array(mesh.axis_names)
    build, _ = tiny_backbones()["bert"]
    with distribution.scope():
        backbone = build()
    kernel = next(w for w in backbone.weights
                  if w.path.endswith("transformer_layer_0/attention/query/kernel"))
    sharding = kernel.value.sharding
    out["kernel_shape"] = np.array(kernel.shape)
    out["kernel_spec"] = np.array([str(axis) for axis in sharding.spec])
    out["shard_shape"] = np.array(sharding.shard_shape(kernel.shape))
    # (row, column) of each shard's first element, per device of the mesh ("cpu:3").
    starts = {f"{shard.device.platform}:{shard.device.id}":
              [index.start or 0 for index in shard.index]
              for shard in kernel.value.addressable_shards}
    out["shard_starts"] = np.array([[starts[device] for device in row] for row in mesh.devices])
    for name, overrides in (("not_a_multiple", ["train.devices=4", "train.model_parallel=3"]),
                            ("uneven_batch", [*TWO_BY_TWO, "train.batch_size=15"])):
        try:
            training.jax_distribution(sst2(root, vocabulary, "jax_model_parallel",
                                           *overrides).train)
        except config_lib.ConfigError as error:
            out[name] = np.array(str(error))
    return out


@pytest.fixture(scope="module")
def trained(sample_data, tmp_path_factory):
    return run_in_backend("jax", "tests.test_jax_distribution:jax_checks",
                          sample_data["root"], sample_data["wordpiece"],
                          tmp_path_factory.mktemp("jax_runs"), env=TWO_DEVICES)


@pytest.fixture(scope="module")
def mesh_trained(sample_data, tmp_path_factory):
    return run_in_backend("jax", "tests.test_jax_distribution:train_on_two_by_two_mesh",
                          sample_data["root"], sample_data["wordpiece"],
                          tmp_path_factory.mktemp("jax_mesh_runs"), env=FOUR_DEVICES)


def _max_diff(result, strategy):
    prefix = "default:"
    paths = [key[len(prefix):] for key in result if key.startswith(prefix)
             and key != "default:accuracy"]
    assert len(paths) > 30
    return max(float(np.max(np.abs(result[prefix + p] - result[f"{strategy}:{p}"])))
               for p in paths), paths


def _assert_trains_like_one_device(result, strategy, label):
    diff, _ = _max_diff(result, strategy)
    print(f"{label}: max abs weight diff {diff:.3g}")
    assert diff <= 1e-5, diff
    assert result[f"{strategy}:accuracy"] == result["default:accuracy"]


def test_model_fit_with_a_task_runs_on_jax(trained):
    """zoo_tasks.create -> build_model -> compile -> fit under JAX (tests/test_training.py's
    `fit_on_backend`, run in this module's JAX process)."""
    result = {key[len("fit:"):]: value for key, value in trained.items()
              if key.startswith("fit:")}
    assert str(result["backend"]) == "jax"
    assert result["loss"][-1] < result["loss"][0]
    assert result["after"] >= 0.8, result
    # Issue #10 item 4: one XLA compilation of the train step per bucket width met, at most
    # sequence_length / pad_to_multiple_of = 8 whatever the number of batches (4 epochs).
    widths = result["widths"].tolist()
    assert len(widths) >= 2 and all(w % 4 == 0 for w in widths), widths
    assert len(widths) <= int(result["train_step_compilations"]) <= 32 // 4, result


def test_data_parallel_training_equals_one_device(trained):
    _assert_trains_like_one_device(trained, "jax_data_parallel", "jax_data_parallel")


def test_model_parallel_training_equals_one_device(trained):
    _assert_trains_like_one_device(trained, "jax_model_parallel", "jax_model_parallel")


def test_too_many_devices_or_op_by_op_steps_are_config_errors(trained):
    assert "train.devices 3: JAX has 2 device(s)" in str(trained["too_many"])
    assert "xla_force_host_platform_device_count=3" in str(trained["too_many"])
    assert "needs train.jit_compile=true" in str(trained["op_by_op"])


@pytest.mark.parametrize("strategy", ["jax_data_parallel", "jax_model_parallel"])
def test_jax_strategies_under_tensorflow_are_a_config_error(strategy, sample_data, tmp_path):
    config = sst2(sample_data["root"], sample_data["wordpiece"], strategy)
    with pytest.raises(config_lib.ConfigError, match="needs KERAS_BACKEND=jax"):
        runs.train(config, str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_model_parallel_layout_shards_every_block_kernel_and_keeps_outputs(trained):
    result = trained
    per_block = {"attention/query/kernel": 1, "attention/query/bias": 0,
                 "attention/key/kernel": 1, "attention/key/bias": 0,
                 "attention/value/kernel": 1, "attention/value/bias": 0,
                 "attention/output/kernel": 0, "ffn_intermediate/kernel": 1,
                 "ffn_intermediate/bias": 0, "ffn_output/kernel": 0}
    # 10 per block x 2 blocks, plus the embedding tables (BERT 3, GPT-1 2, ViT none).
    for family, tables in (("bert", 3), ("gpt1", 2), ("vit", 0)):
        assert int(result[f"{family}:mapped"]) == 2 * len(per_block) + tables, family
        assert int(result[f"{family}:sharded"]) == int(result[f"{family}:mapped"]), family
        axes = {tuple(pair) for pair in result[f"{family}:split_axes"]}
        assert axes == {(f"transformer_layer_0/{p}", str(a)) for p, a in per_block.items()}
        keys = [k.split(":", 2)[2] for k in result if k.startswith(f"{family}:single:")]
        assert keys, family
        for key in keys:
            diff = np.max(np.abs(result[f"{family}:single:{key}"]
                                 - result[f"{family}:sharded:{key}"]))
            print(f"{family} {key}: max abs diff {diff:.3g}")
            assert diff <= 1e-5, (family, key, diff)


def test_two_by_two_mesh_training_equals_one_device(trained, mesh_trained):
    one_device = {k: v for k, v in trained.items() if k.startswith("default:")}
    _assert_trains_like_one_device({**one_device, **mesh_trained}, "jax_model_parallel",
                                   "jax_model_parallel on a 2 x 2 mesh")


def test_two_by_two_mesh_splits_kernels_on_model_and_replicates_them_on_batch(mesh_trained):
    result = mesh_trained
    assert result["mesh_shape"].tolist() == [2, 2]
    assert result["mesh_axes"].tolist() == ["batch", "model"]
    # The query kernel [hidden, hidden] is split by output column over "model" only.
    assert result["kernel_spec"].tolist() == ["None", "model"]
    rows, columns = result["kernel_shape"].tolist()
    assert result["shard_shape"].tolist() == [rows, columns // 2]
    # Both rows of the mesh (batch slices) hold the same two halves, one per model column.
    starts = result["shard_starts"].tolist()
    assert starts == [[[0, 0], [0, columns // 2]], [[0, 0], [0, columns // 2]]], starts


def test_two_by_two_mesh_config_errors(mesh_trained):
    assert "train.model_parallel 3: must divide train.devices 4" in str(
        mesh_trained["not_a_multiple"])
    assert ("train.batch_size 15: must be a multiple of the mesh's 'batch' axis, 2"
            in str(mesh_trained["uneven_batch"]))


@pytest.mark.parametrize("strategy", ["default", "jax_data_parallel"])
def test_model_parallel_with_another_strategy_is_a_config_error(strategy, sample_data):
    with pytest.raises(config_lib.ConfigError,
                       match=f"train.model_parallel 2: only for train.strategy="
                             f"jax_model_parallel, found {strategy}"):
        sst2(sample_data["root"], sample_data["wordpiece"], strategy, "train.model_parallel=2")
