"""`zoo reproduce`: a paper's table as a grid of ordinary runs, our numbers beside the paper's.

A table is data, one YAML file under configs/reproduce/<family>/<table>.yaml:

    title, source        what the table is and where its numbers come from
    reference            the row the paper's effects are read against (e.g. full)
    vocabulary           {kind: wordpiece|bpe, size: N}: learnt on the corpus unless
                         `--set model.vocabulary=DIR` names one
    pretraining          {name: {experiment, set: [k=v ...], shards: bool, train_examples}}:
                         the pretraining runs the rows start from (shards: the experiment
                         reads `zoo data pretrain` shards, written from the corpus)
    columns              {name: {title, experiment, metric, percent, train_examples}}: one
                         fine-tuning task per column; `metric` is a key of its metrics.jsonl;
                         `source: pretraining` reads the row's pretraining run instead
    rows                 {name: {title, pretraining: name|null, set: [...], paper: {column:
                         number}}}: null is "w/o pre-training" (random initialization)
    scales               {paper|small|sample: {description, seeds, columns, set,
                         pretraining_set, finetuning_set, vocabulary_size}}

`set` of a scale applies to every run, `pretraining_set` / `finetuning_set` to one kind; a
pretraining entry's `model.*` settings carry over to the rows that start from it (the
architecture must match its checkpoint). The user's `--set` comes last and wins.

Every cell is an ordinary run directory under RUN (`RUN/pretraining/<name>`,
`RUN/cells/<row>/<column>/seed_<s>`), trained by `tasks.runs.train` exactly as `zoo train`
would (RUN/commands.sh holds those commands). A finished cell (final.keras) is never
retrained; an interrupted one resumes from its backup, so a killed `zoo reproduce` run again
ends with the same numbers. RUN/table.md and RUN/table.csv put the paper's number and ours
(mean ± std over seeds of the final evaluation) side by side, with whether each effect
against the reference row has the paper's sign.
"""

import copy
import csv
import io
import json
import math
import os
import re
import time

import numpy as np
import yaml

from zoo import config as config_lib
from zoo import files
from zoo.data.samples.common import CORPUS, LAYOUT
from zoo.files import write_text

TABLE_ROOT = os.path.join(os.path.dirname(config_lib.CONFIG_ROOT), "reproduce")
SCALES = ("paper", "small", "sample")
# --dry-run's estimate of accelerator hours: 6 x parameters x tokens (forward and backward of
# the dense layers; attention's own products ignored) at 40 TFLOP/s sustained, about 13 % of
# an A100's bfloat16 peak or a third of a V100's float16 peak. An estimate to plan with.
SUSTAINED_FLOPS = 40e12
_TOP = {"title", "source", "reference", "vocabulary", "pretraining", "columns", "rows",
        "scales", "note"}
_PRETRAINING = {"experiment", "set", "shards", "train_examples"}
_COLUMN = {"title", "experiment", "metric", "percent", "train_examples", "source"}
_ROW = {"title", "pretraining", "set", "paper"}
_SCALE = {"description", "seeds", "columns", "set", "pretraining_set", "finetuning_set",
          "vocabulary_size"}


class TableError(ValueError):
    """A table YAML that cannot be used; the message names the file and the key."""


def table_path(name):
    """The YAML of `name`: `family/table` under configs/reproduce, or a path to a .yaml."""
    if name.endswith((".yaml", ".yml")):
        if not files.isfile(name):
            raise TableError(f"{name}: no such file")
        return name
    path = os.path.join(TABLE_ROOT, name + ".yaml")
    if not files.isfile(path):
        raise TableError(f"no table {name!r}; known tables: {', '.join(table_names())}")
    return path


def table_names():
    """The tables under configs/reproduce, as `family/table`."""
    return sorted(os.path.relpath(os.path.join(root, f), TABLE_ROOT)[:-5].replace(os.sep, "/")
                  for root, _, names in files.walk(TABLE_ROOT) for f in names
                  if f.endswith(".yaml"))


