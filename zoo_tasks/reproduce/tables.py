"""The tables of `zoo reproduce`: reading and checking a table's YAML, and its plan (every
step of a reproduction, in order, with the `zoo` command that runs it alone). The schema is in
`zoo_tasks.reproduce`'s docstring."""


import os
import re

import yaml

from zoo import config as config_lib
from zoo import files
from zoo.data.samples.common import CORPUS, LAYOUT
from zoo.training.run_dir import checkpoint_path
from zoo_tasks import zero_shot

TABLE_ROOT = os.path.join(os.path.dirname(config_lib.CONFIG_ROOT), "reproduce")
SCALES = ("paper", "small", "sample", "cpu")
# --dry-run's estimate of accelerator hours: 6 x parameters x tokens (forward and backward of
# the dense layers; attention's own products ignored) at 40 TFLOP/s sustained, about 13 % of
# an A100's bfloat16 peak or a third of a V100's float16 peak. An estimate to plan with.
SUSTAINED_FLOPS = 40e12
_TOP = {"title", "source", "reference", "vocabulary", "pretraining", "columns", "rows",
        "scales", "note", "corpus", "paper_title", "checkpoint", "subset"}
_CORPUS = {"from", "strip_html", "text_column"}
_SUBSET = {"splits", "labels", "seed"}
# The words of a table's settings that a reproduction fills in: --data-root, the folder of the
# table's `subset` (RUN/data/subset) and its `checkpoint` (the table's, or --checkpoint).
PLACEHOLDERS = ("data_root", "subset", "checkpoint")
# The rows the measurement lab trains (zoo_benchmarks/rows.py; not in the wheel): baselines.py's,
# and transformers_recipe.py's zoo recipe in the library.
BASELINES = ("bag_of_words",)
LIBRARIES = ("transformers",)
# The steps that train from an experiment config (config.yaml in their run directory).
TRAINED = ("pretraining", "finetuning", "library_pretraining", "library_finetuning")
_PRETRAINING = {"experiment", "set", "shards", "train_examples"}
_COLUMN = {"title", "experiment", "metric", "percent", "train_examples", "source", "set",
           "task", "score"}
_ROW = {"title", "pretraining", "set", "paper", "experiments", "updates", "baseline",
        "library"}
SOURCES = ("finetuning", "pretraining", "zero_shot")
_SCALE = {"description", "seeds", "rows", "columns", "set", "pretraining_set", "finetuning_set",
          "vocabulary_size", "pretraining_overrides", "row_overrides", "column_overrides",
          "dupe_factor"}


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


