"""Running a reproduction: every unfinished step of the plan, then the results per cell."""

import json
import os
import time

import numpy as np
import yaml

from zoo import config as config_lib
from zoo import files, training
from zoo.data.pretraining import write_pretraining_data
from zoo.data.pretraining.corpus import default_workers, write_corpus
from zoo.files import write_text
from zoo.tokenizers import train_vocabulary
from zoo_tasks import runs, zero_shot
from zoo_tasks.reproduce import subsets
from zoo_tasks.reproduce.report import read_json, write_outputs
from zoo_tasks.reproduce.tables import (
    TRAINED,
    TableError,
    command,
    plan,
    scale_columns,
    scale_rows,
    table_name,
)


def reproduce(table, scale, data_root, run_dir, seeds=None, overrides=(), overwrite=False,
              progress=print, rows=None, lab=None, checkpoint=None):
    """Run every step of `plan` not yet finished, then write RUN/table.md and RUN/table.csv.

    RUN/reproduce.json records the table, scale, seeds, data root and overrides: a run
    directory holding another reproduction is refused (`overwrite=True` replaces it).
    `rows` (names of the scale's rows) runs only their steps and those they start from; the
    table shows the others' finished cells, "-" for the rest.

    `lab` trains the steps zoo does not (LAB_STEPS: a `baseline:` row's cells, a `library:`
    row's pretraining and cells): {(step kind, the row's baseline or library): train(config,
    run_dir, progress)}, the measurement lab's `zoo_benchmarks.rows.TRAINERS`, which `zoo
    reproduce` hands in from a clone of the repository. A wanted step it lacks stops the
    reproduction before anything runs. `checkpoint` replaces the table's `checkpoint` (what
    `{checkpoint}` stands for in its settings; recorded in RUN/reproduce.json).

    Returns:
        The table's cells: [{row, column, paper, values, mean, std, ...}] (see `results`).
    """
    steps = plan(table, scale, data_root, run_dir, seeds, overrides, checkpoint=checkpoint)
    wanted = _wanted(table, scale, steps, rows)
    lab = lab or {}
    _check_lab(steps, wanted, lab)
    seeds = seeds or table["scales"][scale].get("seeds", 1)
    record = {"table": table_name(table["path"]), "scale": scale, "seeds": seeds,
              "data_root": files.absolute(data_root), "overrides": list(overrides)}
    if table.get("checkpoint"):  # (only then: older records stay the same)
        record["checkpoint"] = checkpoint or table["checkpoint"]
    manifest = os.path.join(run_dir, "reproduce.json")
    if files.exists(run_dir) and overwrite:
        training.check_unlocked(run_dir)
        files.rmtree(run_dir)
    if files.isfile(manifest):
        with files.open(manifest, encoding="utf-8") as file:
            previous = json.load(file)
        previous["table"] = table_name(previous.get("table", ""))  # older runs: a path
        if previous != record:
            raise TableError(f"{run_dir} holds another reproduction ({previous}); use another "
                             "--run-dir or --overwrite")
    elif files.exists(run_dir) and files.listdir(run_dir):
        raise TableError(f"{run_dir} exists and is not a zoo reproduce directory; use another "
                         "--run-dir or --overwrite")
    files.makedirs(run_dir)
    write_text(manifest, json.dumps(record, indent=1) + "\n")
    write_text(os.path.join(run_dir, "commands.sh"),
               "".join(f"# {s['name']}\n{command(s)}\n" for s in steps))
    timings_path = os.path.join(run_dir, "timings.json")
    timings = read_json(timings_path, {})
    for number, step in enumerate(steps, 1):
        if _finished(step):
            _check_same_settings(step)
            continue
        if step["name"] not in wanted:
            continue
        progress(f"[{number}/{len(steps)}] {step['name']}")
        start = time.perf_counter()
        if step["kind"] == "corpus":
            counts = write_corpus(step["sources"], os.path.join(step["run_dir"], "corpus.txt"),
                                  text_column=step["text_column"],
                                  strip_html=step["strip_html"], workers=default_workers())
            progress(f"corpus: {counts['documents']} documents, {counts['sentences']} "
                     "sentences; " + "; ".join(counts["reports"]))
        elif step["kind"] == "subset":
            subsets.write_subset(step, progress)
        elif step["kind"] in LAB_STEPS:
            import keras

            lab[_lab_key(step)](config_lib.resolve(step["experiment"], step["overrides"]),
                                step["run_dir"], progress)
            keras.backend.clear_session()
            _check_columns(table, scale, step)
        elif step["kind"] == "vocabulary":
            train_vocabulary(_corpus(step["corpus"]), step["size"], step["vocabulary_kind"],
                             step["run_dir"])
        elif step["kind"] == "shards":
            write_pretraining_data(_corpus(step["corpus"]), step["vocabulary"], step["run_dir"],
                                   max_sequence_lengths=step["lengths"],
                                   dupe_factor=step["dupe_factor"])
        elif step["kind"] == "zero_shot":
            _zero_shot(step)
            _check_columns(table, scale, step)
        else:
            import keras

            config = config_lib.resolve(step["experiment"], step["overrides"])
            if files.isfile(os.path.join(step["run_dir"], "final.keras")):
                _check_same_settings(step)  # trained, not yet scored on its test file
            else:
                runs.train(config, step["run_dir"])
                keras.backend.clear_session()
            if step.get("test"):
                _score_test(step)
                keras.backend.clear_session()
            _check_columns(table, scale, step)
        timings[step["name"]] = round(time.perf_counter() - start, 1)
        write_text(timings_path, json.dumps(timings, indent=1) + "\n")
    cells = results(table, scale, steps, timings)
    write_outputs(table, scale, seeds, record, steps, cells, run_dir)
    return cells