def load_table(name):
    """The table `name` as a dict, checked: every key known, every experiment and override
    resolvable, every paper number attached to a row and a column."""
    path = table_path(name)
    with files.open(path, encoding="utf-8") as file:
        try:
            table = yaml.safe_load(file)
        except yaml.YAMLError as error:
            raise TableError(f"{path}: invalid YAML: {error}") from None
    if not isinstance(table, dict):
        raise TableError(f"{path}: expected a mapping, found {type(table).__name__}")
    _known(table, _TOP, path, "")
    for key in ("title", "source", "reference", "columns", "rows", "scales"):
        if key not in table:
            raise TableError(f"{path}: {key}: missing")
    table.setdefault("pretraining", {})
    for name_, entry in table["pretraining"].items():
        _known(entry, _PRETRAINING, path, f"pretraining.{name_}.")
        entry.setdefault("set", [])
    for name_, column in table["columns"].items():
        _known(column, _COLUMN, path, f"columns.{name_}.")
        column.setdefault("percent", True)
        if "metric" not in column:
            raise TableError(f"{path}: columns.{name_}.metric: missing")
        if column.get("source", "finetuning") not in ("finetuning", "pretraining"):
            raise TableError(f"{path}: columns.{name_}.source: finetuning or pretraining")
    for name_, row in table["rows"].items():
        _known(row, _ROW, path, f"rows.{name_}.")
        row.setdefault("set", [])
        row.setdefault("paper", {})
        if row.get("pretraining") is not None and row["pretraining"] not in table["pretraining"]:
            raise TableError(f"{path}: rows.{name_}.pretraining: {row['pretraining']!r} is not "
                             f"in pretraining ({', '.join(table['pretraining'])})")
        for column in row["paper"]:
            if column not in table["columns"]:
                raise TableError(f"{path}: rows.{name_}.paper.{column}: no such column")
    if table["reference"] not in table["rows"]:
        raise TableError(f"{path}: reference: {table['reference']!r} is not a row")
    for scale, entry in table["scales"].items():
        if scale not in SCALES:
            raise TableError(f"{path}: scales.{scale}: expected one of {', '.join(SCALES)}")
        _known(entry, _SCALE, path, f"scales.{scale}.")
        for column in entry.get("columns", []):
            if column not in table["columns"]:
                raise TableError(f"{path}: scales.{scale}.columns: no column {column!r}")
    table["path"] = path
    for scale in table["scales"]:  # every cell's config resolves at every scale
        for step in plan(table, scale, "DATA", "RUN", seeds=1, vocabulary="VOCAB"):
            if step["kind"] in ("pretraining", "finetuning"):
                try:
                    config_lib.resolve(step["experiment"], step["overrides"])
                except config_lib.ConfigError as error:
                    raise TableError(f"{path}: scale {scale}, {step['name']}: {error}") from None
    return table


def _known(entry, allowed, path, prefix):
    if not isinstance(entry, dict):
        raise TableError(f"{path}: {prefix.rstrip('.') or 'table'}: expected a mapping")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise TableError(f"{path}: {prefix}{unknown[0]}: unknown key; known: "
                         f"{', '.join(sorted(allowed))}")


def _task_dir(data_root, experiment):
    """data.dir of an experiment's task under a `zoo data samples`-shaped data root."""
    task = config_lib.resolve(experiment).task
    if task.startswith("pretrain/"):
        return os.path.join(data_root, os.path.dirname(CORPUS))
    split = next(iter(LAYOUT[task].values()))
    return os.path.join(data_root, os.path.dirname(split))