def table_name(path):
    """How a run directory records the table at `path`: `family/table` for one of zoo's
    (so a run started from a clone resumes under the installed wheel, whose configs live
    elsewhere), else the file's absolute path, links resolved."""
    if not path.endswith((".yaml", ".yml")):  # already a name
        return path
    real = files.absolute(path)
    if not files.is_remote(real):
        real = os.path.realpath(real)
    root = os.path.realpath(files.absolute(TABLE_ROOT))
    if real.startswith(root + os.sep) and real.endswith(".yaml"):
        return os.path.relpath(real, root)[:-5].replace(os.sep, "/")
    return real


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
    for key in ("title", "source", "reference", "vocabulary", "columns", "rows", "scales"):
        if key not in table:
            raise TableError(f"{path}: {key}: missing")
    table.setdefault("pretraining", {})
    _check_subset(table, path)
    if table["vocabulary"].get("kind") == "checkpoint" and not table.get("checkpoint"):
        raise TableError(f"{path}: vocabulary.kind: checkpoint (the checkpoint's own "
                         "vocabulary) needs the table's `checkpoint`")
    if "corpus" in table:
        _known(table["corpus"], _CORPUS, path, "corpus.")
        if not table["corpus"].get("from"):
            raise TableError(f"{path}: corpus.from: missing (paths under --data-root)")
    for name_, entry in table["pretraining"].items():
        _known(entry, _PRETRAINING, path, f"pretraining.{name_}.")
        entry.setdefault("set", [])
    for name_, column in table["columns"].items():
        _known(column, _COLUMN, path, f"columns.{name_}.")
        column.setdefault("percent", True)
        column.setdefault("set", [])
        if "metric" not in column:
            raise TableError(f"{path}: columns.{name_}.metric: missing")
        source = column.setdefault("source", "finetuning")
        if source not in SOURCES:
            raise TableError(f"{path}: columns.{name_}.source: one of {', '.join(SOURCES)}")
        if column.setdefault("score", "dev") not in ("dev", "test") or (
                column["score"] == "test" and source != "finetuning"):
            raise TableError(f"{path}: columns.{name_}.score: dev, or test (a fine-tuning column)")
        if source == "finetuning" and "experiment" not in column:
            raise TableError(f"{path}: columns.{name_}.experiment: missing")
        if source == "zero_shot" and column.get("task") not in zero_shot.TASKS:
            raise TableError(f"{path}: columns.{name_}.task: a zero-shot task, one of "
                             f"{', '.join(zero_shot.TASKS)}")
    for name_, row in table["rows"].items():
        _known(row, _ROW, path, f"rows.{name_}.")
        row.setdefault("set", [])
        row.setdefault("paper", {})
        row.setdefault("experiments", {})
        for column in row["experiments"]:
            if column not in table["columns"]:
                raise TableError(f"{path}: rows.{name_}.experiments.{column}: no such column")
        if row.get("pretraining") is not None and row["pretraining"] not in table["pretraining"]:
            raise TableError(f"{path}: rows.{name_}.pretraining: {row['pretraining']!r} is not "
                             f"in pretraining ({', '.join(table['pretraining'])})")
        if "library" in row and (row["library"] not in LIBRARIES or "updates" in row
                                 or "baseline" in row or row["experiments"]):
            raise TableError(f"{path}: rows.{name_}.library: one of {', '.join(LIBRARIES)}, "
                             "in a row without updates, baseline or experiments")
        if "baseline" in row and (row["baseline"] not in BASELINES or row.get("pretraining")):
            raise TableError(f"{path}: rows.{name_}.baseline: one of {', '.join(BASELINES)}, "
                             "in a row without a pretraining")
        if "updates" in row and (row.get("pretraining") is None or isinstance(
                row["updates"], bool) or not isinstance(row["updates"], int)
                or row["updates"] < 1):
            raise TableError(f"{path}: rows.{name_}.updates: a positive number of pre-training "
                             "updates, in a row with a pretraining")
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
        for row in entry.get("rows", []):
            if row not in table["rows"]:
                raise TableError(f"{path}: scales.{scale}.rows: no row {row!r}")
        if entry.get("rows") and table["reference"] not in entry["rows"]:
            raise TableError(f"{path}: scales.{scale}.rows: the reference row "
                             f"{table['reference']!r} must be one of them")
        for name_ in entry.get("column_overrides", {}):
            if name_ not in table["columns"]:
                raise TableError(f"{path}: scales.{scale}.column_overrides.{name_}: no such "
                                 "column")
        for name_ in entry.get("row_overrides", {}):
            if name_ not in table["rows"]:
                raise TableError(f"{path}: scales.{scale}.row_overrides.{name_}: no such row")
        for name_ in entry.get("pretraining_overrides", {}):
            if name_ not in table["pretraining"]:
                raise TableError(f"{path}: scales.{scale}.pretraining_overrides.{name_}: no "
                                 "such pretraining")
    table["path"] = path
    for scale in table["scales"]:  # every cell's config resolves at every scale
        step = {"name": "plan"}
        try:
            for step in plan(table, scale, "DATA", "RUN", seeds=1, vocabulary="VOCAB"):
                if step["kind"] in TRAINED:
                    config_lib.resolve(step["experiment"], step["overrides"])
        except config_lib.ConfigError as error:
            raise TableError(f"{path}: scale {scale}, {step['name']}: {error}") from None
    return table


