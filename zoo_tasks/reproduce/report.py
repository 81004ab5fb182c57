"""What a reproduction shows: RUN/table.md and table.csv, `--list`'s and `--dry-run`'s text."""

import csv
import io
import json
import math
import os

import zoo
from zoo import config as config_lib
from zoo import files, tokenizers
from zoo.files import write_text
from zoo_tasks.reproduce.tables import (
    SUSTAINED_FLOPS,
    command,
    load_table,
    plan,
    scale_rows,
    shell_quote,
    table_name,
)


def read_json(path, default):
    """The JSON document at `path` (any filesystem zoo.files reads), or `default` if absent."""
    if not files.isfile(path):
        return default
    with files.open(path, encoding="utf-8") as file:
        return json.load(file)


def _format(value, std=None, digits=1):
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text + (f" ± {std:.{digits}f}" if std is not None else "")


def backbone_parameters(experiment, overrides, vocabulary_size):
    """Parameters of the backbone an experiment builds (heads not counted), from its shapes:
    those of `model.init_checkpoint` where it is a Hugging Face BERT folder or a pretrained
    preset (the checkpoint's size, not the preset's), else of `model.preset`."""
    config = config_lib.resolve(experiment, overrides)
    source = config.model.init_checkpoint
    if source in zoo.models.PRESETS:  # a pretrained preset: its size, without a download
        return zoo.models.count_parameters(source, **config.model.backbone)
    sizes = _bert_folder_sizes(source) if source else None
    if sizes is not None:
        return zoo.models.count_parameters("bert_base", **{**sizes, **config.model.backbone})
    return zoo.models.count_parameters(config.model.preset, vocabulary_size=vocabulary_size,
                                       **config.model.backbone)


def _bert_folder_sizes(folder):
    """A Hugging Face BERT folder's sizes (config.json) as BertBackbone's arguments; None for
    anything else (a zoo run, a .keras file, another architecture)."""
    path = os.path.join(folder, "config.json")
    if not files.isfile(path):
        return None
    hf = read_json(path, {})
    if hf.get("model_type") != "bert":
        return None
    return {"vocabulary_size": hf["vocab_size"], "num_layers": hf["num_hidden_layers"],
            "hidden_dim": hf["hidden_size"], "num_heads": hf["num_attention_heads"],
            "intermediate_dim": hf["intermediate_size"],
            "max_sequence_length": hf["max_position_embeddings"],
            "num_segments": hf["type_vocab_size"]}


def _vocabulary_size(table, scale, path):
    if files.isfile(os.path.join(path, "tokenizer_config.json")):
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
        if (step["kind"] in ("finetuning", "zero_shot", "library_finetuning")
                and step["row"] not in parameters):  # (a baseline row has no backbone: 0)
            parameters[step["row"]] = backbone_parameters(step["experiment"], step["overrides"],
                                                          size)
    timings = read_json(os.path.join(run_dir, "timings.json"), {})
    columns = list(dict.fromkeys(c["column"] for c in cells))
    titles = {c["column"]: c["column_title"] for c in cells}
    lines = [f"# {table['title']}", "",
             f"Paper: {table['source']}. Scale: `{scale}`"
             + (f" ({' '.join(table['scales'][scale]['description'].split()).rstrip('.')})"
                if table["scales"][scale].get("description") else "")
             + f". Seeds: {seeds} "
             "(ours: mean ± sample std of the final "
             + ("model's score on the test file, read once after training; recipes chosen on "
                "the dev file" if any(table["columns"][c]["score"] == "test" for c in columns)
                else "dev evaluation") + "). Data: "
             f"`{record['data_root']}`.", "",
             f"Command: `zoo reproduce {_name(table)} --scale {scale} --seeds {seeds} "
             f"--data-root {record['data_root']} --run-dir {run_dir}"
             + (f" --checkpoint {shell_quote(record['checkpoint'])}"
                if record.get("checkpoint") else "")
             + "".join(f" --set {shell_quote(o)}" for o in record["overrides"]) + "`", "",
             f"Wall time: {sum(timings.values()) / 60:.1f} min for every step (a row's time "
             "below: its cells and the pretraining a column reads, each once; per step: "
             "timings.json and the last table).", "",
             "| row | " + " | ".join(
                 f"{titles[c]} {table.get('paper_title', 'paper')} | ours" for c in columns)
             + " | backbone parameters | wall time |",
             "| --- |" + " --- | --- |" * len(columns) + " --- | --- |"]
    for row_name, row in scale_rows(table, scale).items():
        mine = [c for c in cells if c["row"] == row_name]
        # Each step once: a pretraining read by two columns (MLM accuracy and loss) too.
        seconds = sum(timings.get(name, 0.0) for name in {n for c in mine for n in c["steps"]})
        size = f"{parameters[row_name]:,}" if row_name in parameters else "-"  # a baseline
        lines.append(f"| {row.get('title', row_name)} | " + " | ".join(
            f"{_format(c['paper'])} | {_format(c['mean'], c['std'])}" for c in mine)
            + f" | {size} | {seconds / 60:.1f} min |")
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
    return table_name(table["path"])


