"""`zoo benchmark journey`: `zoo train` from the command to its metrics against transformers'
`Trainer` on the same checkpoint, data, recipe and machine (issue #53).

    zoo benchmark journey --checkpoint FOLDER --train-file train.csv --dev-file dev.csv \\
        [--sequence-length 64] [--batch-size 32] [--learning-rate 1e-4] [--epochs 1] \\
        [--lora-rank 8]

Each contender is a fresh process, timed from its start to its exit (and to its metrics file):
- zoo: `zoo train --experiment bert/text_classification` with only the recipe set (the
  checkpoint, the files and labels, sequence length, batch size, epochs, learning rate);
  everything else is zoo's default, as a user gets it. Dev accuracy: the run's metrics.json.
- transformers: `python -m zoo_benchmarks.journey_trainer` (`Trainer` with the same recipe;
  zoo's defaults for what the command leaves to them: warmup fraction, weight decay,
  gradient clipping, Adam epsilon, seed).
The contenders alternate, --repeats runs each; the run of median wall-clock is reported.

With --lora-rank R the journey is LoRA's (issue #63), three contenders on the same recipe:
- zoo LoRA: the same `zoo train` with `train.lora_rank=R` (alpha R, query and value; the
  head and the LayerNorms train);
- PEFT: the same Trainer with the model wrapped by `peft.get_peft_model` (`LoraConfig` r =
  alpha = R on query and value, the classifier and the LayerNorms in `modules_to_save`, as
  tests/test_lora.py's reference);
- zoo full: `zoo train` without LoRA, every weight training.
The targets: zoo LoRA at least as fast as PEFT, and faster than zoo's full fine-tuning.

Steps/s is the optimizer steps over the training part: from the moment training begins (zoo:
its TensorBoard writer's creation, just before `model.fit`; Trainer: `on_train_begin`) to the
last step's end (zoo: the last step's TensorBoard event; Trainer: `on_step_end`), so start-up
(imports, model and data) and evaluation are outside it; "steady" leaves out the steps before
the first logged one (zoo logs every train.log_every = 10 steps): tracing, compilation, warm-up.

Without --checkpoint (as under `zoo benchmark all`) the section builds its own: a BERT with
random weights (6 layers x 384 like all-MiniLM-L6-v2; 2 x 128 with --tiny), written as a
Hugging Face folder by `zoo.convert.to_huggingface` with a WordPiece vocabulary learnt on
the pydoc corpus and its BertTokenizerFast; and without --train-file, labeled lines of that
corpus (the label: whether the line says "the", a rule a model learns).
"""

import csv
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

import tensorflow as tf

from zoo import config as config_lib
from zoo import models, tokenizers
from zoo.convert import to_huggingface
from zoo_benchmarks.common import child_environment, corpus_lines, target_cell

EXPERIMENT = "bert/text_classification"
LABEL_WORD = "the"  # the built data's label: whether a line says it (48 % of the lines do)
LOADS = []  # the machine's 1-minute load average as each run starts


def _write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        writer.writerows(rows)


def build_data(folder, train_size, dev_size, seed=0):
    """Labeled lines of the pydoc corpus as folder/train.csv and folder/dev.csv (label "yes"
    when the line says LABEL_WORD, else "no"): (train path, dev path)."""
    lines = [line.strip() for line in corpus_lines(None) if len(line.split()) >= 3]
    random.Random(seed).shuffle(lines)
    if len(lines) < train_size + dev_size:
        raise ValueError(f"the corpus has {len(lines)} lines, fewer than {train_size} + "
                         f"{dev_size}")
    rows = [(line, "yes" if LABEL_WORD in re.findall(r"[a-z]+", line.lower()) else "no")
            for line in lines[:train_size + dev_size]]
    paths = os.path.join(folder, "train.csv"), os.path.join(folder, "dev.csv")
    _write_csv(paths[0], rows[:train_size])
    _write_csv(paths[1], rows[train_size:])
    return paths


def build_checkpoint(folder, tiny):
    """A random BERT as a Hugging Face folder (config.json, model.safetensors, vocab.txt and
    BertTokenizerFast's files) at folder/checkpoint: (its path, its vocabulary size)."""
    # lazy: transformers is of the benchmark extras, and report.py imports every section
    import transformers

    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as file:
        file.writelines(line + "\n" for line in corpus_lines(None))
    vocab = os.path.join(folder, "vocab")
    # Asked for 8,000 tokens the learner stops early, every word of the corpus a token (3,437),
    # in seconds; a smaller size makes it search for minutes.
    tokenizers.train_vocabulary([corpus], size=8000, kind="wordpiece", out=vocab)
    with open(os.path.join(vocab, "vocab.txt"), encoding="utf-8") as file:
        size = sum(1 for _ in file)
    sizes = {} if tiny else dict(num_layers=6, hidden_dim=384, num_heads=12)
    backbone = models.create("bert_tiny" if tiny else "bert_base", vocabulary_size=size,
                             **sizes)
    path = os.path.join(folder, "checkpoint")
    to_huggingface(backbone, path)
    transformers.BertTokenizerFast(os.path.join(vocab, "vocab.txt"),
                                   do_lower_case=True).save_pretrained(path)
    return path, size