def plan(table, scale, data_root, run_dir, seeds=None, overrides=(), vocabulary=None):
    """The steps of a reproduction, in order: [{kind, name, experiment, overrides, run_dir}].

    kind is "vocabulary", "shards", "pretraining" or "finetuning"; a fine-tuning step also
    has row, column and seed. `vocabulary` is the vocabulary folder (default RUN/vocabulary,
    learnt first); `seeds` defaults to the scale's.
    """
    if scale not in table["scales"]:
        raise TableError(f"{table['path']}: no scale {scale!r}; it has "
                         f"{', '.join(table['scales'])}")
    entry = table["scales"][scale]
    seeds = seeds or entry.get("seeds", 1)
    user = list(overrides)
    vocabulary = vocabulary or _override(user, "model.vocabulary")
    steps = []
    if vocabulary is None:
        vocabulary = os.path.join(run_dir, "vocabulary")
        kind = table["vocabulary"]
        steps.append({"kind": "vocabulary", "name": "vocabulary", "run_dir": vocabulary,
                      "vocabulary_kind": kind["kind"],
                      "size": entry.get("vocabulary_size", kind["size"]),
                      "corpus": os.path.join(data_root, os.path.dirname(CORPUS))})
    common = list(entry.get("set", [])) + [f"model.vocabulary={vocabulary}"]
    rows = table["rows"]
    columns = entry.get("columns") or list(table["columns"])
    used = [name for name in table["pretraining"]
            if any(row.get("pretraining") == name for row in rows.values())]
    shards = os.path.join(run_dir, "data", "shards")
    pretraining, lengths = [], []
    for name in used:
        pre = table["pretraining"][name]
        pre_overrides = common + list(entry.get("pretraining_set", [])) + pre["set"] + user
        data = _task_dir(data_root, pre["experiment"])
        if pre.get("shards"):  # `zoo data pretrain` of the corpus, one folder for all
            config = config_lib.resolve(pre["experiment"], pre_overrides)
            lengths += [p.sequence_length for p in config.data.phases] or [
                config.data.sequence_length]
            data = shards
        pretraining.append({"kind": "pretraining", "name": f"pretraining {name}",
                            "experiment": pre["experiment"],
                            "run_dir": os.path.join(run_dir, "pretraining", name),
                            "overrides": [f"data.dir={data}"] + pre_overrides,
                            "train_examples": pre.get("train_examples")})
    if lengths:
        steps.append({"kind": "shards", "name": "shards", "run_dir": shards,
                      "corpus": os.path.join(data_root, os.path.dirname(CORPUS)),
                      "vocabulary": vocabulary, "lengths": sorted(set(lengths))})
    steps += pretraining
    for row_name, row in rows.items():
        pre = table["pretraining"].get(row.get("pretraining"))
        init = []
        if pre is not None:
            init = [f"model.init_checkpoint={os.path.join(run_dir, 'pretraining', row['pretraining'])}"]
            init += [s for s in pre["set"] if s.startswith("model.")]
        for column in columns:
            spec = table["columns"][column]
            if spec.get("source") == "pretraining":
                continue
            for i in range(seeds):
                cell = os.path.join(run_dir, "cells", row_name, column)
                base = (common + list(entry.get("finetuning_set", [])) + init + row["set"]
                        + user)
                seed = config_lib.resolve(spec["experiment"], base).train.seed + i
                steps.append({
                    "kind": "finetuning", "name": f"{row_name} / {column} / seed {seed}",
                    "row": row_name, "column": column, "seed": seed,
                    "experiment": spec["experiment"], "run_dir": os.path.join(cell,
                                                                              f"seed_{seed}"),
                    "overrides": ([f"data.dir={_task_dir(data_root, spec['experiment'])}"]
                                  + base + [f"train.seed={seed}"]),
                    "train_examples": spec.get("train_examples")})
    return steps


def _override(overrides, key):
    values = [o.partition("=")[2] for o in overrides if o.partition("=")[0].strip() == key]
    return values[-1] if values else None


def command(step):
    """The `zoo` command that runs `step` on its own."""
    if step["kind"] == "vocabulary":
        return (f"zoo data vocab --kind {step['vocabulary_kind']} --size {step['size']} "
                f"--corpus {step['corpus']}/*.txt --out {step['run_dir']}")
    if step["kind"] == "shards":
        return (f"zoo data pretrain --corpus {step['corpus']}/*.txt --vocab "
                f"{step['vocabulary']} --max-sequence-length "
                f"{' '.join(map(str, step['lengths']))} --out {step['run_dir']}")
    sets = " ".join(f"--set {_quote(o)}" for o in step["overrides"])
    return f"zoo train --experiment {step['experiment']} {sets} --run-dir {step['run_dir']}"


def _quote(text):
    return text if re.fullmatch(r"[\w./=:+,@-]+", text) else "'" + text.replace("'", "'\\''") + "'"


# === Running ===


