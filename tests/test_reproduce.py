"""`zoo reproduce`: the tables' YAMLs, --list, --dry-run, and a reproduction killed with SIGKILL
in the middle of a cell that ends with the numbers of an uninterrupted one."""

import collections
import csv
import json
import os
import pathlib
import re
import shlex
import signal
import statistics
import subprocess

import pytest
import yaml

from tests import forkserver
from tests.harness import REPO, wait_for_backup
from zoo import config as config_lib
from zoo_cli.main import main as cli
from zoo_tasks import reproduce
from zoo_tasks.reproduce import run as run_lib


def test_every_table_parses_and_names_existing_experiments_and_keys():
    """load_table resolves every cell of every scale with zoo.config (unknown experiments and
    keys are errors); the tables the issue asks for are there."""
    names = reproduce.table_names()
    assert set(names) == {"gpt1/table5", "gpt1/figure2", "gpt1/figure2_right", "bert/table5",
                          "bert/table6", "bert/table7", "bert/table8", "bert/imdb",
                          "bert/imdb_pretrained"}, names
    for name in names:
        table = reproduce.load_table(name)
        papers = {"paper", "small", "sample"}  # the papers' tables; real data at CPU scale
        real = name.startswith("bert/imdb")
        assert set(table["scales"]) == ({"cpu"} if real else papers), name
        for scale in table["scales"]:
            steps = reproduce.plan(table, scale, "DATA", "RUN")
            assert any(s["kind"] in ("finetuning", "zero_shot") for s in steps), (name, scale)
            for step in steps:
                if step["kind"] in ("pretraining", "finetuning"):
                    config = config_lib.resolve(step["experiment"], step["overrides"])
                    if name == "bert/imdb_pretrained":  # its subset of DATA's files
                        assert config.data.train_file == "RUN/data/subset/train.csv", step
                        assert config.data.dev_file == "RUN/data/subset/dev.csv", step
                        assert config.data.test_file == "RUN/data/subset/test.csv", step
                        assert step["test"], step  # scored once on the test file, at the end
                    elif config.task == "text_classification":  # own data: its files
                        assert config.data.train_file == "DATA/train", step
                        assert config.data.dev_file == "DATA/test", step
                    else:
                        assert config.data.dir.startswith(("DATA/", "RUN/")), step
    rates = {}  # a scale's column_overrides reach that column's cells and no other
    for step in reproduce.plan(reproduce.load_table("bert/table8"), "sample", "DATA", "RUN"):
        if step["kind"] == "finetuning":
            config = config_lib.resolve(step["experiment"], step["overrides"])
            rates.setdefault(step["column"], set()).add(config.train.learning_rate)
    assert rates == {"mnli": {1e-3}, "ner": {1e-3}, "ner_features": {1e-2}}, rates


@pytest.mark.parametrize("change, message", [
    ({"rows": {"full": {"colour": 1}}}, "rows.full.colour: unknown key"),
    ({"columns": {"sst2": {"experiment": "gpt1/no_such"}}}, "no_such"),
    ({"scales": {"sample": {"set": ["train.no_such_key=1"]}}}, "train.no_such_key"),
    ({"rows": {"full": {"pretraining": "absent"}}}, "rows.full.pretraining: 'absent'"),
    ({"rows": {"full": {"paper": {"squad": 1.0}}}}, "rows.full.paper.squad: no such column"),
    ({"reference": "absent"}, "reference: 'absent' is not a row"),
    ({"columns": {"sst2": {"source": "zero_shot", "task": "glue/mrpc"}}},
     "columns.sst2.task: a zero-shot task"),
    ({"rows": {"no_pretraining": {"updates": 100}}},
     "rows.no_pretraining.updates: a positive number of pre-training updates"),
    ({"rows": {"full": {"updates": 150}}}, "scale paper: a row reads pretraining lm after 150 "
     "updates, not a multiple of its train.eval_every 5000"),
    ({"rows": {"full": {"updates": 400000}}}, "scale sample: a row reads pretraining lm after "
     "400000 updates, but it takes 2400"),
    ({"rows": {"full": {"library": "flax"}}}, "rows.full.library: one of transformers"),
    ({"rows": {"no_pretraining": {"baseline": "svm"}}},
     "rows.no_pretraining.baseline: one of bag_of_words, in a row without a pretraining"),
    ({"corpus": {"strip_html": True}}, "corpus.from: missing"),
    ({"subset": {"labels": ["neg"], "splits": {"train": {"from": "train"}}}},
     "subset.splits.train: `from` (a path under --data-root) and `examples`"),
    ({"vocabulary": {"kind": "checkpoint"}}, "vocabulary.kind: checkpoint (the checkpoint's "
     "own vocabulary) needs the table's `checkpoint`"),
    ({"columns": {"sst2": {"set": ["data.train_file={subset}/train.csv"]}}},
     "'data.train_file={subset}/train.csv': no subset given"),
])
def test_a_bad_table_is_an_error_naming_the_file_and_key(tmp_path, change, message):
    table = yaml.safe_load(open(reproduce.table_path("gpt1/table5"), encoding="utf-8"))
    for key, value in change.items():
        if isinstance(value, dict):
            for name, entry in value.items():
                if isinstance(entry, dict):
                    table.setdefault(key, {}).setdefault(name, {}).update(entry)
                else:
                    table.setdefault(key, {})[name] = entry
        else:
            table[key] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(table), encoding="utf-8")
    with pytest.raises(reproduce.TableError, match=re.escape(message)) as error:
        reproduce.load_table(str(path))
    assert str(path) in str(error.value)