def labels_of(path):
    """The labels of a CSV's label column, sorted as zoo sorts them (numerically when all
    are integers)."""
    with open(path, encoding="utf-8", newline="") as file:
        found = {row["label"] for row in csv.DictReader(file)}
    integers = all(re.fullmatch(r"-?\d+", label) for label in found)
    return sorted(found, key=int if integers else None)


def _settings(args):
    """The section's settings: its own flags, or their defaults under `zoo benchmark all`."""
    return {"checkpoint": getattr(args, "checkpoint", None),
            "train_file": getattr(args, "train_file", None),
            "dev_file": getattr(args, "dev_file", None),
            # Under `all`, one fine-tuning each at 64 tokens (the shared --sequence-length and
            # --repeats are the forward benchmarks'; --tiny keeps the shared length).
            "sequence_length": args.sequence_length if args.target == "journey" or getattr(
                args, "tiny", False) else 64,
            "batch_size": args.batch_size or 32,
            "learning_rate": getattr(args, "learning_rate", None) or 1e-4,
            "epochs": getattr(args, "epochs", None) or 1.0,
            "repeats": args.repeats if args.target == "journey" else 1,
            "tiny": getattr(args, "tiny", False),
            "lora_rank": getattr(args, "lora_rank", None)}


def zoo_overrides(s, labels):
    """The `--set` overrides of the zoo command: the recipe only."""
    return [f"model.init_checkpoint={s['checkpoint']}", f"data.train_file={s['train_file']}",
            f"data.dev_file={s['dev_file']}", f"data.labels={json.dumps(labels)}",
            f"data.sequence_length={s['sequence_length']}", f"train.batch_size={s['batch_size']}",
            f"train.epochs={s['epochs']:g}", f"train.learning_rate={s['learning_rate']:g}"]


def _train_events(run_dir):
    """(the train writer's creation time, [(step, wall time)] of its logged steps) from the
    run's TensorBoard event files."""
    created, steps = None, {}
    folder = os.path.join(run_dir, "logs", "train")
    for name in sorted(os.listdir(folder)):
        for record in tf.data.TFRecordDataset(os.path.join(folder, name)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            if event.HasField("file_version"):
                created = event.wall_time if created is None else min(created, event.wall_time)
            elif event.summary.value:
                steps[event.step] = event.wall_time
    return created, sorted(steps.items())


def _timed(command, log, cwd):
    """Run `command` in a fresh process (stdout and stderr to `log`): (start time, wall s)."""
    LOADS.append(os.getloadavg()[0])
    started = time.time()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                              env=child_environment())
    wall = time.time() - started
    if proc.returncode:
        with open(log, encoding="utf-8") as file:
            raise RuntimeError(f"{command[2:4]} failed (exit {proc.returncode}):\n"
                               f"{file.read()[-3000:]}")
    return started, wall


def _rates(begin, steps):
    """(steps/s from `begin` to the last step, steady steps/s after the first logged step);
    `steps` is [(step, time)] in order."""
    last_step, last = steps[-1]
    rate = last_step / (last - begin) if last > begin else None
    first_step, first = steps[0]
    steady = (last_step - first_step) / (last - first) if len(steps) > 1 else None
    return rate, steady


def run_zoo(s, labels, folder, tag, extra=()):
    """One `zoo train` run (`extra`: more `--set` overrides): a dict of its figures."""
    run_dir = os.path.join(folder, f"zoo_run_{tag}")
    command = [sys.executable, "-m", "zoo_cli.main", "train", "--experiment", EXPERIMENT,
               "--run-dir", run_dir]
    for override in [*zoo_overrides(s, labels), *extra]:
        command += ["--set", override]
    started, wall = _timed(command, os.path.join(folder, f"zoo_{tag}.log"), folder)
    metrics_path = os.path.join(run_dir, "metrics.json")
    with open(metrics_path, encoding="utf-8") as file:
        last = json.load(file)[-1]
    created, steps = _train_events(run_dir)
    rate, steady = _rates(created, steps)
    return {"wall": wall, "metrics_at": os.path.getmtime(metrics_path) - started,
            "startup": created - started, "training": steps[-1][1] - created,
            "steps": steps[-1][0], "rate": rate, "steady": steady,
            "accuracy": last["accuracy"]}


