"""Training with `model.fit`: run directories, starting points, strategies, callbacks, resume.

What every task shares lives here once; a task file (tasks/) only says how its model, data,
losses and metrics look. `train(config, run_dir)` is `zoo train`:

    run_dir/config.yaml      the resolved experiment (written first; a different one is refused)
    run_dir/vocabulary/      the tokenizer files, so the run is self-contained (text tasks)
    run_dir/logs/            TensorBoard: train/ (loss, learning rate, per log_every steps),
                             eval/ (dev metrics, dev examples as text), hparams
    run_dir/backup/          keras.callbacks.BackupAndRestore state while training runs
    run_dir/best.keras       the model at the best main dev metric so far
    run_dir/final.keras      the model after the last step (its presence = run complete)
    run_dir/metrics.json     every evaluation: {"step": ..., metrics ...}, in order

Every file is written to a temporary name and renamed. Training is cut into rounds of
`train.eval_every` steps (Keras "epochs"): each round ends with an evaluation, a best-model
check and a backup. A run killed at any point and started again with the same command
restores the last backup, skips exactly the batches already seen (the data order is a pure
function of seed and position) and ends with the weights an uninterrupted run would have.
"""

import dataclasses
import glob
import json
import math
import os
import shutil
import sys
import tempfile

import keras
import numpy as np
import yaml

from zoo import config as config_lib
from zoo.files import write_text

RUN_FILES = ("config.yaml", "vocabulary", "logs", "backup", "best.keras", "final.keras",
             "metrics.json", "predictions")


class TrainingError(RuntimeError):
    """Training cannot go on (a non-finite loss); the message names the step."""


# === Atomic files ===