def reproduce(table, scale, data_root, run_dir, seeds=None, overrides=(), overwrite=False,
              progress=print):
    """Run every step of `plan` not yet finished, then write RUN/table.md and RUN/table.csv.

    RUN/reproduce.json records the table, scale, seeds, data root and overrides: a run
    directory holding another reproduction is refused (`overwrite=True` replaces it).

    Returns:
        The table's cells: [{row, column, paper, values, mean, std, ...}] (see `results`).
    """
    from tasks import runs
    from zoo import training

    steps = plan(table, scale, data_root, run_dir, seeds, overrides)
    seeds = seeds or table["scales"][scale].get("seeds", 1)
    record = {"table": table["path"], "scale": scale, "seeds": seeds,
              "data_root": files.absolute(data_root), "overrides": list(overrides)}
    manifest = os.path.join(run_dir, "reproduce.json")
    if files.exists(run_dir) and overwrite:
        training.check_unlocked(run_dir)
        files.rmtree(run_dir)
    if files.isfile(manifest):
        with files.open(manifest, encoding="utf-8") as file:
            previous = json.load(file)
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
    timings = _read_json(timings_path, {})
    for number, step in enumerate(steps, 1):
        if _finished(step):
            continue
        progress(f"[{number}/{len(steps)}] {step['name']}")
        start = time.perf_counter()
        if step["kind"] == "vocabulary":
            from zoo.tokenizers import train_vocabulary

            train_vocabulary(_corpus(step["corpus"]), step["size"], step["vocabulary_kind"],
                             step["run_dir"])
        elif step["kind"] == "shards":
            from zoo.data.pretraining import write_pretraining_data

            write_pretraining_data(_corpus(step["corpus"]), step["vocabulary"], step["run_dir"],
                                   max_sequence_lengths=step["lengths"])
        else:
            import keras

            config = config_lib.resolve(step["experiment"], step["overrides"])
            runs.train(config, step["run_dir"])
            keras.backend.clear_session()
        timings[step["name"]] = round(time.perf_counter() - start, 1)
        write_text(timings_path, json.dumps(timings, indent=1) + "\n")
    cells = results(table, scale, steps, timings)
    write_outputs(table, scale, seeds, record, steps, cells, run_dir)
    return cells


def _finished(step):
    if step["kind"] == "vocabulary":
        return files.isfile(os.path.join(step["run_dir"], "tokenizer_config.json"))
    if step["kind"] == "shards":
        return all(files.isfile(os.path.join(step["run_dir"], f"seq{length}", "pretraining.json"))
                   for length in step["lengths"])
    return files.isfile(os.path.join(step["run_dir"], "final.keras"))


def _corpus(directory):
    corpus = sorted(files.glob(os.path.join(directory, "*.txt")))
    if not corpus:
        raise FileNotFoundError(f"{directory}: no *.txt corpus files (--data-root is laid out "
                                "as `zoo data samples` writes it: corpus/*.txt, glue/MRPC ...)")
    return corpus


def _read_json(path, default):
    if not files.isfile(path):
        return default
    with files.open(path, encoding="utf-8") as file:
        return json.load(file)


def _final_metrics(run_dir):
    from zoo import training

    history = training.read_metrics(run_dir)
    if not history:
        raise TableError(f"{run_dir}: no evaluation in metrics.jsonl")
    return history[-1]


def results(table, scale, steps, timings=None):
    """One entry per (row, column) of the scale: the paper's number, ours over the seeds
    (the final evaluation of each finished cell, as a percentage where the paper gives one),
    the effect against the reference row in both, and whether they point the same way."""
    timings = timings or {}
    by_cell = {}
    pretraining = {s["name"]: s for s in steps if s["kind"] == "pretraining"}
    for step in steps:
        if step["kind"] == "finetuning" and _finished(step):
            by_cell.setdefault((step["row"], step["column"]), []).append(step)
    columns = table["scales"][scale].get("columns") or list(table["columns"])
    cells = []
    for row_name, row in table["rows"].items():
        for column in columns:
            spec = table["columns"][column]
            if spec.get("source") == "pretraining":
                pre = pretraining.get(f"pretraining {row.get('pretraining')}")
                done = [pre] if pre is not None and _finished(pre) else []
            else:
                done = by_cell.get((row_name, column), [])
            values = []
            for step in done:
                metrics = _final_metrics(step["run_dir"])
                if spec["metric"] not in metrics:
                    raise TableError(f"{step['run_dir']}: no metric {spec['metric']!r} in "
                                     f"metrics.jsonl (it has {', '.join(sorted(metrics))})")
                values.append(metrics[spec["metric"]] * (100 if spec["percent"] else 1))
            cells.append({
                "row": row_name, "row_title": row.get("title", row_name), "column": column,
                "column_title": spec.get("title", column), "metric": spec["metric"],
                "paper": row["paper"].get(column), "values": values,
                "mean": float(np.mean(values)) if values else None,
                "std": float(np.std(values, ddof=1)) if len(values) > 1 else None,
                "seconds": round(sum(timings.get(s["name"], 0.0) for s in done), 1)})
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