def run_trainer(s, labels, recipe, folder, tag):
    """One transformers Trainer run: a dict of its figures."""
    out = os.path.join(folder, f"trainer_{tag}", "metrics.json")
    os.makedirs(os.path.dirname(out))
    command = [sys.executable, "-m", "zoo_benchmarks.journey_trainer",
               "--checkpoint", s["checkpoint"], "--train-file", s["train_file"],
               "--dev-file", s["dev_file"], "--labels", *labels, "--out", out,
               "--sequence-length", str(s["sequence_length"]),
               "--batch-size", str(s["batch_size"]), "--learning-rate", str(s["learning_rate"]),
               "--epochs", str(s["epochs"]), *recipe]
    started, wall = _timed(command, os.path.join(folder, f"trainer_{tag}.log"), folder)
    with open(out, encoding="utf-8") as file:
        result = json.load(file)
    moments = result["moments"]
    # Logged as zoo logs: every 10 steps and the last.
    ends = moments["steps"]
    logged = [(i + 1, t) for i, t in enumerate(ends) if (i + 1) % 10 == 0 or i + 1 == len(ends)]
    rate, steady = _rates(moments["train_begin"], logged)
    return {"wall": wall, "metrics_at": os.path.getmtime(out) - started,
            "startup": moments["train_begin"] - started,
            "training": ends[-1] - moments["train_begin"], "steps": result["steps"],
            "rate": rate, "steady": steady, "accuracy": result["accuracy"]}


def _cell(value, spec):
    return "n/a" if value is None else f"{value:{spec}}"


