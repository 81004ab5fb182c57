"""Where a run computes: logical CPU devices, tf.distribute strategies, the Keras 3.15.1
multi-worker patch (keras-team/keras#20585), TF_CONFIG clusters, keras.distribution over
JAX devices (data parallel, or a data x model mesh), and per-worker input pipelines.
"""

import contextlib
import dataclasses
import json
import os

import keras

from zoo import config as config_lib
from zoo.models import layout


def configure_devices(train):
    """Split the CPU into `train.devices` logical devices (before TensorFlow starts)."""
    import tensorflow as tf

    if train.strategy == "mirrored" and train.devices and not tf.config.list_physical_devices(
            "GPU"):
        cpu = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * train.devices)
        except RuntimeError:  # TensorFlow already started: keep what there is
            pass


def _patch_keras_for_multi_worker():
    """Make `model.fit` work under MultiWorkerMirroredStrategy on Keras 3.15.1.

    keras-team/keras#20585: Keras 3's TF trainer fails there twice. (1) Before the first
    step it builds the model from one batch by `strategy.reduce("MEAN", batch)`, a cross-worker
    collective on eager PerReplica inputs that MultiWorkerMirroredStrategy cannot convert; any
    replica's local batch has the shapes the build needs. (2) It averages the step's logs with
    `strategy.reduce("MEAN", value, axis=0)`, which fails for scalar losses and metrics; a
    scalar needs axis=None. The patch replaces exactly those two paths for this strategy and
    this Keras version and defers to Keras everywhere else; a later Keras is left alone.
    """
    import tensorflow as tf
    from keras.src import tree
    from keras.src.backend.tensorflow import trainer

    if keras.__version__ != "3.15.1" or getattr(trainer, "_zoo_multi_worker_patch", False):
        return
    build, reduce = trainer.TensorFlowTrainer._maybe_symbolic_build, trainer.reduce_per_replica

    def local(strategy, value):
        if isinstance(value, tf.distribute.DistributedValues):
            return strategy.experimental_local_results(value)[0]
        return value

    def maybe_symbolic_build(self, iterator=None, data_batch=None):
        strategy = self._distribute_strategy
        if iterator is None or not isinstance(strategy,
                                              tf.distribute.MultiWorkerMirroredStrategy):
            return build(self, iterator, data_batch)
        for _, _, it in iterator:
            data_batch = tree.map_structure(lambda v: local(strategy, v), next(it))
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and trainer._collective_all_reduce_multi_worker(
                strategy):
            def mean(value):
                rank = local(strategy, value).shape.rank
                return strategy.reduce("MEAN", value, axis=0 if rank else None)
            return tree.map_structure(mean, values)
        return reduce(values, strategy, reduction)

    trainer.TensorFlowTrainer._maybe_symbolic_build = maybe_symbolic_build
    trainer.reduce_per_replica = reduce_per_replica
    trainer._zoo_multi_worker_patch = True


@dataclasses.dataclass
class Worker:
    """This process in a TF_CONFIG cluster: its name and whether it is the chief."""

    name: str
    chief: bool
    count: int


def cluster_worker():
    """The `Worker` TF_CONFIG describes; a single process is the chief of a cluster of one."""
    spec = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster, task = spec.get("cluster", {}), spec.get("task", {})
    kind, index = task.get("type", "worker"), int(task.get("index", 0))
    count = sum(len(cluster.get(k, [])) for k in ("chief", "worker")) or 1
    chief = kind == "chief" or (kind == "worker" and index == 0 and "chief" not in cluster)
    return Worker(f"{kind}-{index}", chief, count)