def save_model(model, path):
    """`model.save(path)` through a temporary `.keras` file and a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".keras",
                               dir=directory)
    os.close(fd)
    try:
        model.save(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read_metrics(run_dir):
    """The evaluations recorded in `run_dir/metrics.json` (a list, empty if none)."""
    path = os.path.join(run_dir, "metrics.json")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as file:
        return json.load(file)


# === Starting points: tokenizer and backbone ===


def vocabulary_path(model_config):
    """The vocabulary directory or file of a model config (explicit, or the checkpoint's)."""
    if model_config.vocabulary:
        path = model_config.vocabulary
    elif model_config.init_checkpoint:
        path = model_config.init_checkpoint
        if os.path.isfile(os.path.join(path, "config.yaml")):  # a zoo run directory
            path = os.path.join(path, "vocabulary")
        elif not os.path.isdir(path):  # a .keras file or a checkpoint prefix
            path = os.path.dirname(os.path.abspath(path))
    else:
        raise config_lib.ConfigError(
            "model.vocabulary: missing; a randomly initialized preset needs a vocabulary "
            "directory (make one with `zoo data vocab`), or set model.init_checkpoint")
    if not os.path.exists(path):
        raise FileNotFoundError(f"model.vocabulary {path}: no such file or directory")
    return path


def load_tokenizer(model_config, gpt=False):
    """The task tokenizer: WordPiece for BERT; GPT-1 BPE plus the fine-tuning tokens for GPT."""
    from zoo import tokenizers

    path = vocabulary_path(model_config)
    if os.path.isfile(path):
        if gpt:
            raise config_lib.ConfigError(f"model.vocabulary {path}: GPT-1 needs a directory "
                                         "with vocab.json and merges.txt")
        return tokenizers.WordPieceTokenizer(path, lowercase=True)
    if gpt:
        tokenizer = tokenizers.from_huggingface(
            path, special_tokens=tokenizers.GPT1_SPECIAL_TOKENS)
        if not isinstance(tokenizer, tokenizers.GPTTokenizer):
            raise config_lib.ConfigError(f"model.vocabulary {path}: GPT-1 needs its BPE "
                                         f"vocabulary (vocab.json + merges.txt), found a "
                                         f"{type(tokenizer).__name__}")
        return tokenizer
    tokenizer = tokenizers.from_huggingface(path)
    if not isinstance(tokenizer, tokenizers.WordPieceTokenizer):
        raise config_lib.ConfigError(f"model.vocabulary {path}: BERT needs a WordPiece "
                                     f"vocabulary (vocab.txt), found a "
                                     f"{type(tokenizer).__name__}")
    return tokenizer


def copy_vocabulary(model_config, run_dir):
    """Copy the vocabulary files into `run_dir/vocabulary` (atomically, once)."""
    target = os.path.join(run_dir, "vocabulary")
    if os.path.isdir(target):
        return target
    source = vocabulary_path(model_config)
    staging = tempfile.mkdtemp(prefix=".vocabulary.", dir=run_dir)
    try:
        if os.path.isfile(source):
            shutil.copy(source, os.path.join(staging, "vocab.txt"))
        else:
            for name in ("vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json",
                         "special_tokens_map.json"):
                if os.path.isfile(os.path.join(source, name)):
                    shutil.copy(os.path.join(source, name), staging)
        os.chmod(staging, 0o755)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def load_backbone(model_config, tokenizer, **overrides):
    """The backbone of a model config: a random preset, or the weights of `init_checkpoint`.

    `init_checkpoint` may be a `.keras` file (a backbone or any zoo head model), a zoo run
    directory (its final.keras, else best.keras), a Hugging Face folder or an original Google
    BERT checkpoint. The backbone must be of the preset's family and match the tokenizer's
    vocabulary; GPT-1's three fine-tuning tokens, when the checkpoint lacks them, get new
    embedding rows (N(0, 0.02), as the original's `n_special` rows). `model.backbone` and
    `overrides` change constructor arguments (dropout, causal ...) on the loaded weights.

    Two starting points are partial. A ViT checkpoint asked for another `image_size` is
    `with_image_size(size)`: its position embeddings interpolated to the new patch grid
    (ViT section 3.2, fine-tuning at a higher resolution). `model.transfer_layers: K` copies
    only the embeddings and the first K transformer blocks; the later blocks keep the fresh
    (seeded) initialisation of the preset (GPT-1 Figure 2, left). `tokenizer` is None for
    models without a vocabulary (ViT).
    """
    from zoo import models
    from zoo.models.presets import PRESETS

    if model_config.preset not in PRESETS:
        raise config_lib.ConfigError(f"model.preset: unknown preset {model_config.preset!r}; "
                                     f"known: {', '.join(PRESETS)}")
    family = models.BACKBONES[PRESETS[model_config.preset][0]]
    overrides = {**model_config.backbone, **overrides}
    transfer = model_config.transfer_layers
    if transfer is not None and not model_config.init_checkpoint:
        raise config_lib.ConfigError(f"model.transfer_layers {transfer}: copies blocks from "
                                     "model.init_checkpoint, which is not set")
    vocabulary = {} if tokenizer is None else {"vocabulary_size": int(tokenizer.vocabulary_size())}
    if not model_config.init_checkpoint:
        try:
            return models.create(model_config.preset, **{**vocabulary, **overrides})
        except TypeError as error:
            raise config_lib.ConfigError(f"model.backbone: {error}") from None
    source = model_config.init_checkpoint
    backbone = _load_checkpoint(source)
    if not isinstance(backbone, family):
        raise config_lib.ConfigError(
            f"model.init_checkpoint {source}: holds a {type(backbone).__name__}, but "
            f"model.preset {model_config.preset} is a {family.__name__}")
    size = vocabulary.get("vocabulary_size")
    grow = size - backbone.vocabulary_size if vocabulary else 0
    gpt_tokens = getattr(tokenizer, "special_tokens", [])
    if grow and not (family is models.GPTBackbone and 0 < grow <= len(gpt_tokens)):
        raise config_lib.ConfigError(
            f"model.init_checkpoint {source}: vocabulary size {backbone.vocabulary_size} "
            f"does not match the vocabulary's {size} tokens ({vocabulary_path(model_config)})")
    unknown = sorted(set(overrides) - set(backbone.config_keys))
    if unknown:
        raise config_lib.ConfigError(f"model.backbone: unknown key(s) {unknown}; "
                                     f"{family.__name__} takes {list(backbone.config_keys)}")
    if transfer is not None and transfer > backbone.num_layers:
        raise config_lib.ConfigError(
            f"model.transfer_layers {transfer}: model.init_checkpoint {source} has only "
            f"{backbone.num_layers} transformer blocks")
    image_size = overrides.pop("image_size", None)
    if image_size is not None and image_size != backbone.image_size:
        # ViT section 3.2: keep the patch size, interpolate the position embeddings in 2-D.
        backbone = backbone.with_image_size(image_size)
    unchanged = all(backbone.get_config()[k] == v for k, v in overrides.items())
    if not grow and unchanged and transfer is None:
        return backbone
    rebuilt = family.from_config({**backbone.get_config(), **overrides, **vocabulary})
    if transfer is not None:
        # Only the embeddings and blocks 0 .. K-1 are copied; the blocks after them keep the
        # initialisation `from_config` gave them (seeded by train.seed like any new weight).
        copied = [w for w in rebuilt.weights if not _in_block(w.path, transfer)]
    else:
        copied = rebuilt.weights
    old = {w.path: w for w in backbone.weights}
    for weight in copied:
        value = keras.ops.convert_to_numpy(old[weight.path])
        if weight.shape != value.shape:  # the token embedding, grown by the special tokens
            rng = np.random.default_rng(0)
            extra = rng.normal(0, 0.02, (weight.shape[0] - value.shape[0],) + value.shape[1:])
            value = np.concatenate([value, extra.astype(value.dtype)])
        weight.assign(value)
    return rebuilt


def _in_block(path, first):
    """Whether a weight path lies in `transformer_layer_<i>` with i >= first."""
    for part in path.split("/"):
        if part.startswith("transformer_layer_") and part[len("transformer_layer_"):].isdigit():
            return int(part[len("transformer_layer_"):]) >= first
    return False


def _load_checkpoint(path):
    from zoo import convert

    if os.path.isfile(os.path.join(path, "config.yaml")):  # a zoo run directory
        for name in ("final.keras", "best.keras"):
            if os.path.isfile(os.path.join(path, name)):
                return _backbone_of(keras.saving.load_model(os.path.join(path, name)))
        raise FileNotFoundError(f"model.init_checkpoint {path}: a run directory without "
                                "final.keras or best.keras (has the run finished?)")
    if path.endswith(".keras"):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"model.init_checkpoint {path}: no such file")
        return _backbone_of(keras.saving.load_model(path))
    if os.path.isfile(os.path.join(path, "config.json")):
        return convert.from_huggingface(path)
    folder, prefix = (path, None) if os.path.isdir(path) else (os.path.dirname(path), path)
    config_json = os.path.join(folder, "bert_config.json")
    if prefix is None:
        index = sorted(glob.glob(os.path.join(folder, "*.ckpt*.index")))
        prefix = index[0][:-len(".index")] if index else None
    if prefix and os.path.isfile(config_json):
        return convert.from_bert_checkpoint(prefix, config_json)
    raise FileNotFoundError(
        f"model.init_checkpoint {path}: expected a .keras file, a zoo run directory "
        "(config.yaml), a Hugging Face folder (config.json) or a Google BERT checkpoint "
        "(bert_config.json + bert_model.ckpt.*)")