def section_journey(args, progress=print):
    """`zoo train` against transformers' Trainer, command to metrics, fresh processes."""
    s = _settings(args)
    LOADS.clear()
    with tempfile.TemporaryDirectory() as folder:
        if s["checkpoint"] is None:
            progress("  building a random BERT checkpoint folder")
            s["checkpoint"], size = build_checkpoint(folder, s["tiny"])
            what = ("a random BERT, " + ("2 layers x 128 (--tiny)" if s["tiny"] else
                                         "6 layers x 384 as all-MiniLM-L6-v2") +
                    f", with a {size:,}-token WordPiece vocabulary learnt on the pydoc corpus")
        else:
            what = f"`{s['checkpoint']}`"
        if (s["train_file"] is None) != (s["dev_file"] is None):
            raise ValueError("zoo benchmark journey: give both --train-file and --dev-file, "
                             "or neither")
        if s["train_file"] is None:
            # --tiny: 11 steps of 32, so that two are logged (10 and 11) and "steady" has a figure.
            sizes = (352, 64) if s["tiny"] else (2000, 872)
            s["train_file"], s["dev_file"] = build_data(folder, *sizes)
            data = (f"{sizes[0]:,} train and {sizes[1]} dev lines of the pydoc corpus, "
                    f"labeled by whether they say \"{LABEL_WORD}\"")
        else:
            data = f"`{s['train_file']}` and `{s['dev_file']}`"
        labels = labels_of(s["train_file"])
        overrides = zoo_overrides(s, labels)
        config = config_lib.resolve(EXPERIMENT, overrides)
        train = config.train
        recipe = ["--warmup-fraction", str(train.warmup_fraction),
                  "--weight-decay", str(train.weight_decay),
                  "--clip-norm", str(train.clip_norm), "--adam-epsilon", str(train.adam_epsilon),
                  "--seed", str(train.seed)]
        rank = s["lora_rank"]
        if rank:  # name -> a run of it, tagged
            contenders = {
                "zoo LoRA": lambda tag: run_zoo(s, labels, folder, f"lora_{tag}",
                                                [f"train.lora_rank={rank}"]),
                "PEFT": lambda tag: run_trainer(s, labels, [*recipe, "--lora-rank", str(rank)],
                                                folder, f"peft_{tag}"),
                "zoo full": lambda tag: run_zoo(s, labels, folder, f"full_{tag}")}
        else:
            contenders = {"zoo": lambda tag: run_zoo(s, labels, folder, tag),
                          "transformers": lambda tag: run_trainer(s, labels, recipe, folder, tag)}
        results = {name: [] for name in contenders}
        names = list(contenders)
        for i in range(s["repeats"]):
            # Alternating, the first contender changing each round: a drift in the machine's
            # load falls on all alike.
            for name in names[i % len(names):] + names[:i % len(names)]:
                progress(f"  {name} {i + 1}/{s['repeats']}")
                results[name].append(contenders[name](i))

    chosen = {}
    for name, runs in results.items():
        median = statistics.median_low(r["wall"] for r in runs)
        chosen[name] = next(r for r in runs if r["wall"] == median)
    command = "zoo benchmark journey" + "".join(
        f" --{flag} {value}" for flag, value in (
            ("checkpoint", getattr(args, "checkpoint", None)),
            ("train-file", getattr(args, "train_file", None)),
            ("dev-file", getattr(args, "dev_file", None))) if value) + (
        f" --sequence-length {s['sequence_length']} --batch-size {s['batch_size']} "
        f"--learning-rate {s['learning_rate']:g} --epochs {s['epochs']:g} "
        f"--repeats {s['repeats']}") + " --tiny" * s["tiny"] + (
        f" --lora-rank {s['lora_rank']}" if s["lora_rank"] else "")
    if train.eval_every is not None:
        evaluations = f"every {train.eval_every} steps (train.eval_every)"
    elif s["epochs"] <= 1:
        evaluations = "once, at the end (train.eval_every's default: every epoch)"
    else:
        evaluations = "after every epoch (train.eval_every's default; Trainer: at the end)"
    if s["lora_rank"]:
        title = (f"## Journey with LoRA (rank {s['lora_rank']}): `zoo train` vs PEFT on "
                 "transformers' Trainer, command to metrics")
        peers = (f" zoo LoRA: the same command with `train.lora_rank={s['lora_rank']}` (alpha "
                 f"{s['lora_rank']}, query and value; the head and the LayerNorms train). PEFT: "
                 "the Trainer below with the model wrapped by `peft.get_peft_model` (LoraConfig "
                 f"r = alpha = {s['lora_rank']} on query and value, classifier and LayerNorm in "
                 "modules_to_save). zoo full: the command without LoRA, every weight training.")
    else:
        title = "## Journey: `zoo train` vs transformers' Trainer, command to metrics"
        peers = ""
    lines = [
        title, "",
        f"Command: `{command}`. Checkpoint: {what}. Data: {data}; labels {', '.join(labels)}. "
        f"Recipe: {s['epochs']:g} epoch(s), batch {s['batch_size']}, learning rate "
        f"{s['learning_rate']:g} with linear warmup over {train.warmup_fraction:g} of the "
        f"steps then linear decay, AdamW (weight decay {train.weight_decay:g}, epsilon "
        f"{train.adam_epsilon:g}), gradient clipping at {train.clip_norm:g}, at most "
        f"{s['sequence_length']} tokens. zoo: `zoo train --experiment {EXPERIMENT}` with "
        "only those keys set (`--set`), everything else zoo's defaults (data.pad_to_multiple_of "
        f"{config.data.pad_to_multiple_of}, train.jit_compile {config.train.jit_compile}, "
        f"train.deterministic {config.train.deterministic}), evaluating the dev file "
        f"{evaluations}; it also writes best.keras, a backup and final.keras. transformers: "
        "`Trainer` (AutoModelForSequenceClassification, the folder's fast tokenizer, "
        "DataCollatorWithPadding: each batch padded to its longest), save_strategy \"no\", "
        f"evaluation once at the end, on the CPU.{peers} Each run is a fresh process; the "
        "contenders "
        f"alternate, {s['repeats']} run(s) each, the run of median wall-clock is shown. Wall: "
        "the process's start to its exit; metrics: to its metrics file's writing; start-up: "
        "to the training's start; training: its start to the last step's end; steps/s over "
        "the training part; steady: after the first logged step (step 10: tracing and "
        "warm-up left out). The machine's 1-minute load average as the runs started: "
        f"{min(LOADS):.1f} to {max(LOADS):.1f}, on {os.cpu_count()} cores (torch's threads "
        "slow down severalfold when other processes hold the cores).", "",
        "| contender | wall s | metrics s | start-up s | training s | steps | steps/s "
        "| steady steps/s | dev accuracy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in chosen.items():
        lines.append(f"| {name} | {r['wall']:.1f} | {r['metrics_at']:.1f} | {r['startup']:.1f} "
                     f"| {r['training']:.1f} | {r['steps']} | {_cell(r['rate'], '.2f')} "
                     f"| {_cell(r['steady'], '.2f')} | {r['accuracy']:.3f} |")
    if s["lora_rank"]:
        lora = chosen["zoo LoRA"]["wall"]
        summary = [
            (f"zoo train LoRA rank {s['lora_rank']} wall-clock vs PEFT on transformers' Trainer",
             target_cell(chosen["PEFT"]["wall"] / lora, 1.0)),
            (f"zoo train LoRA rank {s['lora_rank']} wall-clock vs zoo full fine-tuning",
             target_cell(chosen["zoo full"]["wall"] / lora, 1.0))]
    else:
        ratio = chosen["transformers"]["wall"] / chosen["zoo"]["wall"]
        summary = [("zoo train wall-clock vs transformers' Trainer", target_cell(ratio, 1.0))]
    return lines + [""], summary