def make_strategy(train):
    """The tf.distribute strategy of `train.strategy`.

    `mirrored` replicates over the GPUs, or over `train.devices` logical CPU devices;
    `multi_worker_mirrored` reads TF_CONFIG (Keras 3.15.1's `fit` needs the patch of
    `_patch_keras_for_multi_worker`, applied here; one strategy per process); `tpu` connects
    to `train.tpu` (untested here: no TPU).
    """
    import tensorflow as tf

    if train.strategy == "default":
        return tf.distribute.get_strategy()
    cached = getattr(make_strategy, "_multi_worker", None)
    if train.strategy == "multi_worker_mirrored" and cached is not None:
        return cached  # one per process: collectives are configured once, at start-up
    if train.strategy == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if train.strategy == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus or tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    if train.strategy == "multi_worker_mirrored":
        _patch_keras_for_multi_worker()
        make_strategy._multi_worker = tf.distribute.MultiWorkerMirroredStrategy()
        return make_strategy._multi_worker
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=train.tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def jax_distribution(train):
    """The keras.distribution of `train.strategy` jax_data_parallel / jax_model_parallel.

    `jax_data_parallel` is `keras.distribution.DataParallel` over the first `train.devices`
    JAX devices (default: all): weights replicated, each device one slice of the global batch.
    `jax_model_parallel` is `keras.distribution.ModelParallel` on a ("batch", "model") mesh of
    shape (devices // model_parallel, model_parallel) with `zoo.models.layout.layout_map`:
    transformer kernels split over the `train.model_parallel` devices of each row of the mesh
    (default: all devices, a 1 x devices mesh) and replicated over its rows, each row one
    slice of the global batch. See https://keras.io/guides/distribution/.

    Returns:
        The distribution, or None for a tf.distribute strategy.

    Raises:
        ConfigError: a jax_* strategy under another backend, without train.jit_compile, with
            more devices than JAX has, with devices not a multiple of train.model_parallel,
            or with a batch size that does not split over the mesh's batch axis.
    """
    if not train.strategy.startswith("jax_"):
        return None
    if keras.backend.backend() != "jax":
        raise config_lib.ConfigError(
            f"train.strategy {train.strategy}: keras.distribution over JAX devices needs "
            f"KERAS_BACKEND=jax (this is {keras.backend.backend()}); with TensorFlow use "
            "mirrored, multi_worker_mirrored or tpu")
    if not train.jit_compile:
        # Op by op, every small op with a collective is its own XLA:CPU program, and the
        # devices' threads can wait on different ones: such runs hit XLA's 40 s rendezvous
        # timeout here (2 of 2 ModelParallel runs on 2 CPU devices), besides being slow.
        raise config_lib.ConfigError(
            f"train.strategy {train.strategy}: needs train.jit_compile=true (one compiled "
            "program per step; op-by-op collectives across JAX devices can stall)")
    available = keras.distribution.list_devices()
    count = train.devices or len(available)
    if count > len(available):
        raise config_lib.ConfigError(
            f"train.devices {count}: JAX has {len(available)} device(s); on CPU start with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={count}")
    devices = available[:count]
    if train.strategy == "jax_data_parallel":
        return keras.distribution.DataParallel(devices=devices)
    model = train.model_parallel or count
    if count % model:
        raise config_lib.ConfigError(
            f"train.model_parallel {model}: must divide train.devices {count} (the mesh is "
            "devices / model_parallel x model_parallel)")
    batch = count // model
    # Each row of the mesh gets an equal slice of every global batch
    # (jax.make_array_from_process_local_data refuses an uneven split).
    if train.batch_size % batch:
        raise config_lib.ConfigError(
            f"train.batch_size {train.batch_size}: must be a multiple of the mesh's 'batch' "
            f"axis, {batch} (train.devices {count} / train.model_parallel {model})")

    mesh = keras.distribution.DeviceMesh((batch, model), (layout.BATCH_AXIS, layout.MODEL_AXIS),
                                         devices)
    return keras.distribution.ModelParallel(layout_map=layout.layout_map(mesh),
                                            batch_dim_name=layout.BATCH_AXIS)


def join_cluster(train, run_dir):
    """Start this process's place in a multi-worker run; (run_dir, shared_backup) it uses.

    Under `multi_worker_mirrored` (TensorFlow) the strategy is made before any other TF op,
    since its collectives start up first. The chief owns `run_dir`; another worker trains in
    lock-step and writes its own files under `run_dir/workers/<name>/`, resuming from the
    chief's backup (`shared_backup`, None for the chief and for single-process runs).
    """
    configure_devices(train)
    if train.strategy != "multi_worker_mirrored" or keras.backend.backend() != "tensorflow":
        return run_dir, None
    make_strategy(train)
    worker = cluster_worker()
    if worker.chief:
        return run_dir, None
    return os.path.join(run_dir, "workers", worker.name), os.path.join(run_dir, "backup")


def scope(train, distribution=None):
    """(scope, replicas, description) of `train.strategy`.

    `distribution` is the `jax_distribution` of a jax_* strategy (already checked), which
    `fit` makes current itself; its replicas are the size of the mesh's batch axis.
    """
    if distribution is not None:
        mesh = distribution.device_mesh
        return contextlib.nullcontext(), mesh.shape[0], (
            f"{type(distribution).__name__} over {mesh.devices.size} JAX devices, mesh "
            f"{dict(zip(mesh.axis_names, mesh.shape))}")
    if keras.backend.backend() != "tensorflow":
        if train.strategy != "default":
            raise config_lib.ConfigError(f"train.strategy {train.strategy}: tf.distribute "
                                         "strategies need KERAS_BACKEND=tensorflow")
        return contextlib.nullcontext(), 1, f"{keras.backend.backend()} backend"
    strategy = make_strategy(train)
    replicas = strategy.num_replicas_in_sync
    return strategy.scope(), replicas, (f"{type(strategy).__name__}, {replicas} "
                                        f"replica{'s' if replicas > 1 else ''}")


def distributed_dataset(train, dataset_fn, skip_batches):
    """What `fit` reads for a phase: `dataset_fn(skip_batches)`, or under a tf.distribute
    strategy, one input pipeline per worker when `dataset_fn` takes an `input_context`.

    With such a function (the pretraining tasks' phases) each worker builds its own pipeline
    (`strategy.distribute_datasets_from_function`): it reads only its shard files and batches
    one replica's share of the global batch, instead of every worker reading the corpus and
    Keras slicing the global batch (`experimental_distribute_dataset`'s AUTO policy). Resuming
    still skips whole steps: `skip_batches` counts steps, which the task turns into its
    pipeline's batches. Under JAX, Keras's distribution splits each global batch itself.
    """
    import inspect

    if (keras.backend.backend() != "tensorflow" or train.strategy in ("default", "one_device")
            or "input_context" not in inspect.signature(dataset_fn).parameters):
        return dataset_fn(skip_batches)
    strategy = make_strategy(train)
    contexts = []

    def per_worker(context):
        contexts.append(context)
        return dataset_fn(skip_batches, input_context=context)

    dataset = strategy.distribute_datasets_from_function(per_worker)
    if contexts:  # built here, for this worker's devices
        print(f"input: one pipeline per worker ({contexts[0].num_input_pipelines} in all), "
              f"this one pipeline {contexts[0].input_pipeline_id} for "
              f"{strategy.num_replicas_in_sync // contexts[0].num_input_pipelines} "
              "replica(s)", flush=True)
    return dataset
