"""Callbacks of a `zoo train` run: progress bar and TensorBoard scalars, the step limit and
non-finite-loss stop, evaluation after every round (metrics.json, best.keras), the backup
after it, and the HParams summary. (The stop on SIGTERM / SIGINT is `preemption`.)
"""

import dataclasses
import json
import math
import os

import keras

from zoo import files, lora
from zoo.convert import ConversionError
from zoo.convert.hf_export import to_peft
from zoo.files import write_text
from zoo.progress import bar as progress_bar
from zoo.storage import storage_operation
from zoo.training import backups
from zoo.training.run_dir import checkpoint_path, read_metrics, save_model


class TrainingError(RuntimeError):
    """Training cannot go on (a non-finite loss); the message names the step."""


class StepLogger(keras.callbacks.Callback):
    """Progress bar and TensorBoard training scalars keyed by the optimizer's step.

    Written by hand because keras.callbacks.TensorBoard counts batches from 0 in every `fit`
    call (wrong after a resume) and logs the learning rate only once per epoch.
    """

    def __init__(self, log_dir, counts, log_every):
        super().__init__()
        import tensorflow as tf

        self.writer = tf.summary.create_file_writer(os.path.join(log_dir, "train"))
        self.counts, self.log_every = counts, log_every
        self.bar = None

    def step(self):
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_train_begin(self, logs=None):
        if self.bar is None:
            self.bar = progress_bar(total=self.counts.total, desc="train", unit="step")
        self.bar.n = self.step()
        self.bar.refresh()

    def on_train_batch_end(self, batch, logs=None):
        import tensorflow as tf

        step = self.step()
        self.bar.update(step - self.bar.n)
        logs = logs or {}
        if step % self.log_every and step != self.counts.total:
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


def drop_logs_after(log_dir, step):
    """Remove the TensorBoard events later than `step` from the event files under `log_dir`
    (train/ and eval/), so that a run resumed at `step` logs each later step once.

    A run killed after its last backup had logged steps it then trains again. Event files are
    TFRecords of `Event` protos; each file holding a later step is rewritten without those
    events to a temporary name and renamed over it. TensorBoard's own purge of "orphaned"
    steps needs a SessionLog START event, which TF2's summary API does not write.

    A file whose last record was cut off (a kill or a full disk while TensorFlow's writer
    flushed it) keeps its complete records up to that one; the torn tail goes too.
    """
    import tensorflow as tf

    for folder in ("train", "eval"):
        for path in files.glob(os.path.join(log_dir, folder, "events.out.tfevents.*")):
            records, torn = [], False
            try:
                for record in tf.data.TFRecordDataset(path):
                    records.append(bytes(record.numpy()))
            except tf.errors.DataLossError:  # a truncated record: the end of what was written
                torn = True
            kept = [r for r in records if tf.compat.v1.Event.FromString(r).step <= step]
            if len(kept) == len(records) and not torn:
                continue
            with files.atomic_path(path) as tmp:
                with tf.io.TFRecordWriter(tmp) as writer:
                    for record in kept:
                        writer.write(record)


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


class Backup(keras.callbacks.Callback):
    """After every round (and its evaluation): a committed backup of the step (`backups`)."""

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir

    def on_epoch_end(self, epoch, logs=None):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        backups.save(self.model, self.backup_dir, step)


class Evaluator(keras.callbacks.Callback):
    """After every round: dev metrics to metrics.json and TensorBoard, best.keras if better,
    and checkpoints/step_<N>.keras with `keep_checkpoints`."""

    def __init__(self, task, run_dir, examples_shown, keep_checkpoints=False):
        super().__init__()
        import tensorflow as tf

        self.task, self.run_dir, self.examples_shown = task, run_dir, examples_shown
        self.keep_checkpoints = keep_checkpoints
        self.best_saved_at = None  # the step of the last best.keras this process wrote
        self.writer = tf.summary.create_file_writer(os.path.join(run_dir, "logs", "eval"))

    def on_train_begin(self, logs=None):
        self.history = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.history is None:  # the first round of this `fit`: after a restored backup
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            # After a resume, evaluations later than the restored step are replayed.
            self.history = [e for e in read_metrics(self.run_dir) if e["step"] <= step]

    def on_epoch_end(self, epoch, logs=None):
        if evaluate(self.task, self.model, self.run_dir, self.history, self.writer,
                    self.examples_shown, self.keep_checkpoints):
            self.best_saved_at = self.history[-1]["step"]