# The steps the measurement lab trains (zoo_benchmarks/, beside the product), handed in as `lab`.
LAB_STEPS = ("baseline", "library_pretraining", "library_finetuning")


def _lab_key(step):
    return step["kind"], step["baseline"] if step["kind"] == "baseline" else step["library"]


def _check_lab(steps, wanted, lab):
    """Every unfinished step `wanted` that the lab trains has its trainer in `lab`."""
    missing = [step["name"] for step in steps if step["kind"] in LAB_STEPS
               and step["name"] in wanted and _lab_key(step) not in lab and not _finished(step)]
    if missing:
        more = f" (and {len(missing) - 1} more steps)" if len(missing) > 1 else ""
        raise TableError(f"{missing[0]}{more}: trained by the repository's measurement lab, "
                         "zoo_benchmarks/, which the installed zoo does not ship: run zoo "
                         "reproduce from a clone of the repository, or leave the row out with "
                         "--rows")


def _wanted(table, scale, steps, rows):
    """The names of the steps `rows` needs: their cells, the pretraining they start from,
    and the data steps (all steps when `rows` is None)."""
    if rows is None:
        return {step["name"] for step in steps}
    known = scale_rows(table, scale)
    unknown = [row for row in rows if row not in known]
    if unknown:
        raise TableError(f"--rows: no row {unknown[0]!r} at scale {scale} (its rows: "
                         f"{', '.join(known)})")
    starts = {f"pretraining {known[row]['pretraining']}"
              + (f" ({known[row]['library']})" if "library" in known[row] else "")
              for row in rows if known[row].get("pretraining")}
    return {step["name"] for step in steps
            if step["kind"] in ("subset", "corpus", "vocabulary", "shards")
            or step["name"] in starts
            or step.get("row") in rows}