def _quoted(experiment):
    """The paper's numbers an experiment YAML's opening comment quotes."""
    text = pathlib.Path(config_lib.experiment_path(experiment)).read_text(encoding="utf-8")
    comment = " ".join(line[1:] for line in text.splitlines() if line.startswith("#"))
    return [float(x) for x in re.findall(r"(?<![\w.])\d+\.\d(?![\d])", comment)]


def test_the_paper_numbers_match_what_the_experiments_already_quote():
    """Transcribed once into the tables; where the experiment YAMLs quote the same numbers of
    the papers, they agree. GPT-1 Table 5's full row is the model of its Tables 2 and 4 (MNLI:
    the mean of matched 82.1 and mismatched 81.4); BERT Table 5's BERT_BASE and LTR rows are
    quoted in bert/pretrain_ltr.yaml."""
    gpt = reproduce.load_table("gpt1/table5")
    for column, spec in gpt["columns"].items():
        quoted = _quoted(spec["experiment"])
        expected = sum(quoted[:2]) / 2 if column == "mnli" else quoted[0]
        assert gpt["rows"]["full"]["paper"][column] == pytest.approx(expected, abs=0.051), column
    bert = reproduce.load_table("bert/table5")
    quoted = _quoted("bert/pretrain_ltr")  # LTR: five numbers, then BERT_BASE's five
    order = ["mnli", "qnli", "mrpc", "sst2", "squad"]
    assert [bert["rows"]["ltr_no_nsp"]["paper"][c] for c in order] == quoted[:5]
    assert [bert["rows"]["bert_base"]["paper"][c] for c in order] == quoted[5:10]
    sizes = reproduce.load_table("bert/table6")  # its 12/768/12 row is Table 5's BERT_BASE
    for column in ("mnli", "mrpc"):
        assert sizes["rows"]["l12_h768_a12"]["paper"][column] == quoted[5 + order.index(column)]
    ner = reproduce.load_table("bert/table7")
    features = ["embeddings", "second_to_last", "last", "sum_last_four", "concat_last_four",
                "sum_all"]
    assert [ner["rows"][r]["paper"]["ner"] for r in features + ["bert_base"]] == _quoted(
        "bert/conll2003_feature_based")[1:8]  # after "section 5.4"
    dev_test = _quoted("bert/conll2003")  # section 5.3, base dev / test, large dev / test
    assert [ner["rows"][r]["paper"]["ner"] for r in ("bert_base", "bert_large")] == [
        dev_test[1], dev_test[3]]


