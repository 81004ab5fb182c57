"""The fit loop of `zoo train`: step counts and rounds, the optimizer and `compile_model`,
and `fit`, which trains a task (the contract of `zoo.training.task`) into a run directory and
resumes it.

Training is cut into rounds of `train.eval_every` steps (Keras "epochs"): each round ends with
an evaluation, a best-model check and a backup (`backups`). A run killed at any point and
started again with the same command restores the last committed backup, skips exactly the
batches already seen (the data order is a pure function of seed and position,
`zoo_tasks.data_order.example_order`) and ends with the weights an uninterrupted run would have.
SIGTERM or SIGINT stop it at the next step with a backup of that step (`preemption`).
"""

import contextlib
import math
import os

import keras

from zoo import config as config_lib
from zoo import files, lora
from zoo.optimization import build_optimizer
from zoo.storage import storage_operation
from zoo.training import backups, preemption, run_lock, starting_points
from zoo.training import callbacks as callbacks_lib
from zoo.training import distribution as distribution_lib
from zoo.training import run_dir as run_dir_lib


class StepCounts:
    """Step counts of a run: total steps, warmup, rounds of `eval_every` steps.

    Counts only: the learning-rate schedule's kind is the config key `train.schedule`, which
    `build_optimizer` reads.
    """

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


# Deprecated: the former name of `StepCounts`.
Schedule = StepCounts


def optimizer(train, model, steps_per_epoch, total_steps=None, warmup_steps=None):
    """The optimizer of a `TrainConfig` for `model`, as `compile_model` builds it.

    AdamW (or SGD, `train.optimizer`) on the warmup + decay schedule of `train`, with its
    clipping, weight decay and epsilon; the step counts come from `StepCounts` unless given.
    """
    if total_steps is None:
        counts = StepCounts(train, steps_per_epoch)
        total_steps, warmup_steps = counts.total, counts.warmup
    return build_optimizer(
        train.learning_rate, total_steps, warmup_steps, schedule=train.schedule,
        weight_decay=train.weight_decay, clip_norm=train.clip_norm, epsilon=train.adam_epsilon,
        model=model, optimizer=train.optimizer, momentum=train.momentum)


def compile_model(model, task, total_steps, warmup_steps):
    """`model.compile` with the optimizer of `task.config.train` on `total_steps` and
    `warmup_steps` (`optimizer`), and the task's own losses and metrics
    (`task.losses_and_metrics`)."""
    train = task.config.train
    model.compile(optimizer=optimizer(train, model, None, total_steps, warmup_steps),
                  jit_compile=train.jit_compile, **task.losses_and_metrics(model))


def fit(config, task, run_dir, overwrite=False, shared_backup=None):
    """Train `task` as `config` says into `run_dir`, resuming it if it holds the same
    unfinished run; returns the last evaluation's metrics (dict).

    `task` is built from `config` (zoo_tasks.create) after `distribution.join_cluster`, which
    gives the `run_dir` and `shared_backup` of this process. The run directory is locked
    against a second process (`run_lock`, `--overwrite` included) and written only once the
    model is built and compiled, so a bad config leaves nothing behind.
    """
    with run_lock.locked(run_dir):
        return _fit(config, task, run_dir, overwrite, shared_backup)