def _backbone_of(model):
    from zoo.models import Backbone

    return model if isinstance(model, Backbone) else model.backbone


# === Runtime: precision, determinism, strategy ===


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
    from zoo.models import layout

    mesh = keras.distribution.DeviceMesh((batch, model), (layout.BATCH_AXIS, layout.MODEL_AXIS),
                                         devices)
    return keras.distribution.ModelParallel(layout_map=layout.layout_map(mesh),
                                            batch_dim_name=layout.BATCH_AXIS)


def _scope(train, distribution=None):
    """(scope, replicas, description) of `train.strategy`.

    `distribution` is the `jax_distribution` of a jax_* strategy (already checked), which
    train() makes current itself; its replicas are the size of the mesh's batch axis.
    """
    import contextlib

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


# === Data order ===


def traced_encoder(task, fn, *key):
    """`fn`, a task's batch encoder (tokenize + pack, TF ops), as a `tf.function` traced once
    per task, config and `key`, for `Dataset.map`.

    `Dataset.map` traces its function anew for every dataset, and a tokenizer with its
    packing is a large graph: 2-4 s per `task.dataset()` for WordPiece, up to 8.6 s for
    GPT-1's BPE, paid again at every `train.eval_every` evaluation. Inside `map`, a call to
    an already traced `tf.function` is one op. The config is part of the cache key, so a
    changed setting (say `data.pad_to_multiple_of`) traces again.
    """
    import tensorflow as tf

    cache = task.__dict__.setdefault("_traced_encoders", {})
    cache_key = (getattr(fn, "__name__", repr(fn)), repr(task.config)) + key
    if cache_key not in cache:
        cache[cache_key] = tf.function(fn)
    return cache[cache_key]