def _zero_shot(step):
    """A zero-shot cell: `zoo evaluate --zero-shot` on the row's checkpoint; its numbers go to
    the cell's metrics.json (one entry, as a training run's evaluations) and to TensorBoard
    (logs/eval, and logs/hparams for the HParams tab, as a training run writes them), its
    predictions to the cell's predictions/."""
    import keras
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp

    if not files.exists(step["checkpoint"]):
        raise TableError(f"{step['name']}: no checkpoint {step['checkpoint']} (is the row's "
                         "`updates` a step at which its pretraining evaluated?)")
    result = zero_shot.evaluate(step["task"], step["checkpoint"], step["data"],
                                out=os.path.join(step["run_dir"], "predictions"))
    keras.backend.clear_session()
    numbers = {k: v for k, v in result.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    updates = step["updates"]
    if updates is None:  # the final model: the pretraining run's last step
        updates = _final_metrics(step["checkpoint"])["step"]
    logs = os.path.join(step["run_dir"], "logs")
    with tf.summary.create_file_writer(os.path.join(logs, "eval")).as_default():
        for name, value in numbers.items():
            tf.summary.scalar(name, value, step=updates)
    with tf.summary.create_file_writer(os.path.join(logs, "hparams")).as_default():
        hp.hparams({"task": f"zero-shot {step['task']}", "row": step["row"],
                    "init_checkpoint": step["checkpoint"], "updates": updates},
                   trial_id=f"{step['row']}/{step['column']}")
    # Last: metrics.json marks the cell finished (a kill before it redoes the whole cell).
    write_text(os.path.join(step["run_dir"], "metrics.json"),
               json.dumps([{"step": updates, **numbers}], indent=1) + "\n")


# A `score: test` column's cell: the final model's metrics on data.test_file, evaluated once
# after training (data.dev_file is the one training evaluates and recipes are chosen on).
TEST = "test.json"


def _score_test(step):
    """Score a finished cell's final model on its test file: CELL/test.json (one entry, as
    metrics.json's, written last: the cell's finished mark) and CELL/predictions/test.tsv."""
    _, task, model = runs.load_task(step["run_dir"], "final")
    metrics, predictions = task.evaluate(model, "test", return_predictions=True)
    for name, entry in predictions.items():
        task.write_predictions(os.path.join(step["run_dir"], "predictions"), name, entry)
    final = _final_metrics(step["run_dir"])["step"]
    write_text(os.path.join(step["run_dir"], TEST),
               json.dumps([{"step": final, **metrics}], indent=1) + "\n")


# The steps that fill a cell of the table.
CELLS = ("finetuning", "zero_shot", "baseline", "library_finetuning")


def _finished(step):
    if step["kind"] == "corpus":
        return files.isfile(os.path.join(step["run_dir"], "corpus.txt"))
    if step["kind"] == "subset":
        return files.isfile(os.path.join(step["run_dir"], subsets.MANIFEST))
    if step["kind"] == "vocabulary":
        return files.isfile(os.path.join(step["run_dir"], "tokenizer_config.json"))
    if step["kind"] == "shards":
        return all(files.isfile(os.path.join(step["run_dir"], f"seq{length}", "pretraining.json"))
                   for length in step["lengths"])
    if step["kind"] in ("zero_shot", "baseline", "library_pretraining", "library_finetuning"):
        # Their metrics.json is written last; a zoo run's at every evaluation: final.keras.
        return files.isfile(os.path.join(step["run_dir"], "metrics.json"))
    return files.isfile(os.path.join(step["run_dir"], TEST if step.get("test") else
                                     "final.keras"))


def _check_same_settings(step):
    """A finished cell was trained with the settings the plan gives it now; else (the table
    YAML or --set changed since) its numbers would be reported for settings it never had."""
    if step["kind"] not in TRAINED:
        return
    config = config_lib.resolve(step["experiment"], step["overrides"])
    with files.open(os.path.join(step["run_dir"], "config.yaml"), encoding="utf-8") as file:
        trained = yaml.safe_load(file)
    planned = config_lib.to_dict(config)
    changed = [section for section in planned if not isinstance(planned[section], dict)
               and planned[section] != trained.get(section)]
    changed += [f"{section}.{key}" for section in planned if isinstance(planned[section], dict)
                for key in planned[section]
                if planned[section][key] != (trained.get(section) or {}).get(key)]
    if changed:
        raise TableError(f"{step['run_dir']}: finished with other settings than the table now "
                         f"gives this cell ({', '.join(changed[:5])}); the table YAML or --set "
                         "changed since: use another --run-dir or --overwrite")


def _corpus(directory):
    corpus = sorted(files.glob(os.path.join(directory, "*.txt")))
    if not corpus:
        raise FileNotFoundError(f"{directory}: no *.txt corpus files (--data-root is laid out "
                                "as `zoo data samples` writes it: corpus/*.txt, glue/MRPC ...)")
    return corpus


def _final_metrics(run_dir, test=False):
    history = (read_json(os.path.join(run_dir, TEST), []) if test
               else training.read_metrics(run_dir))
    if not history:
        raise TableError(f"{run_dir}: no evaluation in {TEST if test else 'metrics.json'}")
    return history[-1]


def _metric_value(run_dir, spec, test=False):
    """A column's number from a finished run: its metric in the final evaluation (`test`: of
    the test file, TEST), x 100 where the column is a percentage of a fraction (`percent`,
    the default)."""
    metrics = _final_metrics(run_dir, test)
    if spec["metric"] not in metrics:
        raise TableError(f"{run_dir}: no metric {spec['metric']!r} in metrics.json (it has "
                         f"{', '.join(sorted(metrics))}): fix the column's `metric`")
    value = metrics[spec["metric"]]
    if spec["percent"] and abs(value) > 1:  # fractions, correlations and MCC lie in [-1, 1]
        raise TableError(f"{run_dir}: {spec['metric']} is {value:g}, not a fraction, but the "
                         "column turns it into a percentage: if the task reports a percentage "
                         "already, give the column `percent: false`")
    return value * (100 if spec["percent"] else 1)


def _check_columns(table, scale, step):
    """Right after a step trains, the numbers its columns read from it: a wrong metric name
    or scale stops the reproduction at its first cell, not after the last."""
    if step["kind"] in CELLS:
        _metric_value(step["run_dir"], table["columns"][step["column"]], step.get("test"))
    elif step["kind"] in ("pretraining", "library_pretraining"):
        for column in scale_columns(table, scale):
            if table["columns"][column]["source"] == "pretraining":
                _metric_value(step["run_dir"], table["columns"][column])


def results(table, scale, steps, timings=None):
    """One entry per (row, column) of the scale: the paper's number, ours over the seeds
    (the final evaluation of each finished cell, as a percentage where the paper gives one),
    the effect against the reference row in both, and whether they point the same way."""
    timings = timings or {}
    by_cell = {}
    pretraining = {s["name"]: s for s in steps
                   if s["kind"] in ("pretraining", "library_pretraining")}
    for step in steps:
        if step["kind"] in CELLS and _finished(step):
            by_cell.setdefault((step["row"], step["column"]), []).append(step)
    columns = scale_columns(table, scale)
    cells = []
    for row_name, row in scale_rows(table, scale).items():
        for column in columns:
            spec = table["columns"][column]
            if spec["source"] == "pretraining":
                library = f" ({row['library']})" if "library" in row else ""
                pre = pretraining.get(f"pretraining {row.get('pretraining')}{library}")
                done = [pre] if pre is not None and _finished(pre) else []
            else:
                done = by_cell.get((row_name, column), [])
            values = [_metric_value(s["run_dir"], spec, s.get("test")) for s in done]
            cells.append({
                "row": row_name, "row_title": row.get("title", row_name), "column": column,
                "column_title": spec.get("title", column), "metric": spec["metric"],
                "paper": row["paper"].get(column), "values": values,
                "mean": float(np.mean(values)) if values else None,
                "std": float(np.std(values, ddof=1)) if len(values) > 1 else None,
                "seconds": round(sum(timings.get(s["name"], 0.0) for s in done), 1),
                "steps": [s["name"] for s in done]})
    reference = {c["column"]: c for c in cells if c["row"] == table["reference"]}
    for cell in cells:
        ref = reference[cell["column"]]
        cell["paper_effect"] = cell["effect"] = cell["same_direction"] = None
        if cell["row"] == table["reference"]:
            continue
        if cell["paper"] is not None and ref["paper"] is not None:
            cell["paper_effect"] = round(cell["paper"] - ref["paper"], 4)
        if cell["mean"] is not None and ref["mean"] is not None:
            cell["effect"] = cell["mean"] - ref["mean"]
        if cell["paper_effect"] is not None and cell["effect"] is not None:
            cell["same_direction"] = bool(np.sign(cell["paper_effect"]) == np.sign(cell["effect"]))
    return cells