def _fit(config, task, run_dir, overwrite, shared_backup):
    train_config = config.train
    if (train_config.jit_compile and train_config.deterministic
            and keras.backend.backend() == "tensorflow"
            and not train_config.strategy.startswith("jax_")):  # refused for the backend
        # Keras (3.15, model_supports_jit) compiles no XLA under TF's op determinism: the step
        # would run in graph mode, the setting silently ignored.
        raise config_lib.ConfigError("train.jit_compile=true: TensorFlow runs no XLA under "
                                     "op determinism; set train.deterministic=false too")
    resuming = run_dir_lib.check_run_dir(config, run_dir, overwrite)
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
        distribution = distribution_lib.jax_distribution(train_config)
        if distribution is not None:
            keras.distribution.set_distribution(distribution)
        scope, replicas, where = distribution_lib.scope(train_config, distribution)
        if train_config.batch_size % replicas:
            raise config_lib.ConfigError(f"train.batch_size {train_config.batch_size} does "
                                         f"not split over {replicas} replicas")
        with scope:
            model = task.build_model()
            head = starting_points.keep_head(config.model, task.labels, model)
            lora.apply(model, train_config)  # train.lora_rank: adapters, head, LayerNorms
            counts = StepCounts(train_config, task.steps_per_epoch())
            compile_model(model, task, counts.total, counts.warmup)
            _build(model)
        # Everything is checked and built: only now is the run directory written.
        if not resuming:
            run_dir_lib.create_run_dir(config, run_dir, overwrite)
        if task.tokenizer is not None:  # image tasks have no vocabulary
            starting_points.copy_vocabulary(config.model, run_dir)
        else:
            starting_points.record_hub(config.model, run_dir)  # hub.json, as copy_vocabulary
        print(f"{config.task}: {type(model).__name__} of {model.count_params():,} parameters,"
              f" {counts.total} steps of {train_config.batch_size} ({where})"
              f", evaluation every {counts.eval_every} steps", flush=True)
        if head is not None:
            print(head, flush=True)
        if train_config.lora_rank:
            print(lora.describe(model, train_config), flush=True)
        backup_dir = os.path.join(run_dir, "backup")
        if shared_backup is not None:
            resuming = run_dir_lib.copy_backup(shared_backup, backup_dir) or resuming
        step = 0
        if resuming:
            for path in run_dir_lib.remove_temporaries(run_dir):
                print(f"removed {path}, left by a write that was cut off", flush=True)
            # Loaded in the model's strategy, as fit itself would load it.
            strategy = getattr(model, "distribute_strategy", None)
            with strategy.scope() if strategy is not None else contextlib.nullcontext():
                step = backups.restore(model, backup_dir)
        if step:
            print(f"resuming {run_dir} at step {step}", flush=True)
        if resuming:  # what was logged after the backup is trained (and logged) again
            callbacks_lib.drop_logs_after(os.path.join(run_dir, "logs"), step)
        logger = callbacks_lib.StepLogger(os.path.join(run_dir, "logs"), counts,
                                          train_config.log_every)
        evaluator = callbacks_lib.Evaluator(task, run_dir, train_config.eval_examples,
                                            train_config.keep_checkpoints)
        with preemption.signals_noted() as received:
            callbacks = [
                callbacks_lib.StopAt(counts.total),
                logger,
                evaluator,
                callbacks_lib.Backup(backup_dir),  # after the evaluation it may replay
                preemption.Preemption(received, backup_dir),
            ]
            callbacks_lib.write_hparams(config, run_dir, task)
            _train(model, task, counts, train_config, callbacks, step)
        final = os.path.join(run_dir, "final.keras")
        if evaluator.best_saved_at == int(keras.ops.convert_to_numpy(model.optimizer.iterations)):
            # best.keras was written after the last step: the same state, not saved twice
            with storage_operation("saving the model", final):
                files.link(os.path.join(run_dir, "best.keras"), final)
        else:
            run_dir_lib.save_model(model, final)
        files.remove_quietly(backup_dir)
    finally:
        if logger is not None:
            logger.close()
        keras.config.set_dtype_policy(previous_policy)
        keras.distribution.set_distribution(previous_distribution)
        if not was_deterministic:
            tf_config.disable_op_determinism()
    history = run_dir_lib.read_metrics(run_dir)
    return {k: v for k, v in history[-1].items() if k != "step"} if history else {}


def _train(model, task, counts, train_config, callbacks, step):
    """`model.fit` over the task's phases from `step` on. A round cut by a preemption is
    finished first, on its own (Keras counts an epoch's steps from its start)."""
    every = counts.eval_every
    if step >= counts.total:  # preempted at the last step: only the final model is left
        return
    start_round, within = divmod(step, every)
    for phase in task.phases(counts):
        if start_round >= phase.last_round:
            continue
        first = max(start_round, phase.first_round)
        skip = (first - phase.first_round) * every
        if first == start_round and within:
            dataset = distribution_lib.distributed_dataset(train_config, phase.dataset,
                                                           skip + within)
            _build_losses_and_metrics(model, dataset)
            model.fit(dataset, epochs=first + 1, initial_epoch=first,
                      steps_per_epoch=every - within, callbacks=callbacks, verbose=0,
                      shuffle=False)
            first, skip, within = first + 1, skip + every, 0
        if first < phase.last_round:
            dataset = distribution_lib.distributed_dataset(train_config, phase.dataset, skip)
            _build_losses_and_metrics(model, dataset)
            model.fit(dataset, epochs=phase.last_round, initial_epoch=first,
                      steps_per_epoch=every, callbacks=callbacks, verbose=0, shuffle=False)
        start_round = phase.last_round


def _build_losses_and_metrics(model, dataset):
    """Create the compiled losses' and metrics' variables before `fit` first traces its step.

    Why: outside a tf.distribute strategy Keras (3.15, TensorFlowTrainer._maybe_symbolic_build)
    leaves them to the first trace of the train step, and a tf.function that creates variables
    while tracing is traced a second time (TensorFlow's rule for variable creation). A model of
    several outputs has a loss tracker per output (GPT-1 with its auxiliary LM loss), so its
    runs built the train step twice: ~1 CPU-s at the suite's 2 x 64 GPT-1, 3-6 s at GPT-1's
    size (docs/measurements.md, "The test suite"). Keras's own symbolic build, the one it runs
    under a strategy, makes them from the dataset's element spec; no batch is read. Under a
    strategy, or on JAX and PyTorch, Keras builds them itself. tests/test_classification.py
    counts the traces.
    """
    if keras.backend.backend() != "tensorflow" or model._distribute_strategy is not None:
        return
    import tensorflow as tf

    if isinstance(dataset, tf.data.Dataset):
        model._symbolic_build(data_batch=dataset.element_spec)


def _build(model):
    """Create the optimizer variables before `backups.restore` loads a backup into them."""
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