def test_list_prints_every_table_with_its_cells_and_the_paper_numbers(capsys):
    assert cli(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in reproduce.table_names():
        assert f"{name}: " in out
    assert "Transformer w/o pre-training [no pre-training; train.lm_weight=0.5]" in out
    assert "MRPC (Acc) 77.5" in out and "--scale sample: 3 seed(s)" in out


def test_dry_run_at_paper_scale_prints_the_plan_without_training(tmp_path, capsys):
    """GPT-1 pre-training: 100 epochs of (estimated) 2,300,000 blocks at batch 64; the backbone
    with a 40,000-token vocabulary has the parameters transformers' OpenAIGPTModel has."""
    from transformers import OpenAIGPTConfig, OpenAIGPTModel

    run_dir = tmp_path / "run"
    assert cli(["reproduce", "gpt1/table5", "--scale", "paper", "--data-root", "/data",
                "--run-dir", str(run_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not run_dir.exists()
    import torch

    with torch.device("meta"):  # shapes only: nothing is drawn
        reference = OpenAIGPTModel(OpenAIGPTConfig(vocab_size=40000)).num_parameters()
    steps = -(-100 * 2_300_000 // 64)
    hours = 6 * reference * steps * 64 * 512 / 40e12 / 3600
    assert (f"pretraining lm: gpt1/pretrain, {reference:,} backbone parameters, {steps:,} steps "
            f"of 64 x 512 tokens, ~{hours:.2f} accelerator hours") in out
    # The "LSTM w/ aux LM" row: "a single layer 2048 unit LSTM" (section 5) under the tied
    # 40,000 x 2048 embedding; torch's LSTM holds two bias vectors per gate, Keras' one.
    with torch.device("meta"):
        lstm = torch.nn.ModuleList([torch.nn.Embedding(40000, 2048), torch.nn.LSTM(2048, 2048)])
    lstm = sum(p.numel() for p in lstm.parameters()) - 4 * 2048
    assert (f"pretraining lstm_lm: gpt1/pretrain, {lstm:,} backbone parameters, {steps:,} "
            "steps of 64 x 512 tokens") in out
    assert "32 fine-tuning runs" in out and "estimated total: ~" in out
    assert "zoo train --experiment gpt1/glue_rte --set data.dir=/data/glue/RTE" in out


TINY_TABLE = {
    "title": "tiny", "source": "a test", "reference": "full",
    "vocabulary": {"kind": "bpe", "size": 400},
    "pretraining": {"lm": {"experiment": "gpt1/pretrain"}},
    "columns": {"sst2": {"title": "SST-2", "experiment": "gpt1/glue_sst2", "metric": "accuracy"},
                "lm": {"title": "LM acc", "source": "pretraining", "metric": "lm_accuracy"}},
    "rows": {"full": {"title": "Full", "pretraining": "lm", "paper": {"sst2": 91.3}},
             "scratch": {"title": "Scratch", "pretraining": None, "paper": {"sst2": 84.0}}},
    "scales": {s: {"seeds": 1, "set": [
        "model.backbone.num_layers=1", "model.backbone.hidden_dim=32",
        "model.backbone.num_heads=2", "model.backbone.intermediate_dim=64",
        "data.sequence_length=32", "train.batch_size=16", "train.deterministic=true"],
        "pretraining_set": ["train.steps=20", "train.eval_every=10", "train.warmup_steps=2"],
        "finetuning_set": ["train.steps=12", "train.eval_every=4"]} for s in reproduce.SCALES},
}


def test_the_table_gives_mean_sample_std_and_the_direction_of_each_effect(tmp_path):
    """On finished cells written here (final.keras, metrics.json), the table reads each seed's
    final evaluation: mean and sample standard deviation as `statistics` computes them, the
    effect against the reference row in the paper and in ours, and whether they agree."""
    path = tmp_path / "tiny.yaml"
    scales = {s: dict(e, seeds=3) for s, e in TINY_TABLE["scales"].items()}
    path.write_text(yaml.safe_dump(dict(TINY_TABLE, scales=scales), sort_keys=False),
                    encoding="utf-8")
    table = reproduce.load_table(str(path))
    run = tmp_path / "run"
    steps = reproduce.plan(table, "sample", str(tmp_path / "data"), str(run))
    accuracy = {"full": [0.5, 0.75, 0.7], "scratch": [0.9, 0.8, 0.85]}
    for step in steps:
        if step["kind"] in ("pretraining", "finetuning"):
            folder = pathlib.Path(step["run_dir"])
            folder.mkdir(parents=True)
            (folder / "final.keras").write_bytes(b"")
            last = ({"step": 20, "lm_accuracy": 0.25} if step["kind"] == "pretraining" else
                    {"step": 12, "accuracy": accuracy[step["row"]][step["seed"]]})
            (folder / "metrics.json").write_text(json.dumps([{"step": 4, "accuracy": 0.1},
                                                             last]))
    cells = {(c["row"], c["column"]): c for c in reproduce.results(table, "sample", steps)}
    for row, values in accuracy.items():
        cell = cells[row, "sst2"]
        assert cell["values"] == pytest.approx([100 * v for v in values])
        assert cell["mean"] == pytest.approx(statistics.mean(cell["values"]))
        assert cell["std"] == pytest.approx(statistics.stdev(cell["values"]))
    scratch = cells["scratch", "sst2"]  # paper: 84.0 - 91.3; ours: 85 - 65 (opposite way)
    assert scratch["paper_effect"] == pytest.approx(-7.3)
    assert scratch["effect"] == pytest.approx(20.0) and scratch["same_direction"] is False
    assert cells["full", "lm"]["values"] == [25.0] and cells["scratch", "lm"]["values"] == []
    assert cells["full", "sst2"]["same_direction"] is None  # the reference row itself

    # A column's metric checked as soon as a cell has trained (not after the last cell):
    # a percentage where the column expects a fraction, and a metric the run does not have.
    cell = next(s for s in steps if s["kind"] == "finetuning")
    (pathlib.Path(cell["run_dir"]) / "metrics.json").write_text(json.dumps(
        [{"step": 12, "accuracy": 75.0}]))
    for check in (lambda: run_lib._check_columns(table, "sample", cell),
                  lambda: reproduce.results(table, "sample", steps)):
        with pytest.raises(reproduce.TableError, match="accuracy is 75, not a fraction.*"
                           "give the column `percent: false`"):
            check()
    (pathlib.Path(cell["run_dir"]) / "metrics.json").write_text(json.dumps(
        [{"step": 12, "acc": 0.75}]))
    with pytest.raises(reproduce.TableError, match="no metric 'accuracy' in metrics.json "
                       r"\(it has acc, step\)"):
        run_lib._check_columns(table, "sample", cell)


def _reproduce(table, sample_data, run_dir):
    # One vocabulary for both reproductions: tokenizers' BPE trainer breaks count ties in
    # hash-map order, so two learnt vocabularies of the same corpus can differ
    # (huggingface/tokenizers#1794); a reproduction learns its own once and keeps it.
    return forkserver.start(
        "zoo_cli.main", ["reproduce", table, "--data-root", sample_data["root"], "--run-dir",
                         run_dir, "--set", f"model.vocabulary={sample_data['bpe']}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _numbers(run_dir):
    with open(run_dir / "table.csv", encoding="utf-8") as file:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(file)]


def test_a_killed_reproduction_resumes_without_retraining_and_ends_with_the_same_table(
        sample_data, tmp_path, capsys):
    table = tmp_path / "tiny.yaml"
    table.write_text(yaml.safe_dump(TINY_TABLE, sort_keys=False), encoding="utf-8")
    run = tmp_path / "interrupted"
    interrupted = _reproduce(table, sample_data, run)
    backup = run / "cells" / "scratch" / "sst2" / "seed_0" / "backup"
    wait_for_backup(interrupted, backup, 4, 600)  # kill it in the last cell, in round 2
    interrupted.send_signal(signal.SIGKILL)
    interrupted.wait()
    finished = [run / "pretraining" / "lm", run / "cells" / "full" / "sst2" / "seed_0"]
    stamps = [(d / "final.keras").stat().st_mtime_ns for d in finished]
    assert not (run / "cells" / "scratch" / "sst2" / "seed_0" / "final.keras").exists()
    assert not (run / "table.csv").exists()

    resumed = _reproduce(table, sample_data, run)
    out = resumed.communicate(timeout=900)[0]
    assert resumed.returncode == 0, out[-3000:]
    started = re.findall(r"^\[\d+/\d+\] (.+)$", out, re.M)
    assert started == ["scratch / sst2 / seed 0"], started
    assert [(d / "final.keras").stat().st_mtime_ns for d in finished] == stamps
    # The one cell trained again, against its own command (commands.sh) run uninterrupted:
    # the same evaluations. (The finished cells were not retrained: their stamps, above.)
    commands = (run / "commands.sh").read_text(encoding="utf-8").splitlines()
    args = shlex.split(commands[commands.index("# scratch / sst2 / seed 0") + 1])[1:]
    args[args.index("--run-dir") + 1] = str(tmp_path / "reference")
    assert cli(args) == 0
    cell = run / "cells" / "scratch" / "sst2" / "seed_0"
    assert json.loads((cell / "metrics.json").read_text()) == json.loads(
        (tmp_path / "reference" / "metrics.json").read_text())
    ours = _numbers(run)
    cells = {(row["row"], row["column"]): row for row in ours}
    full, scratch = cells["full", "sst2"], cells["scratch", "sst2"]
    assert full["seeds"] == scratch["seeds"] == "1" and full["paper"] == "91.3"
    assert cells["full", "lm"]["seeds"] == "1" and cells["scratch", "lm"]["seeds"] == "0"
    text = (run / "table.md").read_text(encoding="utf-8")
    assert re.search(r"^\| Full \| 91\.3 \| [\d.]+ \| - \| [\d.]+ \| ", text, re.M), text
    assert "| Scratch | 84.0 | " in text and "zoo train --experiment gpt1/glue_sst2" in text
    assert "pretraining lm" in (run / "commands.sh").read_text(encoding="utf-8")

    # A finished cell is never reported for settings it was not trained with.
    changed = dict(TINY_TABLE, scales={s: dict(e, finetuning_set=["train.steps=13",
                                                                  "train.eval_every=4"])
                                       for s, e in TINY_TABLE["scales"].items()})
    table.write_text(yaml.safe_dump(changed, sort_keys=False), encoding="utf-8")
    assert cli(["reproduce", str(table), "--data-root", str(sample_data["root"]), "--run-dir",
                str(run), "--set", f"model.vocabulary={sample_data['bpe']}"]) == 1
    err = capsys.readouterr().err
    assert "cells/full/sst2/seed_0: finished with other settings" in err
    assert "train.steps" in err

    # The run directory records which table it holds: the same table through a link resumes
    # (nothing left to train), another is refused before anything runs.
    table.write_text(yaml.safe_dump(TINY_TABLE, sort_keys=False), encoding="utf-8")
    manifest = run / "reproduce.json"
    assert json.loads(manifest.read_text())["table"] == str(table.resolve())
    (tmp_path / "link").symlink_to(tmp_path)
    args = ["reproduce", str(tmp_path / "link" / "tiny.yaml"), "--data-root",
            str(sample_data["root"]), "--run-dir", str(run), "--set",
            f"model.vocabulary={sample_data['bpe']}"]
    assert cli(args) == 0
    assert not re.findall(r"^\[\d+/\d+\] ", capsys.readouterr().out, re.M)  # none started
    record = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(dict(record, table="gpt1/glue")), encoding="utf-8")
    assert cli(args) == 1
    assert "holds another reproduction" in capsys.readouterr().err


def test_a_run_directory_names_zoos_own_tables_wherever_zoo_is_installed():
    """A table of zoo's is recorded by name, reached through the repository's configs/ link
    or the package's own folder alike, so a run started from a clone resumes under the
    wheel; any other table by its absolute path, links resolved."""
    from zoo_tasks.reproduce import tables

    for path in (os.path.join(REPO, "configs", "reproduce", "bert", "imdb.yaml"),
                 os.path.join(tables.TABLE_ROOT, "bert", "imdb.yaml")):
        assert tables.table_name(path) == "bert/imdb"
    assert tables.table_name("elsewhere/mine.yaml") == os.path.realpath("elsewhere/mine.yaml")


def test_the_lab_rows_need_the_lab_and_zoos_own_rows_run_without_it(tmp_path, capsys):
    """The baseline and transformers rows of bert/imdb are trained by the measurement lab
    (zoo_benchmarks/, not in the wheel), which `zoo reproduce` hands to zoo_tasks: it has a
    trainer for each of those rows the tables allow. Without it (an installed wheel) a lab
    row stops the reproduction before anything runs, naming the row and what to do; --rows
    without the lab rows passes the check."""
    from zoo_benchmarks import rows
    from zoo_cli import reproduce as reproduce_cli
    from zoo_tasks.reproduce import tables

    kinds = ("library_pretraining", "library_finetuning")
    assert set(rows.TRAINERS) == ({("baseline", name) for name in tables.BASELINES}
                                  | {(kind, name) for kind in kinds for name in tables.LIBRARIES})
    assert reproduce_cli.lab_trainers() == rows.TRAINERS  # from this clone
    table = reproduce.load_table("bert/imdb")
    run = tmp_path / "run"
    # The lab's steps at scale cpu: the baseline's imdb cell, the transformers pretraining and
    # its imdb cell at 3 seeds.
    with pytest.raises(reproduce.TableError, match=r"^bag_of_words / imdb \(and 4 more steps\): "
                       "trained by the repository's measurement lab, zoo_benchmarks/, which the "
                       "installed zoo does not ship: run zoo reproduce from a clone"):
        reproduce.reproduce(table, "cpu", str(tmp_path), str(run), lab={})
    assert not run.exists()
    steps = reproduce.plan(table, "cpu", str(tmp_path), str(run))
    wanted = run_lib._wanted(table, "cpu", steps, ["scratch", "pretrained"])
    run_lib._check_lab(steps, wanted, {})  # zoo's own rows: no lab needed


def test_zero_shot_columns_read_the_checkpoint_of_each_rows_updates(sample_data, tmp_path,
                                                                    capsys, monkeypatch):
    """GPT-1 Figure 2 (right) as a table: a row with `updates: N` scores its pretraining's model
    after N updates (train.keep_checkpoints keeps one per evaluation; the last is the final
    model, weight for weight), and each zero-shot cell holds what its `zoo evaluate
    --zero-shot` command in commands.sh gives; the LSTM of GPT-1 Table 5 is scored alike."""
    import keras
    import numpy as np

    # `zoo evaluate --zero-shot` on a .keras file writes ./predictions/zero_shot: not the repo.
    monkeypatch.chdir(tmp_path)
    table = {
        "title": "tiny zero-shot", "source": "a test", "reference": "final",
        "vocabulary": {"kind": "bpe", "size": 400},
        "pretraining": {"lm": {"experiment": "gpt1/pretrain"},
                        "lstm_lm": {"experiment": "gpt1/pretrain",
                                    "set": ["model.preset=gpt1_lstm", "model.backbone={}"]}},
        "columns": {"sst2": {"title": "SST-2", "source": "zero_shot", "task": "glue/sst2",
                             "metric": "accuracy"}},
        "rows": {"early": {"title": "10 updates", "pretraining": "lm", "updates": 10},
                 "final": {"title": "all updates", "pretraining": "lm"},
                 "lstm": {"title": "LSTM", "pretraining": "lstm_lm", "updates": 10}},
        "scales": {s: {"set": ["model.backbone.num_layers=1", "model.backbone.hidden_dim=32",
                               "model.backbone.num_heads=2", "model.backbone.intermediate_dim=64",
                               "data.sequence_length=32", "train.batch_size=16"],
                       "pretraining_set": ["train.steps=20", "train.eval_every=10",
                                           "train.warmup_steps=2", "train.learning_rate=1e-2"],
                       "pretraining_overrides": {"lstm_lm": ["model.backbone={hidden_dim: 32}"]}}
                   for s in reproduce.SCALES}}
    path = tmp_path / "zero_shot.yaml"
    path.write_text(yaml.safe_dump(table, sort_keys=False), encoding="utf-8")
    run = tmp_path / "run"
    assert cli(["reproduce", str(path), "--data-root", str(sample_data["root"]), "--run-dir",
                str(run), "--set", f"model.vocabulary={sample_data['bpe']}"]) == 0
    lm = run / "pretraining" / "lm"
    assert sorted(p.name for p in (lm / "checkpoints").iterdir()) == [
        "step_10.keras", "step_20.keras"]

    def weights(file):
        model = keras.saving.load_model(file)
        return [keras.ops.convert_to_numpy(w) for w in model.weights]

    final, last, early = (weights(lm / name) for name in (
        "final.keras", "checkpoints/step_20.keras", "checkpoints/step_10.keras"))
    for a, b in zip(final, last):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(final, early))

    commands = (run / "commands.sh").read_text(encoding="utf-8").splitlines()
    cells = {(c["row"], c["column"]): c for c in csv.DictReader(open(run / "table.csv"))}
    lstm = run / "pretraining" / "lstm_lm" / "checkpoints" / "step_10.keras"
    for row, step, model in (("early", 10, lm / "checkpoints" / "step_10.keras"),
                             ("final", 20, lm), ("lstm", 10, lstm)):
        command = commands[commands.index(f"# {row} / sst2") + 1]
        assert command.startswith(f"zoo evaluate --zero-shot glue/sst2 --run-dir {model} "
                                  "--data "), command
        capsys.readouterr()
        assert cli(command.split()[1:]) == 0
        direct = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert float(cells[row, "sst2"]["mean"]) == pytest.approx(100 * direct["accuracy"])
        cell = json.loads((run / "cells" / row / "sst2" / "metrics.json").read_text())
        assert cell == [{"step": step, "accuracy": direct["accuracy"],
                         "examples": direct["examples"]}]
        assert ((run / "cells" / row / "sst2" / "predictions" / "glue_sst2.tsv").read_text()
                == pathlib.Path(direct["predictions"]).read_text())
    assert "| 10 updates | - | " in (run / "table.md").read_text(encoding="utf-8")
    # Each cell in TensorBoard as a training run is: its metric under logs/eval at its step,
    # its settings under logs/hparams (read back with TensorBoard's own event reader).
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util.tensor_util import make_ndarray

    cell = run / "cells" / "early" / "sst2" / "logs"
    scalars = EventAccumulator(str(cell / "eval"), size_guidance={"tensors": 0}).Reload()
    (event,) = scalars.Tensors("accuracy")
    assert event.step == 10 and float(make_ndarray(event.tensor_proto)) == pytest.approx(
        float(cells["early", "sst2"]["mean"]) / 100)
    hparams = EventAccumulator(str(cell / "hparams")).Reload()
    assert "_hparams_/session_start_info" in hparams.Tags()["tensors"]


def _review_folders(root, sample_data):
    """An aclImdb-shaped folder from the samples: SST-2's train and dev sentences as labeled
    reviews (train/, test/), the corpus's documents as unlabeled ones (train/unsup), sentences
    joined by <br /> as IMDB's are; every test review names the "test hall"."""
    samples = sample_data["root"]
    for split, tsv, extra in (("train", "train", ""), ("test", "dev", " Seen in the test hall.")):
        lines = (samples / "glue" / "SST-2" / f"{tsv}.tsv").read_text(
            encoding="utf-8").splitlines()[1:]
        for i, line in enumerate(lines):
            text, label = line.rsplit("\t", 1)
            folder = root / split / ("pos" if label == "1" else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}_0.txt").write_text(text.strip() + "." + extra, encoding="utf-8")
    documents = (samples / "corpus" / "corpus.txt").read_text(encoding="utf-8").split("\n\n")
    (root / "train" / "unsup").mkdir()
    for i, document in enumerate(d for d in documents if d.strip()):
        (root / "train" / "unsup" / f"{i}_0.txt").write_text(
            "<br /><br />".join(document.split("\n")), encoding="utf-8")


def test_the_imdb_table_runs_from_review_folders_beside_bag_of_words_and_transformers(
        sample_data, tmp_path, capsys):
    """bert/imdb end to end on review folders shaped like aclImdb (tiny model, a few steps):
    the corpus comes from train/ only (never test/), one sentence a line; the pretrained
    row starts from the table's pretraining, the scratch row from nothing; the bag-of-words
    row scores the same test files; the transformers row trains the same pretraining and
    cell in torch after zoo's steps; table.md shows all four beside "reported elsewhere"."""
    root = tmp_path / "aclImdb"
    _review_folders(root, sample_data)
    run = tmp_path / "run"
    tiny = ["model.backbone.num_layers=1", "model.backbone.hidden_dim=32",
            "model.backbone.num_heads=2", "model.backbone.intermediate_dim=64",
            "data.sequence_length=32", "train.batch_size=16", "train.steps=6",
            "train.eval_every=6", "train.warmup_steps=2"]
    command = ["reproduce", "bert/imdb", "--scale", "cpu", "--seeds", "1", "--data-root",
               str(root), "--run-dir", str(run)] + [a for s in tiny for a in ("--set", s)]
    # --rows: those rows' steps only (the data steps first); the table shows the rest as "-".
    assert cli(command + ["--rows", "scratch"]) == 0
    first = capsys.readouterr().out
    assert re.findall(r"^\[\d+/9\] (.+)$", first, re.M) == [
        "corpus", "vocabulary", "shards", "scratch / imdb / seed 0"], first
    assert not (run / "pretraining").exists()
    assert re.search(r"^\| zoo, pretrained on train \+ unsup \| 88\.9 \| - \|", first, re.M)
    assert cli(command + ["--rows", "absent"]) == 1
    assert "--rows: no row 'absent' at scale cpu" in capsys.readouterr().err
    assert cli(command) == 0
    out = capsys.readouterr().out
    assert "[6/9] scratch" not in out and "[4/9] pretraining base" in out
    corpus = (run / "data" / "corpus" / "corpus.txt").read_text(encoding="utf-8")
    assert "test hall" not in corpus and "<br" not in corpus
    assert "Grace Hansen plays the drums.\nGrace Hansen has a parrot called Mango.\n" in corpus
    pretrained = yaml.safe_load((run / "cells" / "pretrained" / "imdb" / "seed_0" /
                                 "config.yaml").read_text(encoding="utf-8"))
    assert pretrained["model"]["init_checkpoint"] == str(run / "pretraining" / "base")
    scratch = yaml.safe_load((run / "cells" / "scratch" / "imdb" / "seed_0" /
                              "config.yaml").read_text(encoding="utf-8"))
    assert scratch["model"]["init_checkpoint"] is None
    assert scratch["data"]["dev_file"] == str(root / "test")
    baseline = json.loads((run / "cells" / "bag_of_words" / "imdb" / "metrics.json").read_text())
    cells = {(row["row"], row["column"]): row for row in _numbers(run)}
    assert float(cells["bag_of_words", "imdb"]["mean"]) == pytest.approx(
        100 * baseline[0]["accuracy"])
    assert cells["pretrained", "mlm"]["seeds"] == "1" and cells["scratch", "mlm"]["seeds"] == "0"
    text = (run / "table.md").read_text(encoding="utf-8")
    assert "| row | Test accuracy reported elsewhere | ours |" in text, text
    assert re.search(r"^\| Bag of words \(logistic regression\) \| - \| [\d.]+ \|", text, re.M)
    assert re.search(r"^\| zoo, pretrained on train \+ unsup \| 88\.9 \| [\d.]+ \|", text, re.M)
    commands = (run / "commands.sh").read_text(encoding="utf-8")
    assert f"zoo data corpus --from {root / 'train'} --out" in commands
    assert "--strip-html" in commands
    assert ("python -m zoo_benchmarks.baselines bag_of_words --experiment bert/text_classification"
            in commands)
    # The transformers row: zoo's pretraining's settings, trained by transformers after all of
    # zoo's steps; its cell starts from the model it saved and is scored on the same file.
    library = run / "transformers" / "pretraining" / "base"
    assert yaml.safe_load((library / "config.yaml").read_text()) == yaml.safe_load(
        (run / "pretraining" / "base" / "config.yaml").read_text())
    assert (library / "model" / "model.safetensors").exists()
    cell = yaml.safe_load((run / "cells" / "transformers" / "imdb" / "seed_0" /
                           "config.yaml").read_text(encoding="utf-8"))
    assert cell["model"]["init_checkpoint"] == str(library / "model")
    assert {**cell, "model": None} == {**scratch, "model": None}  # the same recipe and files
    assert cells["transformers", "imdb"]["seeds"] == "1"
    assert cells["transformers", "mlm"]["seeds"] == "1"
    assert re.search(r"^\| transformers, the same recipe \| - \| [\d.]+ \|", text, re.M), text
    assert out.index("pretraining base (transformers)") > out.index("pretrained / imdb")


def test_the_pretrained_imdb_table_starts_from_the_checkpoint_given(tmp_path, capsys):
    """bert/imdb_pretrained: --checkpoint (default the table's all_minilm_l6_v2) reaches
    model.init_checkpoint of the rows that start from it (zoo, transformers, LoRA) and no
    other; every cell reads the checkpoint's vocabulary and the subset's files, written
    first."""
    table = reproduce.load_table("bert/imdb_pretrained")
    for given, expected in ((None, "all_minilm_l6_v2"), ("/ckpt/minilm", "/ckpt/minilm")):
        steps = reproduce.plan(table, "cpu", "DATA", "RUN", checkpoint=given)
        assert steps[0] == {
            "kind": "subset", "name": "subset", "run_dir": "RUN/data/subset",
            "labels": ["neg", "pos"], "seed": 0,
            "splits": {"train": {"source": "DATA/train", "examples": 2000},
                       "dev": {"source": "DATA/train", "examples": 1000},
                       "test": {"source": "DATA/test", "examples": 2000}}}
        starts, lora, recipes = {}, set(), {}
        for step in steps[1:]:
            config = config_lib.resolve(step["experiment"], step["overrides"])
            starts.setdefault(step["row"], set()).add(config.model.init_checkpoint)
            assert config.model.vocabulary == expected, step
            lora.add((step["row"], config.train.lora_rank))
            recipes.setdefault(step["row"], set()).add((
                config.data.sequence_length, config.train.epochs, config.train.learning_rate,
                config.train.batch_size))
            # Trained and evaluated on dev; the test file is each cell's final score only.
            assert config.data.dev_file == ("RUN/data/subset/test.csv" if step["kind"] in (
                "baseline", "library_finetuning") else "RUN/data/subset/dev.csv"), step
        assert starts == {"bag_of_words": {None}, "scratch": {None}, "pretrained": {expected},
                          "transformers": {expected}, "lora": {expected}}, starts
        assert ("lora", 8) in lora and ("pretrained", None) in lora
        # Each row its own recipe (chosen on dev), transformers the zoo row's.
        assert recipes["transformers"] == recipes["pretrained"] and all(
            len(r) == 1 for r in recipes.values()), recipes
        assert recipes["scratch"] != recipes["pretrained"] != recipes["lora"], recipes
    assert cli(["reproduce", "bert/imdb_pretrained", "--scale", "cpu", "--data-root", "DATA",
                "--run-dir", str(tmp_path / "run"), "--checkpoint", "/ckpt/minilm",
                "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bert/imdb_pretrained --scale cpu: 14 steps (12 fine-tuning runs)")
    assert "--set model.init_checkpoint=/ckpt/minilm" in out
    assert "63 steps of 32 x 128 tokens" in out  # one epoch of the 2,000 training reviews
    assert "625 steps of 32 x 256 tokens" in out  # BERT-tiny from scratch: 10 epochs


def test_a_tables_subset_is_stratified_seeded_and_read_by_its_cells(sample_data, tmp_path,
                                                                    capsys):
    """A table's `subset`: each label's share of the source kept (checked by counting), the
    same examples from the same seed, the unlabelled folder skipped, a dev split of the
    training reviews disjoint from the training subset; the bag-of-words row trains on it and
    scores its test subset; a zoo cell (`score: test`) trains and evaluates on dev, then
    scores its final model on the test subset once (a lost test.json is scored again without
    training); reproduce.json records the checkpoint."""
    root = tmp_path / "aclImdb"
    for split, counts in (("train", {"neg": 30, "pos": 15, "unsup": 5}),
                          ("test", {"neg": 7, "pos": 7})):
        for label, count in counts.items():
            (root / split / label).mkdir(parents=True)
            for i in range(count):
                words = "awful dull" if label == "neg" else "great fun"
                (root / split / label / f"{i}_0.txt").write_text(
                    f"{split} {label} {i}: {words}.", encoding="utf-8")
    table = yaml.safe_load(open(reproduce.table_path("bert/imdb_pretrained"), encoding="utf-8"))
    table["subset"]["splits"] = {"train": {"from": "train", "examples": 15},
                                 "dev": {"from": "train", "examples": 9},
                                 "test": {"from": "test", "examples": 6}}
    path = tmp_path / "table.yaml"
    path.write_text(yaml.safe_dump(table), encoding="utf-8")
    chosen = {}
    for run in ("a", "b"):
        assert cli(["reproduce", str(path), "--scale", "cpu", "--data-root", str(root),
                    "--run-dir", str(tmp_path / run), "--checkpoint", "/ckpt/minilm",
                    "--rows", "bag_of_words"]) == 0
        chosen[run] = (tmp_path / run / "data" / "subset" / "train.csv").read_bytes()
    assert chosen["a"] == chosen["b"]
    subset = tmp_path / "a" / "data" / "subset"
    rows = list(csv.DictReader(open(subset / "train.csv", encoding="utf-8", newline="")))
    # 15 of 45 labelled reviews: a third of each label (30 neg, 15 pos).
    assert collections.Counter(r["label"] for r in rows) == {"neg": 10, "pos": 5}
    for row in rows:
        assert (root / "train" / row["id"]).read_text(encoding="utf-8") == row["text"]
    assert len({r["id"] for r in rows}) == 15
    dev = list(csv.DictReader(open(subset / "dev.csv", encoding="utf-8", newline="")))
    # 9 of the 30 left (20 neg, 10 pos), none of the training subset's.
    assert collections.Counter(r["label"] for r in dev) == {"neg": 6, "pos": 3}
    assert not {r["id"] for r in dev} & {r["id"] for r in rows}
    assert all(r["text"].startswith("train ") for r in dev)
    test = list(csv.DictReader(open(subset / "test.csv", encoding="utf-8", newline="")))
    assert collections.Counter(r["label"] for r in test) == {"neg": 3, "pos": 3}
    assert all(r["text"].startswith("test ") for r in test)
    other = dict(table, subset=dict(table["subset"], seed=1))
    path.write_text(yaml.safe_dump(other), encoding="utf-8")
    assert cli(["reproduce", str(path), "--scale", "cpu", "--data-root", str(root), "--run-dir",
                str(tmp_path / "c"), "--rows", "bag_of_words"]) == 0
    assert (tmp_path / "c" / "data" / "subset" / "train.csv").read_bytes() != chosen["a"]
    record = json.loads((tmp_path / "c" / "reproduce.json").read_text(encoding="utf-8"))
    assert record["checkpoint"] == "all_minilm_l6_v2"  # the table's, where none is given
    bow = yaml.safe_load((tmp_path / "a" / "cells" / "bag_of_words" / "imdb" /
                          "metrics.json").read_text(encoding="utf-8"))
    assert bow[0]["accuracy"] == 1.0  # "awful dull" against "great fun" on 6 test reviews
    text = (tmp_path / "a" / "table.md").read_text(encoding="utf-8")
    assert re.search(r"^\| Bag of words \(logistic regression\) \| - \| 100\.0 \|", text,
                     re.M), text
    tiny = ["model.backbone.num_layers=1", "model.backbone.hidden_dim=32",
            "model.backbone.num_heads=2", "model.backbone.intermediate_dim=64",
            "data.sequence_length=16", "train.batch_size=8", "train.steps=2",
            "train.warmup_steps=1"]
    command = ["reproduce", str(path), "--scale", "cpu", "--seeds", "1", "--data-root",
               str(root), "--run-dir", str(tmp_path / "d"), "--checkpoint",
               str(sample_data["wordpiece"]), "--rows", "scratch"]
    assert cli(command + [a for s in tiny for a in ("--set", s)]) == 0
    cell = tmp_path / "d" / "cells" / "scratch" / "imdb" / "seed_0"
    config = yaml.safe_load((cell / "config.yaml").read_text(encoding="utf-8"))
    assert config["data"]["dev_file"].endswith("dev.csv")  # trained and evaluated on dev
    tested = json.loads((cell / "test.json").read_text(encoding="utf-8"))
    assert [e["step"] for e in tested] == [2] and 0 <= tested[0]["accuracy"] <= 1
    assert len((cell / "predictions" / "test.tsv").read_text(encoding="utf-8").split("\n")) >= 6
    text = (tmp_path / "d" / "table.md").read_text(encoding="utf-8")
    assert f"| {100 * tested[0]['accuracy']:.1f} |" in text and "the test file" in text, text
    trained = (cell / "final.keras").stat().st_mtime_ns
    (cell / "test.json").unlink()  # killed after training, before the test score
    assert cli(command + [a for s in tiny for a in ("--set", s)]) == 0
    assert (cell / "final.keras").stat().st_mtime_ns == trained
    assert json.loads((cell / "test.json").read_text(encoding="utf-8")) == tested
    capsys.readouterr()