def _check_subset(table, path):
    """`subset`: {splits: {name: {from, examples}}, labels: [...], seed}."""
    if "subset" not in table:
        return
    subset = table["subset"]
    _known(subset, _SUBSET, path, "subset.")
    if not isinstance(subset.get("labels"), list) or not subset["labels"]:
        raise TableError(f"{path}: subset.labels: the label names (the class folders), a list")
    seed = subset.setdefault("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TableError(f"{path}: subset.seed: a number >= 0, found {seed!r}")
    if not isinstance(subset.get("splits"), dict) or not subset["splits"]:
        raise TableError(f"{path}: subset.splits: {{name: {{from, examples}}}}, one at least")
    for name, split in subset["splits"].items():
        _known(split, {"from", "examples"}, path, f"subset.splits.{name}.")
        count = split.get("examples")
        if "from" not in split or isinstance(count, bool) or not isinstance(count, int) or (
                count < 1):
            raise TableError(f"{path}: subset.splits.{name}: `from` (a path under "
                             "--data-root) and `examples` (a positive number)")


def _known(entry, allowed, path, prefix):
    if not isinstance(entry, dict):
        raise TableError(f"{path}: {prefix.rstrip('.') or 'table'}: expected a mapping")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise TableError(f"{path}: {prefix}{unknown[0]}: unknown key; known: "
                         f"{', '.join(sorted(allowed))}")


def _task_dir(data_root, experiment):
    """data.dir of an experiment's task under a `zoo data samples`-shaped data root (None for
    a task of your own data, which names its files: `{data_root}/...` in the table's sets)."""
    task = config_lib.resolve(experiment).task
    if task.startswith("pretrain/"):
        return os.path.join(data_root, os.path.dirname(CORPUS))
    if task not in LAYOUT:  # your own data's tasks: their files are named by the table's sets
        return None
    split = next(iter(LAYOUT[task].values()))
    return os.path.join(data_root, os.path.dirname(split))


def plan(table, scale, data_root, run_dir, seeds=None, overrides=(), vocabulary=None,
         checkpoint=None):
    """The steps of a reproduction, in order: [{kind, name, experiment, overrides, run_dir}].

    kind is "corpus", "vocabulary", "shards", "pretraining", "finetuning", "baseline",
    "zero_shot", "library_pretraining" or "library_finetuning" (a `library:` row's steps,
    after all of zoo's); a fine-tuning
    step also has row, column and seed, a zero-shot step row, column, task, checkpoint and
    data. A row with `updates: N` starts from its pretraining's model after N updates (kept by
    `train.keep_checkpoints`, which its pretraining then sets). `vocabulary` is the vocabulary
    folder (default RUN/vocabulary, learnt first; `vocabulary: {kind: checkpoint}`: the
    checkpoint's); `seeds` defaults to the scale's. `checkpoint` is what `{checkpoint}` stands
    for in the table's settings (default: the table's `checkpoint`). A table with a `subset`
    first writes it ("subset" step: RUN/data/subset/<split>.csv, `{subset}` in its settings).
    """
    if scale not in table["scales"]:
        raise TableError(f"{table['path']}: no scale {scale!r}; it has "
                         f"{', '.join(table['scales'])}")
    entry = table["scales"][scale]
    seeds = seeds or entry.get("seeds", 1)
    user = list(overrides)
    checkpoint = checkpoint or table.get("checkpoint")
    subset = os.path.join(run_dir, "data", "subset")
    words = {"data_root": data_root, "subset": subset if "subset" in table else None,
             "checkpoint": checkpoint}

    def _expand(settings):
        return expand(settings, words, table["path"])

    vocabulary = vocabulary or _override(user, "model.vocabulary")
    if vocabulary is None and table["vocabulary"].get("kind") == "checkpoint":
        vocabulary = checkpoint
    steps = []
    if "subset" in table:  # a stratified sample of labelled examples, one folder for all
        spec = table["subset"]
        steps.append({"kind": "subset", "name": "subset", "run_dir": subset,
                      "labels": list(spec["labels"]), "seed": spec["seed"],
                      "splits": {name: {"source": os.path.join(data_root, split["from"]),
                                        "examples": split["examples"]}
                                 for name, split in spec["splits"].items()}})
    corpus = os.path.join(data_root, os.path.dirname(CORPUS))
    if "corpus" in table:  # `zoo data corpus` of the data root's documents, one folder for all
        spec = table["corpus"]
        corpus = os.path.join(run_dir, "data", "corpus")
        steps.append({"kind": "corpus", "name": "corpus", "run_dir": corpus,
                      "sources": [os.path.join(data_root, p) for p in spec["from"]],
                      "strip_html": bool(spec.get("strip_html", False)),
                      "text_column": spec.get("text_column", "text")})
    if vocabulary is None:
        vocabulary = os.path.join(run_dir, "vocabulary")
        kind = table["vocabulary"]
        steps.append({"kind": "vocabulary", "name": "vocabulary", "run_dir": vocabulary,
                      "vocabulary_kind": kind["kind"],
                      "size": entry.get("vocabulary_size", kind["size"]), "corpus": corpus})
    common = list(entry.get("set", [])) + [f"model.vocabulary={vocabulary}"]
    rows = scale_rows(table, scale)
    columns = scale_columns(table, scale)
    used = [name for name in table["pretraining"]
            if any(row.get("pretraining") == name for row in rows.values())]
    updates = {name: sorted({row["updates"] for row in rows.values()
                             if row.get("pretraining") == name and "updates" in row})
               for name in used}
    shards = os.path.join(run_dir, "data", "shards")
    pretraining, lengths, library = [], [], []
    for name in used:
        pre = table["pretraining"][name]
        keep = ["train.keep_checkpoints=true"] if updates[name] else []
        pre_overrides = _expand(common + list(entry.get("pretraining_set", []))
                                + _pre_set(table, entry, name) + keep + user)
        _check_updates(table, scale, name, pre["experiment"], pre_overrides, updates[name])
        data = _task_dir(data_root, pre["experiment"])
        if pre.get("shards"):  # `zoo data pretrain` of the corpus, one folder for all
            config = config_lib.resolve(pre["experiment"], pre_overrides)
            lengths += [p.sequence_length for p in config.data.phases] or [
                config.data.sequence_length]
            data = shards
        step = {"kind": "pretraining", "name": f"pretraining {name}",
                "experiment": pre["experiment"],
                "run_dir": os.path.join(run_dir, "pretraining", name),
                "overrides": [f"data.dir={data}"] + pre_overrides,
                "train_examples": pre.get("train_examples")}
        if any(r.get("pretraining") == name and "library" not in r for r in rows.values()):
            pretraining.append(step)
        for kind in sorted({r["library"] for r in rows.values()
                            if r.get("pretraining") == name and "library" in r}):
            # The same experiment and settings, trained by the library: after zoo's steps.
            library.append(dict(step, kind="library_pretraining", library=kind,
                                name=f"pretraining {name} ({kind})",
                                run_dir=os.path.join(run_dir, kind, "pretraining", name)))
    if lengths:
        steps.append({"kind": "shards", "name": "shards", "run_dir": shards, "corpus": corpus,
                      "vocabulary": vocabulary, "lengths": sorted(set(lengths)),
                      "dupe_factor": entry.get("dupe_factor", 1)})
    steps += pretraining
    for row_name, row in rows.items():
        pre = table["pretraining"].get(row.get("pretraining"))
        init, start = [], None
        if pre is not None:
            start = os.path.join(run_dir, "pretraining", row["pretraining"])
            if "library" in row:  # the library's pretraining, as the library saved it
                start = os.path.join(run_dir, row["library"], "pretraining", row["pretraining"],
                                     "model")
            if "updates" in row:
                start = checkpoint_path(start, row["updates"])
            init = [f"model.init_checkpoint={start}"]
            init += [s for s in _pre_set(table, entry, row["pretraining"])
                     if s.startswith("model.")]
        for column in columns:
            spec = table["columns"][column]
            if spec["source"] == "pretraining":
                continue
            if spec["source"] == "zero_shot":
                if start is None:
                    raise TableError(f"{table['path']}: rows.{row_name}: zero-shot column "
                                     f"{column!r} needs a row with a pretraining")
                pre_step = next(s for s in pretraining
                                if s["name"] == f"pretraining {row['pretraining']}")
                steps.append({
                    "kind": "zero_shot", "name": f"{row_name} / {column}", "row": row_name,
                    "column": column, "task": spec["task"], "checkpoint": start,
                    "updates": row.get("updates"),
                    "data": os.path.join(data_root, LAYOUT[spec["task"]]["dev"]),
                    "run_dir": os.path.join(run_dir, "cells", row_name, column),
                    "experiment": pre_step["experiment"], "overrides": pre_step["overrides"]})
                continue
            experiment = row["experiments"].get(column, spec.get("experiment"))
            cell = os.path.join(run_dir, "cells", row_name, column)
            base = _expand(common + list(entry.get("finetuning_set", [])) + init + spec["set"]
                           + list(entry.get("column_overrides", {}).get(column, []))
                           + row["set"] + list(entry.get("row_overrides", {}).get(row_name, []))
                           + user)
            task_dir = _task_dir(data_root, experiment)
            data = [f"data.dir={task_dir}"] if task_dir else []
            # `score: test`: the lab's trainers score their dev file once, at the end, and
            # choose nothing on it: theirs is the test file; zoo's cells score it after training.
            test = config_lib.resolve(experiment, base).data.test_file if (
                spec["score"] == "test") else None
            if spec["score"] == "test" and not test:
                raise TableError(f"{table['path']}: columns.{column}.score: test, and no "
                                 "data.test_file")
            lab = [f"data.dev_file={test}"] if test else []
            if "baseline" in row:  # no model of ours: one cell, no seeds (it has none)
                steps.append({
                    "kind": "baseline", "name": f"{row_name} / {column}", "row": row_name,
                    "column": column, "baseline": row["baseline"], "experiment": experiment,
                    "run_dir": cell, "overrides": data + base + lab})
                continue
            for i in range(seeds):
                seed = config_lib.resolve(experiment, base).train.seed + i
                step = {
                    "kind": "finetuning", "name": f"{row_name} / {column} / seed {seed}",
                    "row": row_name, "column": column, "seed": seed, "test": bool(test),
                    "experiment": experiment, "run_dir": os.path.join(cell, f"seed_{seed}"),
                    "overrides": data + base + [f"train.seed={seed}"],
                    "train_examples": spec.get("train_examples")}
                if "library" in row:
                    library.append(dict(step, kind="library_finetuning", test=False,
                                        library=row["library"],
                                        overrides=step["overrides"] + lab))
                else:
                    steps.append(step)
    return steps + library


def expand(overrides, words, path="table"):
    """The table's settings with its PLACEHOLDERS filled in: `{data_root}` is --data-root (own
    data's files live under it), `{subset}` the table's subset folder, `{checkpoint}` the
    checkpoint; one without a value is an error naming it."""
    expanded = []
    for setting in overrides:
        for word in PLACEHOLDERS:
            if "{" + word + "}" in setting:
                if words.get(word) is None:
                    raise TableError(f"{path}: {setting!r}: no {word} given (the table's "
                                     f"`{word}`, or zoo reproduce --{word.replace('_', '-')})")
                setting = setting.replace("{" + word + "}", words[word])
        expanded.append(setting)
    return expanded


def _check_updates(table, scale, name, experiment, overrides, updates):
    """Every `updates` of the rows on pretraining `name` is a step that evaluates (and so
    keeps a checkpoint), where the pretraining's steps and evaluation interval are set."""
    if not updates:
        return
    train = config_lib.resolve(experiment, overrides).train
    for count in updates:
        if train.steps is not None and count > train.steps:
            raise TableError(f"{table['path']}: scale {scale}: a row reads pretraining {name} "
                             f"after {count} updates, but it takes {train.steps}")
        if train.eval_every is not None and count % train.eval_every:
            raise TableError(f"{table['path']}: scale {scale}: a row reads pretraining {name} "
                             f"after {count} updates, not a multiple of its train.eval_every "
                             f"{train.eval_every} (a checkpoint is kept at each evaluation)")


def scale_rows(table, scale):
    """{name: row} of the rows a scale runs (its `rows`, default all), in the table's order."""
    names = table["scales"][scale].get("rows") or list(table["rows"])
    return {name: row for name, row in table["rows"].items() if name in names}


def scale_columns(table, scale):
    """[name] of the columns a scale runs (its `columns`, default all)."""
    return table["scales"][scale].get("columns") or list(table["columns"])


def _pre_set(table, scale_entry, name):
    """A pretraining's settings at a scale: its own, then the scale's for it."""
    return (list(table["pretraining"][name]["set"])
            + list(scale_entry.get("pretraining_overrides", {}).get(name, [])))


def _override(overrides, key):
    values = [o.partition("=")[2] for o in overrides if o.partition("=")[0].strip() == key]
    return values[-1] if values else None


def command(step):
    """The `zoo` command that runs `step` on its own."""
    if step["kind"] == "corpus":
        return (f"zoo data corpus --from {' '.join(step['sources'])} --out "
                f"{step['run_dir']}/corpus.txt --text-column {step['text_column']}"
                + (" --strip-html" if step["strip_html"] else ""))
    if step["kind"] == "subset":
        splits = ", ".join(f"{name}.csv: {split['examples']} of {split['source']}"
                           for name, split in step["splits"].items())
        return (f"# written by zoo reproduce into {step['run_dir']}: {splits} (stratified by "
                f"label, seed {step['seed']}; zoo_tasks.reproduce.subsets)")
    if step["kind"] == "baseline":
        sets = " ".join(f"--set {shell_quote(o)}" for o in step["overrides"])
        return (f"python -m zoo_benchmarks.baselines {step['baseline']} --experiment "
                f"{step['experiment']} {sets} --out {step['run_dir']}")
    if step["kind"] in ("library_pretraining", "library_finetuning"):
        sets = " ".join(f"--set {shell_quote(o)}" for o in step["overrides"])
        kind = "pretrain" if step["kind"] == "library_pretraining" else "finetune"
        return (f"python -m zoo_benchmarks.transformers_recipe {kind} --experiment "
                f"{step['experiment']} {sets} --out {step['run_dir']}")
    if step["kind"] == "vocabulary":
        return (f"zoo data vocab --kind {step['vocabulary_kind']} --size {step['size']} "
                f"--corpus {step['corpus']}/*.txt --out {step['run_dir']}")
    if step["kind"] == "zero_shot":
        return (f"zoo evaluate --zero-shot {step['task']} --run-dir {step['checkpoint']} "
                f"--data {step['data']}")
    if step["kind"] == "shards":
        return (f"zoo data pretrain --corpus {step['corpus']}/*.txt --vocab "
                f"{step['vocabulary']} --max-sequence-length "
                f"{' '.join(map(str, step['lengths']))} --dupe-factor {step['dupe_factor']} "
                f"--out {step['run_dir']}")
    sets = " ".join(f"--set {shell_quote(o)}" for o in step["overrides"])
    return f"zoo train --experiment {step['experiment']} {sets} --run-dir {step['run_dir']}"


def shell_quote(text):
    return text if re.fullmatch(r"[\w./=:+,@-]+", text) else "'" + text.replace("'", "'\\''") + "'"
