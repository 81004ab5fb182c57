"""Experiments end to end: `zoo train` (one run, seeds, sweeps), `zoo evaluate`, `zoo export`
and `zoo convert --to hf` of a run directory.

This is the layer above the task registry: it builds the task of a config (`zoo_tasks.create`)
and hands it to the mechanisms of `zoo.training` (the fit loop, run directories, strategies)
and `zoo.export` (SavedModel signatures). `zoo.training.run_dir` says what a run directory
holds.

Examples:
    >>> from zoo_tasks import runs
    >>> from zoo import config
    >>> experiment = config.resolve("bert/glue_mrpc", ["data.dir=samples/glue/MRPC"])
    >>> runs.train(experiment, "runs/mrpc")  # doctest: +SKIP
"""

import dataclasses
import json
import math
import os

import numpy as np

import zoo_tasks
from zoo import config as config_lib
from zoo import convert, export, files, training
from zoo.files import write_text
from zoo.storage import storage_operation


def train(config, run_dir, overwrite=False):
    """Train `config` into `run_dir` (resuming it if it holds the same unfinished run).

    Returns:
        The last evaluation's metrics (dict).
    """
    run_dir, shared_backup = training.join_cluster(config.train, run_dir)
    task = zoo_tasks.create(config.task, config)  # reads and checks the data before anything
    return training.fit(config, task, run_dir, overwrite, shared_backup)


def _replace(run_dir, overwrite):
    """`--overwrite` on a seeds or sweep directory: delete it whole, first checking that no
    `zoo train` holds a run inside it (`zoo.training.check_unlocked`)."""
    if overwrite and files.exists(run_dir):
        training.check_unlocked(run_dir)
        files.rmtree(run_dir)


def train_seeds(config, run_dir, seeds, overwrite=False):
    """Fine-tune with `seeds` seeds in `run_dir/seed_<s>` and report mean and std per metric.

    BERT section 4.1: on small datasets fine-tuning is unstable, so several restarts are run
    and the best on dev is selected. Writes `run_dir/seeds.json` and returns its content.
    """
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp

    _replace(run_dir, overwrite)
    files.makedirs(run_dir)
    results = {}
    for i in range(seeds):
        seed = config.train.seed + i
        sub = dataclasses.replace(config, train=dataclasses.replace(config.train, seed=seed))
        sub_dir = os.path.join(run_dir, f"seed_{seed}")
        if files.isfile(os.path.join(sub_dir, "final.keras")) and not overwrite:
            history = training.read_metrics(sub_dir)
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
    runs = config_lib.sweep_runs(config)
    _replace(run_dir, overwrite)
    training.check_run_dir(config, run_dir, overwrite=False)  # another experiment: refused
    if not files.isfile(os.path.join(run_dir, "config.yaml")):
        training.create_run_dir(config, run_dir, overwrite=False)
    main = zoo_tasks.create(config.task, runs[0][1], check_data=False).main_metric
    results = {}
    for name, sub in runs:
        sub_dir = os.path.join(run_dir, name)
        if not files.isfile(os.path.join(sub_dir, "final.keras")):
            print(f"sweep {name} ({len(results) + 1} of {len(runs)})", flush=True)
            train(sub, sub_dir)
        history = [e for e in training.read_metrics(sub_dir)
                   if math.isfinite(e.get(main, math.nan))]
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


def load_task(run_dir, checkpoint="best"):
    """(config, task, model) of a run directory, the task reading the run's own vocabulary
    (`zoo_tasks.load_run`, which also writes text for a language model's run)."""
    run = zoo_tasks.load_run(run_dir, checkpoint)
    return run.config, run.task, run.model


def evaluate_run(run_dir, split="dev", data=None, checkpoint="best"):
    """Metrics of a trained run on a split (or on the file `data`); writes predictions.

    Returns:
        dict of metrics (empty for a file without labels); predictions go to
        `run_dir/predictions/<split>.tsv` (MNLI: one file per dev set) in the format
        `zoo score` reads.
    """
    config, task, model = load_task(run_dir, checkpoint)
    metrics, predictions = task.evaluate(model, split, path=data, return_predictions=True)
    directory = os.path.join(run_dir, "predictions")
    with storage_operation("writing the predictions", directory):  # a full or read-only disk
        for name, entry in predictions.items():
            task.write_predictions(directory, name, entry)
    if metrics:
        with storage_operation("writing the evaluation's results", run_dir):
            task.save_extras(run_dir, metrics)
    return metrics


def evaluate_model(loaded, data, split="dev", out=None):
    """Metrics of a loaded model (`zoo_tasks.load`: a checkpoint by name) on the file `data`;
    its predictions are written to the directory `out` when given, as `evaluate_run` writes a
    run's (named `split`).

    Returns:
        dict of metrics (empty for a file without labels).
    """
    task, model = loaded.task, loaded.model
    metrics, predictions = task.evaluate(model, split, path=data, return_predictions=True)
    if out is not None:
        with storage_operation("writing the predictions", out):  # a full or read-only disk
            for name, entry in predictions.items():
                task.write_predictions(out, name, entry)
    return metrics


def export_run(run_dir, base, version=None, checkpoint="best", progress=print,
               mixed_precision=None, quantize=None):
    """Export a run's model with its task's signatures to `base/<version>/`; returns the path.

    `zoo export`. The version is checked before anything is loaded; `zoo.export.write_version`
    says what is written and how.

    Args:
        run_dir: a `zoo train` run directory (any Keras backend: the `.keras` file is read
            into a TensorFlow graph).
        base: the model's base directory (TF Serving's `--model_base_path`).
        version: the version number; default one more than the highest there. An existing
            version is never overwritten.
        checkpoint: "best" (falling back to "final") or "final".
        progress: called with one line per stage.
        mixed_precision: serve under this Keras dtype policy ("float32", "mixed_bfloat16",
            "mixed_float16") instead of the run's own `train.mixed_precision`, or "auto":
            the faster of float32 and mixed_bfloat16 on this machine, timed
            (`zoo.export.dtype`). A model served under mixed_bfloat16 (so also a run trained
            under it) is exported with its dense and embedding weights in bfloat16
            (`export.with_bfloat16_weights`: the same answers).
        quantize: "int8" serves every Dense layer in int8 (`zoo.export.int8`); None: as trained.

    Examples:
        >>> export_run("runs/mrpc", "exports/mrpc")  # doctest: +SKIP
        'exports/mrpc/1'
    """
    version = export.new_version(base, version)
    progress(f"loading {run_dir} ({checkpoint} checkpoint)")
    config, task, model = load_task(run_dir, checkpoint)
    return export.write_version(task, model, base, version, config.train.mixed_precision,
                                mixed_precision, run_dir, checkpoint, progress, quantize)


def convert_run(run_dir, path, checkpoint="best", progress=False):
    """Write a run's model as a Hugging Face folder that `pipeline(task, model=path)` loads.

    `zoo convert RUN_DIR OUT --to hf`: the weights with their head (`zoo.convert.to_huggingface`
    says which heads), `id2label` from the task's label names (classes, NER tags, image
    class folders) and the run's own tokenizer files, or for images the image processor.

    Args:
        run_dir: a `zoo train` run directory.
        path: the folder to create; it must not exist.
        checkpoint: "best" (falling back to "final") or "final".
        progress: show a progress bar over the tensors.
    """

    _, task, model = load_task(run_dir, checkpoint)
    labels = task.labels
    convert.to_huggingface(model, path, progress=progress,
                           labels=None if labels is None else list(labels),
                           tokenizer=task.tokenizer, multi_label=task.multi_label)