def evaluate(task, model, run_dir, history, writer, examples_shown, keep_checkpoints=False):
    """One evaluation of a training run: metrics.json, TensorBoard, best.keras (and
    checkpoints/step_<N>.keras with `keep_checkpoints`). True when best.keras was written."""
    import tensorflow as tf

    step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    if keep_checkpoints:
        files.makedirs(os.path.join(run_dir, "checkpoints"))
        save_model(model, checkpoint_path(run_dir, step))
    metrics, predictions = task.evaluate(model, "dev", return_predictions=True)
    main = task.main_metric
    best = max((entry[main] for entry in history if math.isfinite(entry.get(main, math.nan))),
               default=-math.inf)
    history.append({"step": step, **metrics})
    path = os.path.join(run_dir, "metrics.json")
    with storage_operation("writing the metrics", path):
        write_text(path, json.dumps(history, indent=1) + "\n")
    with writer.as_default():
        for name, value in metrics.items():
            tf.summary.scalar(name, value, step=step)
        table = task.describe(predictions, examples_shown) if examples_shown and predictions \
            else ""
        if table:
            tf.summary.text("dev_examples", table, step=step)
    writer.flush()
    improved = metrics.get(main, -math.inf) > best
    if improved:
        save_model(model, os.path.join(run_dir, "best.keras"))
        task.save_extras(run_dir, metrics)  # what export needs besides the weights
        if lora.lora_layers(model):
            save_adapters(model, run_dir)
    # Per-label scores of your own data ("positive/f1") are printed only when the line stays
    # short; metrics.json and TensorBoard have them all.
    shown = metrics if len(metrics) <= 8 else {k: v for k, v in metrics.items() if "/" not in k}
    shown = ", ".join(f"{k} {v:.4f}" for k, v in shown.items())
    print(f"\nstep {step}: {shown}", flush=True)
    return improved


# Run directories whose model has no PEFT form (said once a process).
_NO_ADAPTERS = set()


def save_adapters(model, run_dir):
    """A LoRA run: the adapters of best.keras alone, as PEFT's folder `run_dir/adapters/`
    (`zoo.convert.hf_export.to_peft`), replacing the previous best's; a model with no
    transformers form gets none, said once."""
    path = os.path.join(run_dir, "adapters")
    staging = os.path.join(run_dir, ".adapters.new")
    files.remove_quietly(staging)
    try:
        with storage_operation("writing the adapters", path):
            to_peft(model, staging)
    except ConversionError as error:
        if run_dir not in _NO_ADAPTERS:
            _NO_ADAPTERS.add(run_dir)
            print(f"no {path}: {error}", flush=True)
        return
    files.remove_quietly(path)
    files.move_directory(staging, path)


def write_hparams(config, run_dir, task):
    """The run's settings and dev metrics for TensorBoard's HParams dashboard."""
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp

    values = {"task": config.task, "preset": config.model.preset,
              "init_checkpoint": str(config.model.init_checkpoint)}
    for key, value in dataclasses.asdict(config.train).items():
        if isinstance(value, (int, float, str, bool)):
            values[f"train.{key}"] = value
    with tf.summary.create_file_writer(os.path.join(run_dir, "logs", "hparams")).as_default():
        hp.hparams(values, trial_id=os.path.basename(files.absolute(run_dir).rstrip("/")))