# === Reporting ===


def _format(value, std=None, digits=1):
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text + (f" ± {std:.{digits}f}" if std is not None else "")


def backbone_parameters(experiment, overrides, vocabulary_size):
    """Parameters of the backbone an experiment builds (heads not counted), by building it."""
    import keras

    import zoo

    config = config_lib.resolve(experiment, overrides)
    backbone = zoo.models.create(config.model.preset, vocabulary_size=vocabulary_size,
                                 **config.model.backbone)
    count = backbone.count_params()
    keras.backend.clear_session()
    return count


def _vocabulary_size(table, scale, path):
    if files.isfile(os.path.join(path, "tokenizer_config.json")):
        from zoo import tokenizers

        return int(tokenizers.from_directory(path).vocabulary_size())
    return table["scales"][scale].get("vocabulary_size", table["vocabulary"]["size"])


def write_outputs(table, scale, seeds, record, steps, cells, run_dir):
    """RUN/table.md (paper beside ours, the effects, every cell's command and time) and
    RUN/table.csv (one line per row and column)."""
    vocabulary = next(o.partition("=")[2] for o in steps[-1]["overrides"]
                      if o.startswith("model.vocabulary="))
    size = _vocabulary_size(table, scale, vocabulary)
    parameters = {}
    for step in steps:
        if step["kind"] == "finetuning" and step["row"] not in parameters:
            parameters[step["row"]] = backbone_parameters(step["experiment"], step["overrides"],
                                                          size)
    columns = list(dict.fromkeys(c["column"] for c in cells))
    titles = {c["column"]: c["column_title"] for c in cells}
    lines = [f"# {table['title']}", "",
             f"Paper: {table['source']}. Scale: `{scale}` "
             f"({table['scales'][scale].get('description', '').strip()}). Seeds: {seeds} "
             "(ours: mean ± sample std of the final dev evaluation). Data: "
             f"`{record['data_root']}`.", "",
             f"Command: `zoo reproduce {_name(table)} --scale {scale} --seeds {seeds} "
             f"--data-root {record['data_root']} --run-dir {run_dir}"
             + "".join(f" --set {_quote(o)}" for o in record["overrides"]) + "`", "",
             "| row | " + " | ".join(f"{titles[c]} paper | ours" for c in columns)
             + " | backbone parameters | wall time |",
             "| --- |" + " --- | --- |" * len(columns) + " --- | --- |"]
    for row_name, row in table["rows"].items():
        mine = [c for c in cells if c["row"] == row_name]
        seconds = sum(c["seconds"] for c in mine)
        lines.append(f"| {row.get('title', row_name)} | " + " | ".join(
            f"{_format(c['paper'])} | {_format(c['mean'], c['std'])}" for c in mine)
            + f" | {parameters.get(row_name, 0):,} | {seconds / 60:.1f} min |")
    reference = table["rows"][table["reference"]].get("title", table["reference"])
    lines += ["", f"Effects against \"{reference}\" (row minus reference; the same direction "
              "as the paper?):", "", "| row | column | paper | ours | same direction |",
              "| --- | --- | --- | --- | --- |"]
    for cell in cells:
        if cell["row"] != table["reference"]:
            same = {True: "yes", False: "no", None: "-"}[cell["same_direction"]]
            lines.append(f"| {cell['row_title']} | {cell['column_title']} | "
                         f"{_signed(cell['paper_effect'])} | {_signed(cell['effect'])} | "
                         f"{same} |")
    lines += ["", "Cells (each an ordinary run directory; TensorBoard's HParams tab shows them "
              f"all: `tensorboard --logdir {run_dir}`):", "",
              "| step | seconds | command |", "| --- | --- | --- |"]
    timings = _read_json(os.path.join(run_dir, "timings.json"), {})
    for step in steps:
        lines.append(f"| {step['name']} | {timings.get(step['name'], '-')} | "
                     f"`{command(step)}` |")
    write_text(os.path.join(run_dir, "table.md"), "\n".join(lines) + "\n")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    fields = ["row", "row_title", "column", "column_title", "metric", "paper", "mean", "std",
              "seeds", "values", "paper_effect", "effect", "same_direction",
              "backbone_parameters", "seconds"]
    writer.writerow(["table", "scale"] + fields)
    for cell in cells:
        cell = dict(cell, seeds=len(cell["values"]),
                    values=" ".join(repr(v) for v in cell["values"]),
                    backbone_parameters=parameters.get(cell["row"], ""))
        writer.writerow([_name(table), scale] + ["" if cell[f] is None else cell[f]
                                                 for f in fields])
    write_text(os.path.join(run_dir, "table.csv"), out.getvalue())