def example_order(n, split, seed, batch_size, repeat=False, skip_batches=0, order=None):
    """Example indices of a split, in the order every task feeds them to `model.fit`.

    The train split with `repeat=True` is an endless stream whose order is a pure function of
    (seed, position): each pass over the n examples is a fresh permutation
    (`tf.random.experimental.index_shuffle`, seeded by the pass number), so a resumed run
    that skips `skip_batches` batches sees exactly the batches an uninterrupted run would.
    Without `repeat` the train split is one pass, reshuffled at every iteration; other splits
    keep file order, which evaluation relies on, or the given `order` (`length_order`).

    Example:
        >>> order = example_order(5, "train", seed=0, batch_size=2, repeat=True, skip_batches=1)
        >>> first = example_order(5, "train", seed=0, batch_size=2, repeat=True)
        >>> [int(i) for i in order.take(3)] == [int(i) for i in first.skip(2).take(3)]
        True
    """
    import tensorflow as tf

    if split == "train" and repeat:
        start = skip_batches * batch_size
        return tf.data.Dataset.range(start, 2 ** 62).map(
            lambda i: tf.random.experimental.index_shuffle(
                i % n, seed=tf.stack([tf.constant(seed, tf.int64), i // n]), max_index=n - 1))
    if split == "train":
        return tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True)
    if order is not None:
        if sorted(int(i) for i in order) != list(range(n)):
            raise ValueError(f"order: not a permutation of the {n} examples")
        return tf.data.Dataset.from_tensor_slices(np.asarray(order, "int64"))
    return tf.data.Dataset.range(n)


def length_order(task, split, path=None):
    """The evaluation order of `data.sort_by_length`: example indices by ascending length.

    A length is the example's real tokens (the sum of its `padding_mask`; for several
    sequences per example, such as multiple-choice options, the longest), read from one pass
    of the task's own packing, so it is exact. Batches of similar lengths, padded dynamically
    (`data.pad_to_multiple_of`), then carry little padding. The sort is stable. None when
    `data.sort_by_length` is off: the file order.

    Returns:
        None, or an int64 array, a permutation of the examples; `in_file_order` undoes it.
    """
    if not task.config.data.sort_by_length:
        return None
    lengths = []
    for batch in task.dataset(split, path, batch_size=256):
        mask = np.asarray(batch[0]["padding_mask"])
        lengths.append((mask > 0).sum(-1).reshape(len(mask), -1).max(-1))
    return np.argsort(np.concatenate(lengths), kind="stable").astype("int64")


def in_file_order(values, order):
    """`values` predicted in `order` (`length_order`) put back in file order (a list or an
    array along its first axis); `order` None returns them as they are."""
    if order is None:
        return values
    if isinstance(values, np.ndarray):
        result = np.empty_like(values)
        result[order] = values
        return result
    result = [None] * len(values)
    for position, index in enumerate(order):
        result[index] = values[position]
    return result


# === Optimizer ===


def optimizer(train, model, steps_per_epoch, total_steps=None, warmup_steps=None):
    """The optimizer of a `TrainConfig` for `model`: every task's `compile` calls this.

    AdamW (or SGD, `train.optimizer`) on the warmup + decay schedule of `train`, with its
    clipping, weight decay and epsilon; the step counts come from `Schedule` unless given.
    """
    from zoo.optimization import build_optimizer

    if total_steps is None:
        schedule = Schedule(train, steps_per_epoch)
        total_steps, warmup_steps = schedule.total, schedule.warmup
    return build_optimizer(
        train.learning_rate, total_steps, warmup_steps, schedule=train.schedule,
        weight_decay=train.weight_decay, clip_norm=train.clip_norm, epsilon=train.adam_epsilon,
        model=model, optimizer=train.optimizer, momentum=train.momentum)


# === Callbacks ===


class Schedule:
    """Step counts of a run: total steps, warmup, rounds of `eval_every` steps."""

    def __init__(self, train, steps_per_epoch):
        self.steps_per_epoch = steps_per_epoch
        self.total = train.steps or max(1, math.ceil(train.epochs * steps_per_epoch))
        if train.warmup_steps is not None:
            self.warmup = train.warmup_steps
        else:
            self.warmup = int(round(train.warmup_fraction * self.total))
        if self.warmup > self.total:
            raise config_lib.ConfigError(f"train.warmup_steps {self.warmup} exceeds the "
                                         f"{self.total} training steps")
        self.eval_every = min(train.eval_every or steps_per_epoch, self.total)
        self.rounds = math.ceil(self.total / self.eval_every)


class StepLogger(keras.callbacks.Callback):
    """Progress bar and TensorBoard training scalars keyed by the optimizer's step.

    Written by hand because keras.callbacks.TensorBoard counts batches from 0 in every `fit`
    call (wrong after a resume) and logs the learning rate only once per epoch.
    """

    def __init__(self, log_dir, schedule, log_every):
        super().__init__()
        import tensorflow as tf

        self.writer = tf.summary.create_file_writer(os.path.join(log_dir, "train"))
        self.schedule, self.log_every = schedule, log_every
        self.bar = None

    def step(self):
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_train_begin(self, logs=None):
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(total=self.schedule.total, desc="train", unit="step",
                            dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 30)
        self.bar.n = self.step()
        self.bar.refresh()

    def on_train_batch_end(self, batch, logs=None):
        import tensorflow as tf

        step = self.step()
        self.bar.update(step - self.bar.n)
        logs = logs or {}
        if step % self.log_every and step != self.schedule.total:
            return
        optimizer = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)
        rate = optimizer.learning_rate
        if isinstance(optimizer._learning_rate, keras.optimizers.schedules.LearningRateSchedule):
            rate = optimizer._learning_rate(step - 1)  # the rate this step was taken with
        rate = float(keras.ops.convert_to_numpy(rate))
        with self.writer.as_default():
            tf.summary.scalar("learning_rate", rate, step=step)
            for name, value in logs.items():
                tf.summary.scalar(name, float(value), step=step)
        self.writer.flush()
        self.bar.set_postfix(loss=f"{float(logs.get('loss', math.nan)):.4f}", lr=f"{rate:.3g}")

    def close(self):
        if self.bar is not None:
            self.bar.close()
        self.writer.close()


class StopAt(keras.callbacks.Callback):
    """End training at `total` optimizer steps, mid-round if need be; stop on a NaN loss."""

    def __init__(self, total):
        super().__init__()
        self.total = total

    def on_train_batch_end(self, batch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        loss = float((logs or {}).get("loss", 0.0))
        if not math.isfinite(loss):
            # Raising (not stop_training) skips on_epoch_end, so no backup or best model is
            # written from the broken weights: the last good ones stay on disk.
            raise TrainingError(f"the training loss is {loss} at step {step}; the last good "
                                "checkpoint is kept in the run directory (backup/, "
                                "best.keras). Lower train.learning_rate or check the data.")
        if step >= self.total:
            self.model.stop_training = True


class RandomState(keras.callbacks.Callback):
    """Back up and restore the dropout random-number state with BackupAndRestore's backups.

    BackupAndRestore saves weights and optimizer, but not the layers' `SeedGenerator` states,
    so a resumed run would draw its dropout masks from the start of the stream again and end
    with other weights than an uninterrupted run. One small file per round, next to it.
    """

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir

    def _states(self):
        return [v for v in self.model.variables if "seed_generator_state" in v.path]

    def _path(self, round_):
        return os.path.join(self.backup_dir, f"random_state-{round_}.npz")

    def on_train_begin(self, logs=None):
        round_ = _backup_round(self.backup_dir)
        if round_ and os.path.isfile(self._path(round_)):
            with np.load(self._path(round_)) as saved:
                for variable in self._states():
                    variable.assign(saved[variable.path])

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(self.backup_dir, exist_ok=True)
        path = self._path(epoch + 1)
        fd, tmp = tempfile.mkstemp(prefix=".random_state.", suffix=".npz", dir=self.backup_dir)
        os.close(fd)
        np.savez(tmp, **{v.path: keras.ops.convert_to_numpy(v) for v in self._states()})
        os.replace(tmp, path)
        stale = self._path(epoch - 1)  # keep this round's and the previous one
        if os.path.exists(stale):
            os.remove(stale)


class Evaluator(keras.callbacks.Callback):
    """After every round: dev metrics to metrics.json and TensorBoard, best.keras if better."""

    def __init__(self, task, run_dir, examples_shown):
        super().__init__()
        import tensorflow as tf

        self.task, self.run_dir, self.examples_shown = task, run_dir, examples_shown
        self.writer = tf.summary.create_file_writer(os.path.join(run_dir, "logs", "eval"))

    def on_train_begin(self, logs=None):
        self.history = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.history is None:  # after on_train_begin, when BackupAndRestore has restored
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            # After a resume, evaluations later than the restored step are replayed.
            self.history = [e for e in read_metrics(self.run_dir) if e["step"] <= step]

    def on_epoch_end(self, epoch, logs=None):
        evaluate(self.task, self.model, self.run_dir, self.history, self.writer,
                 self.examples_shown)


def evaluate(task, model, run_dir, history, writer, examples_shown):
    """One evaluation of a training run: metrics.json, TensorBoard, best.keras."""
    import tensorflow as tf

    step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    metrics, predictions = task.evaluate(model, "dev", return_predictions=True)
    main = task.main_metric
    best = max((entry[main] for entry in history if math.isfinite(entry.get(main, math.nan))),
               default=-math.inf)
    history.append({"step": step, **metrics})
    write_text(os.path.join(run_dir, "metrics.json"), json.dumps(history, indent=1) + "\n")
    with writer.as_default():
        for name, value in metrics.items():
            tf.summary.scalar(name, value, step=step)
        if examples_shown and predictions:
            tf.summary.text("dev_examples", task.describe(predictions, examples_shown),
                            step=step)
    writer.flush()
    if metrics.get(main, -math.inf) > best:
        save_model(model, os.path.join(run_dir, "best.keras"))
        if hasattr(task, "save_extras"):  # what export needs besides the weights (SQuAD's tau)
            task.save_extras(run_dir, metrics)
    shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
    print(f"\nstep {step}: {shown}", flush=True)


# === zoo train ===


def check_run_dir(config, run_dir, overwrite):
    """Whether `run_dir` resumes this experiment; raise if it holds something else.

    Writes nothing: an empty or missing directory starts a new run, one with the same
    config.yaml and no final.keras resumes, anything else is refused unless `overwrite`.
    """
    if overwrite or not os.path.isdir(run_dir) or not os.listdir(run_dir):
        return False
    config_path = os.path.join(run_dir, "config.yaml")
    if not os.path.isfile(config_path):
        raise FileExistsError(f"--run-dir {run_dir}: exists and is not a zoo run directory "
                              "(no config.yaml); choose another or pass --overwrite")
    with open(config_path, encoding="utf-8") as file:
        existing = yaml.safe_load(file)
    differences = _differences(existing, config_lib.to_dict(config))
    if differences:
        raise FileExistsError(f"--run-dir {run_dir}: holds a different experiment ("
                              f"{'; '.join(differences[:5])}); pass --overwrite to replace it "
                              "or choose another --run-dir")
    if os.path.isfile(os.path.join(run_dir, "final.keras")):
        raise FileExistsError(f"--run-dir {run_dir}: this run is complete (final.keras); "
                              "pass --overwrite to train it again")
    return True


def create_run_dir(config, run_dir, overwrite):
    """Start a new run directory (replacing an old one with `overwrite`): config.yaml first."""
    if os.path.exists(run_dir) and overwrite:
        shutil.rmtree(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    write_text(os.path.join(run_dir, "config.yaml"),
               yaml.safe_dump(config_lib.to_dict(config), sort_keys=False))


def _differences(old, new, prefix=""):
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} there, {b!r} now")
    return out


def train(config, run_dir, overwrite=False):
    """Train `config` into `run_dir` (resuming it if it holds the same unfinished run).

    Returns:
        The last evaluation's metrics (dict).

    Example:
        >>> from zoo import config, training
        >>> experiment = config.resolve("bert/glue_mrpc", ["data.dir=samples/glue/MRPC"])
        >>> training.train(experiment, "runs/mrpc")  # doctest: +SKIP
    """
    import tasks

    train_config = config.train
    configure_devices(train_config)
    shared_backup = None
    if train_config.strategy == "multi_worker_mirrored" and keras.backend.backend() == \
            "tensorflow":
        make_strategy(train_config)  # before any other TF op: collectives start up first
        worker = cluster_worker()
        if not worker.chief:
            # The chief owns run_dir; another worker trains in lock-step and writes its own
            # files under run_dir/workers/<name>/, resuming from the chief's backup.
            shared_backup = os.path.join(run_dir, "backup")
            run_dir = os.path.join(run_dir, "workers", worker.name)
    task = tasks.create(config.task, config)  # reads and checks the data before anything
    resuming = check_run_dir(config, run_dir, overwrite)
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(train_config.mixed_precision)
    # Deterministic ops are switched back afterwards, so a script (or a test process) that
    # trains once does not run everything after it in the slower deterministic mode. TF has
    # no public switch-off; tensorflow.python.framework.config holds the one it uses.
    from tensorflow.python.framework import config as tf_config

    was_deterministic = tf_config.is_op_determinism_enabled()
    if train_config.deterministic and keras.backend.backend() == "tensorflow":
        tf_config.enable_op_determinism()
    keras.utils.set_random_seed(train_config.seed)
    logger = None
    previous_distribution = keras.distribution.distribution()
    try:
        # A JAX distribution must be current while the model is built (it places the
        # variables) and while it is fitted (it shards each batch), so it is set, not scoped.
        distribution = jax_distribution(train_config)
        if distribution is not None:
            keras.distribution.set_distribution(distribution)
        scope, replicas, where = _scope(train_config, distribution)
        if train_config.batch_size % replicas:
            raise config_lib.ConfigError(f"train.batch_size {train_config.batch_size} does "
                                         f"not split over {replicas} replicas")
        with scope:
            model = task.build_model()
            schedule = Schedule(train_config, task.steps_per_epoch())
            task.compile(model, total_steps=schedule.total, warmup_steps=schedule.warmup)
            _build(model)
        # Everything is checked and built: only now is the run directory written.
        if not resuming:
            create_run_dir(config, run_dir, overwrite)
        if getattr(task, "tokenizer", True) is not None:  # image tasks have no vocabulary
            copy_vocabulary(config.model, run_dir)
        print(f"{config.task}: {type(model).__name__} of {model.count_params():,} parameters,"
              f" {schedule.total} steps of {train_config.batch_size} ({where})"
              f", evaluation every {schedule.eval_every} steps", flush=True)
        backup_dir = os.path.join(run_dir, "backup")
        if shared_backup is not None:
            resuming = _copy_backup(shared_backup, backup_dir) or resuming
        start_round = _backup_round(backup_dir) if resuming else 0
        if resuming and start_round:
            print(f"resuming {run_dir} at step {start_round * schedule.eval_every}", flush=True)
        logger = StepLogger(os.path.join(run_dir, "logs"), schedule, train_config.log_every)
        callbacks = [
            StopAt(schedule.total),
            logger,
            Evaluator(task, run_dir, train_config.eval_examples),
            RandomState(backup_dir),  # written before the backup that refers to it
            # double_checkpoint: a backup torn by a kill falls back to the previous one.
            keras.callbacks.BackupAndRestore(backup_dir, double_checkpoint=True,
                                             delete_checkpoint=False),
        ]
        _write_hparams(config, run_dir, task)
        for phase in task.phases(schedule):
            if start_round >= phase.last_round:
                continue
            first = max(start_round, phase.first_round)
            skip = (first - phase.first_round) * schedule.eval_every
            dataset = phase.dataset(skip)
            model.fit(dataset, epochs=phase.last_round, initial_epoch=first,
                      steps_per_epoch=schedule.eval_every, callbacks=callbacks, verbose=0,
                      shuffle=False)
            start_round = phase.last_round
        save_model(model, os.path.join(run_dir, "final.keras"))
        shutil.rmtree(backup_dir, ignore_errors=True)
    finally:
        if logger is not None:
            logger.close()
        keras.config.set_dtype_policy(previous_policy)
        keras.distribution.set_distribution(previous_distribution)
        if not was_deterministic:
            tf_config.disable_op_determinism()
    history = read_metrics(run_dir)
    return {k: v for k, v in history[-1].items() if k != "step"} if history else {}


@dataclasses.dataclass
class Phase:
    """Rounds [first_round, last_round) trained on `dataset(skip_batches)`."""

    first_round: int
    last_round: int
    dataset: object


def _copy_backup(source, target):
    """Replace `target` with a copy of the backup in `source`; False if there is none."""
    if not os.path.isdir(source):
        return False
    staging = target + ".copy"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(staging, target)
    return True


def _backup_round(backup_dir):
    """The round a BackupAndRestore backup will resume at (0 without one)."""
    for name in ("training_metadata.json", "training_metadata.json.bkp"):
        path = os.path.join(backup_dir, name)
        if os.path.isfile(path):
            try:
                with open(path) as file:
                    return int(json.load(file)["epoch"])
            except (ValueError, KeyError):
                continue
    return 0


def _build(model):
    """Create the optimizer variables before BackupAndRestore loads a backup into them."""
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)


def _write_hparams(config, run_dir, task):
    """The run's settings and dev metrics for TensorBoard's HParams dashboard."""
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp

    values = {"task": config.task, "preset": config.model.preset,
              "init_checkpoint": str(config.model.init_checkpoint)}
    for key, value in dataclasses.asdict(config.train).items():
        if isinstance(value, (int, float, str, bool)):
            values[f"train.{key}"] = value
    with tf.summary.create_file_writer(os.path.join(run_dir, "logs", "hparams")).as_default():
        hp.hparams(values, trial_id=os.path.basename(os.path.abspath(run_dir)))


def train_seeds(config, run_dir, seeds, overwrite=False):
    """Fine-tune with `seeds` seeds in `run_dir/seed_<s>` and report mean and std per metric.

    BERT section 4.1: on small datasets fine-tuning is unstable, so several restarts are run
    and the best on dev is selected. Writes `run_dir/seeds.json` and returns its content.
    """
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp

    if os.path.exists(run_dir) and overwrite:
        shutil.rmtree(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    results = {}
    for i in range(seeds):
        seed = config.train.seed + i
        sub = dataclasses.replace(config, train=dataclasses.replace(config.train, seed=seed))
        sub_dir = os.path.join(run_dir, f"seed_{seed}")
        if os.path.isfile(os.path.join(sub_dir, "final.keras")) and not overwrite:
            history = read_metrics(sub_dir)
            results[seed] = {k: v for k, v in history[-1].items() if k != "step"}
            continue
        results[seed] = train(sub, sub_dir)
    names = sorted({name for metrics in results.values() for name in metrics})
    summary = {"seeds": list(results), "runs": {str(s): m for s, m in results.items()}}
    for name in names:
        values = [metrics[name] for metrics in results.values() if name in metrics]
        summary[name] = {"mean": float(np.mean(values)), "std": float(np.std(values)),
                         "min": float(np.min(values)), "max": float(np.max(values))}
    write_text(os.path.join(run_dir, "seeds.json"), json.dumps(summary, indent=1) + "\n")
    with tf.summary.create_file_writer(os.path.join(run_dir, "logs")).as_default():
        hp.hparams_config(hparams=[hp.HParam("train.seed")],
                          metrics=[hp.Metric(name, group="eval") for name in names])
    return summary


def train_sweep(config, run_dir, overwrite=False):
    """One run per value of `config.sweep`, in `run_dir/<key>=<value>/`, and a table of them.

    E.g. `sweep: {model.features: [embeddings, last, ...]}` trains the feature-based NER model
    once per feature combination (BERT Table 7). Each sub-run is an ordinary run directory
    (resumable; a finished one is kept, not retrained); `run_dir/config.yaml` holds the whole
    experiment, so another experiment is refused. Each row reports the sub-run's best
    evaluation by the task's main metric (the checkpoint `zoo evaluate` uses), as Table 7
    reports dev scores. Writes `run_dir/sweep.json` (every metric) and `run_dir/table.md` (the
    main metric and the other overall scores).

    Returns:
        {"main_metric": ..., "runs": {name: {"step": ..., metrics ...}}}.
    """
    import tasks

    runs = config_lib.sweep_runs(config)
    if os.path.exists(run_dir) and overwrite:
        shutil.rmtree(run_dir)
    check_run_dir(config, run_dir, overwrite=False)  # another experiment there is refused
    if not os.path.isfile(os.path.join(run_dir, "config.yaml")):
        create_run_dir(config, run_dir, overwrite=False)
    main = tasks.create(config.task, runs[0][1], check_data=False).main_metric
    results = {}
    for name, sub in runs:
        sub_dir = os.path.join(run_dir, name)
        if not os.path.isfile(os.path.join(sub_dir, "final.keras")):
            print(f"sweep {name} ({len(results) + 1} of {len(runs)})", flush=True)
            train(sub, sub_dir)
        history = [e for e in read_metrics(sub_dir) if math.isfinite(e.get(main, math.nan))]
        results[name] = max(history, key=lambda e: e[main]) if history else {}
    summary = {"main_metric": main, "runs": results}
    write_text(os.path.join(run_dir, "sweep.json"), json.dumps(summary, indent=1) + "\n")
    # The table shows the main metric and the other overall scores (per-type and count
    # entries such as PER_f1 or tokens stay in sweep.json).
    names = [main] + sorted({k for r in results.values() for k, v in r.items()
                             if isinstance(v, float) and "_" not in k} - {main})
    rows = ["| " + " | ".join(["run"] + names + ["step"]) + " |",
            "|" + "---|" * (len(names) + 2)]
    for name, metrics in results.items():
        cells = [f"{metrics[k]:.4f}" if isinstance(metrics.get(k), float) else
                 str(metrics.get(k, "")) for k in names + ["step"]]
        rows.append("| " + " | ".join([name] + cells) + " |")
    write_text(os.path.join(run_dir, "table.md"), "\n".join(rows) + "\n")
    return summary


# === zoo evaluate ===


def load_run(run_dir, checkpoint="best"):
    """The experiment and model of a run directory (`best` falls back to `final`)."""
    config_path = os.path.join(run_dir, "config.yaml")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"--run-dir {run_dir}: not a zoo run directory (no "
                                "config.yaml)")
    with open(config_path, encoding="utf-8") as file:
        config = config_lib.from_dict(yaml.safe_load(file), config_path)
    names = [f"{checkpoint}.keras"] + (["final.keras"] if checkpoint == "best" else [])
    for name in names:
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            return config, keras.saving.load_model(path)
    raise FileNotFoundError(f"--run-dir {run_dir}: no {' or '.join(names)} (has it trained?)")


def evaluate_run(run_dir, split="dev", data=None, checkpoint="best"):
    """Metrics of a trained run on a split (or on the file `data`); writes predictions.

    Returns:
        dict of metrics (empty for a file without labels); predictions go to
        `run_dir/predictions/<split>.tsv` (MNLI: one file per dev set) in the format
        `zoo score` reads.
    """
    import tasks

    config, model = load_run(run_dir, checkpoint)
    config = dataclasses.replace(
        config, model=dataclasses.replace(config.model, vocabulary=os.path.join(run_dir,
                                                                               "vocabulary"),
                                          init_checkpoint=None))
    task = tasks.create(config.task, config, check_data=False)
    metrics, predictions = task.evaluate(model, split, path=data, return_predictions=True)
    for name, entry in predictions.items():
        task.write_predictions(os.path.join(run_dir, "predictions"), name, entry)
    if hasattr(task, "save_extras") and metrics:
        task.save_extras(run_dir, metrics)
    return metrics