def _what(column):
    """What a column reads: its experiment, `pretraining`, or `zero-shot TASK`."""
    if column["source"] == "zero_shot":
        return f"zero-shot {column['task']}"
    return column.get("experiment") or column["source"]


def describe(name):
    """`zoo reproduce --list`'s text of one table: its cells and the paper's numbers."""
    table = load_table(name)
    columns = table["columns"]
    lines = [f"{name}: {table['title']}", f"  paper: {table['source']}",
             "  columns: " + ", ".join(
                 f"{c} ({s.get('title', c)}: {_what(s)} {s['metric']})"
                 for c, s in columns.items()),
             "  rows (" + (f"numbers {table['paper_title']}" if "paper_title" in table
                           else "paper's numbers") + "):"]
    for row_name, row in table["rows"].items():
        start = (f"baseline {row['baseline']}" if "baseline" in row
                 else row.get("pretraining") or "no pre-training")
        start += f", trained by {row['library']}" if "library" in row else ""
        numbers = ", ".join(f"{columns[c].get('title', c)} {v}" for c, v in row["paper"].items())
        sets = f"; {' '.join(row['set'])}" if row["set"] else ""
        lines.append(f"    {row_name}: {row.get('title', row_name)} [{start}{sets}]: {numbers}")
    for scale, entry in table["scales"].items():
        only = "".join(f"; {key} {', '.join(entry[key])}" for key in ("rows", "columns")
                       if entry.get(key))
        lines.append(f"  --scale {scale}: {entry.get('seeds', 1)} seed(s){only}; "
                     f"{' '.join(entry.get('description', '').split())}")
    return "\n".join(lines)


def dry_run(table, scale, data_root, run_dir, seeds=None, overrides=(), checkpoint=None):
    """The plan as text: every step, its optimizer steps and the estimated accelerator hours
    (6 x backbone parameters x tokens / SUSTAINED_FLOPS), without training anything."""
    steps = plan(table, scale, data_root, run_dir, seeds, overrides, checkpoint=checkpoint)
    vocabulary = next(o.partition("=")[2] for o in steps[-1]["overrides"]
                      if o.startswith("model.vocabulary="))
    size = _vocabulary_size(table, scale, vocabulary)
    counted = {}
    zero_shot = sum(s["kind"] == "zero_shot" for s in steps)
    lines = [f"{_name(table)} --scale {scale}: {len(steps)} steps "
             f"({sum(s['kind'] in ('finetuning', 'library_finetuning') for s in steps)} "
             "fine-tuning runs"
             + (f", {zero_shot} zero-shot evaluations" if zero_shot else "") + ")"]
    total = 0.0
    for step in steps:
        if step["kind"] not in ("pretraining", "finetuning", "library_pretraining",
                                "library_finetuning"):
            lines.append(f"  {step['name']}: {command(step)}")
            continue
        config = config_lib.resolve(step["experiment"], step["overrides"])
        train = config.train
        if train.steps:
            updates = train.steps
        elif step.get("train_examples") and scale != "sample":  # the real data's size
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