def _signed(value):
    return "-" if value is None else f"{value:+.1f}"


def _name(table):
    path = files.absolute(table["path"])
    root = files.absolute(TABLE_ROOT)
    if path.startswith(root + os.sep):
        return os.path.relpath(path, root)[:-5].replace(os.sep, "/")
    return table["path"]


def describe(name):
    """`zoo reproduce --list`'s text of one table: its cells and the paper's numbers."""
    table = load_table(name)
    columns = table["columns"]
    lines = [f"{name}: {table['title']}", f"  paper: {table['source']}",
             "  columns: " + ", ".join(f"{c} ({s.get('title', c)}: {s.get('experiment', s.get('source'))} {s['metric']})"
                                       for c, s in columns.items()),
             "  rows (paper's numbers):"]
    for row_name, row in table["rows"].items():
        start = row.get("pretraining") or "no pre-training"
        numbers = ", ".join(f"{columns[c].get('title', c)} {v}" for c, v in row["paper"].items())
        sets = f"; {' '.join(row['set'])}" if row["set"] else ""
        lines.append(f"    {row_name}: {row.get('title', row_name)} [{start}{sets}]: {numbers}")
    for scale, entry in table["scales"].items():
        lines.append(f"  --scale {scale}: {entry.get('seeds', 1)} seed(s); "
                     f"{' '.join(entry.get('description', '').split())}")
    return "\n".join(lines)


def dry_run(table, scale, data_root, run_dir, seeds=None, overrides=()):
    """The plan as text: every step, its optimizer steps and the estimated accelerator hours
    (6 x backbone parameters x tokens / SUSTAINED_FLOPS), without training anything."""
    steps = plan(table, scale, data_root, run_dir, seeds, overrides)
    vocabulary = next(o.partition("=")[2] for o in steps[-1]["overrides"]
                      if o.startswith("model.vocabulary="))
    size = _vocabulary_size(table, scale, vocabulary)
    counted = {}
    lines = [f"{_name(table)} --scale {scale}: {len(steps)} steps "
             f"({sum(s['kind'] == 'finetuning' for s in steps)} fine-tuning runs)"]
    total = 0.0
    for step in steps:
        if step["kind"] not in ("pretraining", "finetuning"):
            lines.append(f"  {step['name']}: {command(step)}")
            continue
        config = config_lib.resolve(step["experiment"], step["overrides"])
        train = config.train
        if train.steps:
            updates = train.steps
        elif step.get("train_examples"):
            updates = math.ceil(train.epochs * step["train_examples"] / train.batch_size)
        else:
            updates = None
        key = (config.model.preset, json.dumps(config.model.backbone, sort_keys=True))
        if key not in counted:
            counted[key] = backbone_parameters(step["experiment"], step["overrides"], size)
        hours = None
        if updates is not None:
            phases = config.data.phases  # BERT A.2: 90 % of the steps at 128, 10 % at 512
            length = (sum(p.fraction * p.sequence_length for p in phases) if phases
                      else config.data.sequence_length)
            tokens = updates * train.batch_size * length
            hours = 6 * counted[key] * tokens / SUSTAINED_FLOPS / 3600
            total += hours
        lines.append(
            f"  {step['name']}: {step['experiment']}, {counted[key]:,} backbone parameters, "
            + (f"{updates:,} steps of {train.batch_size} x {length:g} tokens"
               f", ~{hours:.2f} accelerator hours" if updates is not None else
               f"{train.epochs:g} epochs (steps depend on the data)")
            + f"\n    {command(step)}")
    lines.append(f"estimated total: ~{total:.1f} accelerator hours at "
                 f"{SUSTAINED_FLOPS / 1e12:.0f} TFLOP/s sustained (6 x parameters x tokens; "
                 "an estimate to plan with)")
    return "\n".join(lines)
