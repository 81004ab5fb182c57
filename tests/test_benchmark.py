"""`zoo benchmark all` end to end, at --tiny sizes, in two halves at once: every section runs and
the libraries agree.

The figures of a --tiny run mean nothing (two-layer models, one timed call); what this checks
is that the command works from a clean checkout, writes the markdown file, and that every
library really computes the same model on the same weights and inputs: zoo and ONNX Runtime
match transformers' BERT output to 1e-5, keras-hub's (tanh GELU) to 1e-2; the exported
SavedModel and ONNX Runtime (BertTokenizerFast in front) give transformers' pipeline's label on
every text (the int8 rows are there, their labels reported); the WordPiece ids are identical;
zoo's and transformers' pretraining steps (eager and torch.compile) run. The full-size run is
`zoo benchmark all` (about 40 minutes on 2 cores).
"""

import json
import math
import os
import re
import subprocess
import sys

import pytest

from tests.harness import REPO


def _table(text, heading):
    """Rows (lists of cells) of the first markdown table after `heading`."""
    section = text[text.index(heading):]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## ") or (rows and not line.startswith("| ")):
            break  # the next section, or the end of the table
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[1:]  # without the header


def test_the_commands_choices_are_the_labs_families_and_backends():
    """`zoo benchmark`'s --families and --backends are named in zoo_cli (its help runs where
    the lab is not): the same as the lab's."""
    from zoo_benchmarks import common
    from zoo_cli import benchmark

    assert benchmark.FAMILIES == tuple(common.FAMILIES) == ("bert", "gpt1", "vit")
    assert benchmark.BACKENDS == common.BACKENDS == ("tensorflow", "jax")


# `zoo benchmark all`'s sections in two halves of about the same time alone (~120 and ~160 s
# on 2 cores), each checked in a `zoo benchmark all --tiny --only ...` process of its own, so
# that `make test-benchmark`'s two workers run them at once (its groups: the gpu and the
# generate checks beside the shorter half). models, finetune and pretrain share their prepared
# weights and worker processes (zoo_benchmarks.report.run): one half.
HALVES = {"models": ("models", "finetune", "pretrain", "serving", "tokenizers"),
          "generate": ("generate", "journey", "data", "bucketing", "embeddings")}


def _check_models(text):
    models = _table(text, "## Models")
    libraries = {row[0] for row in models}
    assert libraries == {"zoo", "keras-hub", "transformers", "onnxruntime"}, models
    modes = ("graph", "xla")
    dtypes = {(library, mode): set() for library in ("zoo", "keras-hub") for mode in modes}
    for library, _, mode, dtype, batch, rate, _, diff in models:
        assert batch == "2" and float(rate) > 0
        dtypes.get((library, mode), set()).add(dtype)
        if dtype == "float32":
            assert float(diff) <= (1e-2 if library == "keras-hub" else 1e-5), (library, diff)
    # With --bf16, zoo is timed under mixed_bfloat16 and as it serves it (`bfloat16`: the
    # dense and embedding weights stored in bfloat16, `export.with_bfloat16_weights`),
    # keras-hub under its mixed_bfloat16 only. zoo's two compute the same bits, so their
    # distance from transformers' float32 output is the same number, a bfloat16-sized one.
    for mode in modes:
        assert dtypes["zoo", mode] == {"float32", "mixed_bfloat16", "bfloat16"}, dtypes
        assert dtypes["keras-hub", mode] == {"float32", "mixed_bfloat16"}, dtypes
        diff = {row[3]: float(row[-1]) for row in models if row[:3] == ["zoo", "tensorflow", mode]}
        assert diff["bfloat16"] == diff["mixed_bfloat16"] > 1e-3 > diff["float32"], diff


def _check_finetune(text):
    finetune = _table(text, "## Fine-tuning step")
    assert {(row[0], row[2]) for row in finetune} == {
        ("zoo", "graph"), ("zoo", "xla"), ("keras-hub", "graph"), ("keras-hub", "xla"),
        ("transformers", "eager")}
    for row in finetune:  # a two-class head starts near ln 2 and has taken three steps
        assert math.isfinite(float(row[-1])) and 0.3 < float(row[-1]) < 1.1, row


def _check_pretrain(text):
    # zoo's BertMaskedLM against BertForPreTraining, eager and torch.compile; 8 x 16 tokens a
    # step (the default batch); on random heads both start near ln(30522) + ln(2) = 11.0.
    pretrain = _table(text, "## Pretraining step")
    assert {(row[0], row[2]) for row in pretrain} == {
        ("zoo", "graph"), ("zoo", "xla"), ("transformers", "eager"), ("transformers", "compile")}
    for row in pretrain:
        steps, tokens = float(row[3]), float(row[4].replace(",", ""))
        assert tokens == pytest.approx(128 * steps, rel=0.02), row
        assert 10.0 < float(row[-1]) < 12.0, row


def _check_bucketing(text):
    bucketing = _table(text, "## Dynamic padding")
    assert [row[0] for row in bucketing] == ["glue/mrpc (sample)"]  # one task under --tiny


def _check_serving(text):
    serving = {row[0]: row for row in _table(text, "## Serving")}
    assert serving["zoo SavedModel, float32"][-1] == "256/256"
    # transformers' model under ONNX Runtime, its tokenizer in front: the same labels.
    assert serving["ONNX Runtime, float32"][-1] == "256/256"
    assert {"zoo SavedModel, int8", "ONNX Runtime, int8"} <= set(serving), serving
    assert all(float(row[1]) > 0 for row in serving.values()), serving
    # One loaded model, client threads 1 and 2 under --tiny (#53): zoo and ONNX Runtime in
    # float32 at each, and zoo with oneDNN's frozen weights (each process reported the
    # setting it ran with, or the benchmark would have stopped), every request answered.
    concurrency = _table(text, "### Concurrency")
    assert {(row[0], row[1]) for row in concurrency} == {
        (contender, threads) for contender in (
            "zoo SavedModel, float32", "ONNX Runtime, float32",
            "zoo SavedModel, float32, TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1")
        for threads in ("1", "2")}, concurrency
    for _, _, requests, rate, p50, p99 in concurrency:
        assert int(requests) > 0 and float(rate) > 0 and float(p99) >= float(p50) > 0


def _check_tokenizers(text):
    tokenizers = _table(text, "## Tokenizers")
    same, total = re.match(r"([\d,]+)/([\d,]+) lines", tokenizers[0][2]).groups()
    assert same == total


def _check_data(text):
    # `zoo data pretrain`, 1 MB, one Beam worker (test_pretraining checks that two write the
    # same bytes as one).
    data = _table(text, "## Pretraining data")
    assert [row[:2] for row in data] == [["1", "1"]], data
    assert int(data[0][2].replace(",", "")) > 100_000
    assert all(float(row[3]) > 0 and 0.1 < float(row[5]) < 20 for row in data), data


def _check_generate(text):
    # #52: every contender at batch 2 (the uncached ones too: the smallest batch), exactly the
    # 8 new tokens asked (the export before #52 returns text only).
    generation = _table(text, "## Generation")
    assert {(row[0], row[3], row[4]) for row in generation} == {
        ("zoo", "graph", "yes"), ("zoo", "xla", "yes"), ("zoo", "graph, no cache", "no"),
        ("keras-hub", "graph", "yes"), ("keras-hub", "xla", "yes"),
        ("transformers", "GPT2LMHeadModel", "yes"),
        ("transformers", "OpenAIGPTLMHeadModel", "no"),
        ("export", "serving_generate", "yes"), ("export", "serving_default before #52", "no")}
    for row in generation:
        assert row[5] == "2" and float(row[6].replace(",", "")) > 0, row
        assert row[9] == ("n/a" if row[3] == "serving_default before #52" else "8"), row


def _check_journey(text):
    # #53: `zoo train` and transformers' Trainer, each a fresh process, on the same 352
    # training lines in batches of 32 (11 optimizer steps) and 64 dev lines.
    journey = {row[0]: row for row in _table(text, "## Journey")}
    assert set(journey) == {"zoo", "transformers"}, journey
    for name, (_, wall, metrics, startup, training, steps, rate, steady, accuracy) in (
            journey.items()):
        assert 0 < float(startup) < float(metrics) <= float(wall), journey[name]
        assert 0 < float(training) and steps == "11", journey[name]
        assert float(rate) > 0 and float(steady) > 0, journey[name]
        right = float(accuracy) * 64  # dev lines right, from an accuracy to 3 decimals
        assert 0 <= float(accuracy) <= 1 and abs(right - round(right)) < 0.04, journey[name]


def _check_embeddings(text):
    # #63: zoo's encode and sentence-transformers' on the same folder, each a fresh process;
    # the vectors agree.
    embeddings = {row[0]: row for row in _table(text, "## Sentence embeddings")}
    assert set(embeddings) == {"zoo encode (TensorFlow)",
                               "sentence-transformers encode (torch)"}, embeddings
    assert all(float(row[2]) > 0 for row in embeddings.values()), embeddings
    difference = float(re.search(r"differ by at most ([\d.e+-]+)\.", text).group(1))
    assert difference < 1e-5, difference


# What each section's table must show.
CHECKS = {"models": _check_models, "finetune": _check_finetune, "pretrain": _check_pretrain,
          "bucketing": _check_bucketing, "serving": _check_serving,
          "tokenizers": _check_tokenizers, "data": _check_data, "generate": _check_generate,
          "journey": _check_journey, "embeddings": _check_embeddings}
# Each section's rows of the Targets table.
TARGETS = {
    "models": ("bert forward vs keras-hub tensorflow, batch 2",
               "bert forward vs transformers (torch), batch 2",
               "bert batch-2 latency, zoo / ONNX Runtime"),
    "finetune": ("fine-tuning step vs keras-hub tensorflow",),
    "pretrain": ("pretraining tokens/s vs transformers (torch eager)",),
    "tokenizers": ("WordPiece tokens/s vs transformers' fast tokenizer",),
    "serving": ("serving texts/s, zoo int8 export vs zoo float32 export",
                "serving texts/s, zoo int8 export vs ONNX Runtime int8",
                "serving texts/s, zoo float32 export vs ONNX Runtime float32",
                "serving texts/s at 2 threads, zoo float32 vs ONNX Runtime float32",
                "serving p50 latency at 1 thread, ONNX Runtime float32 / zoo float32"),
    "generate": ("generate tokens/s, batch 2: zoo with the cache (fastest) vs transformers' "
                 "GPT-2 with its cache (#52)",
                 "generate tokens/s, batch 2: zoo with the cache vs keras-hub GPT2CausalLM "
                 "(tensorflow; #52)",
                 "generate tokens/s, batch 2: export serving_generate (cache) vs "
                 "serving_default before #52 (no cache; #52)"),
    "journey": ("zoo train wall-clock vs transformers' Trainer",),
    "embeddings": ("sentence embeddings texts/s, zoo encode vs sentence-transformers",),
    "data": (), "bucketing": ()}


def _benchmark_parsers():
    """`zoo benchmark`'s subcommands: {name: its argparse parser}."""
    import argparse

    from zoo_cli import benchmark

    commands = argparse.ArgumentParser().add_subparsers()
    benchmark.register(commands)
    return commands.choices["benchmark"]._subparsers._group_actions[0].choices


def test_the_halves_are_every_benchmark_once():
    """The two halves below, and the sections checked, are every benchmark of `zoo benchmark
    all` (its --only choices), once."""
    only = next(action for action in _benchmark_parsers()["all"]._actions
                if "--only" in action.option_strings)
    halves = [name for half in HALVES.values() for name in half]
    assert sorted(halves) == sorted(only.choices) == sorted(TARGETS) == sorted(CHECKS)
    assert len(set(halves)) == len(halves)


@pytest.mark.parametrize("half", [pytest.param(half, marks=pytest.mark.xdist_group(half))
                                  for half in HALVES])
def test_benchmark_all_tiny_writes_every_section_and_the_libraries_agree(half, tmp_path):
    sections = HALVES[half]
    out = tmp_path / "docs" / "benchmarks.md"
    proc = subprocess.run(
        [sys.executable, "-m", "zoo_cli.main", "benchmark", "all", "--tiny", "--families", "bert",
         "--backends", "tensorflow", "--batches", "2", "--repeats", "1", "--bf16",
         "--sequence-length", "16", "--workers", "1", "--only", *sections, "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")  # a new file: written whole, not merged
    assert ("zoo benchmark all --backends tensorflow --batches 2 --families bert --only "
            f"{' '.join(sections)} --repeats 1 --sequence-length 16 --workers 1 --tiny") in text
    assert "Machine: " in text and "keras-hub 0.32.0" in text and "onnxruntime " in text
    assert "(a separate run)" not in text
    assert [line for line in text.splitlines() if line.startswith("## ")][0] == (
        "## Targets (issue #10)")
    for section in sections:
        CHECKS[section](text)

    targets = _table(text, "## Targets")
    compared = [row[0] for row in targets]
    for section in sections:
        for expected in TARGETS[section]:
            assert expected in compared, compared
    assert all(re.match(r"[\d.]+ \((met|missed|no target)", row[1]) for row in targets)


@pytest.mark.xdist_group("models")  # beside the other half (HALVES)
def test_the_gpu_pretraining_benchmark_runs_zoo_on_jax_without_tensorflow(tmp_path):
    """`python -m zoo_benchmarks.gpu` (docs/benchmarks.md's GPU section), as it runs on a
    GPU machine that has JAX and torch but no TensorFlow: here TensorFlow's import fails
    (stand-in packages first on the path), a tiny model, one step each; both libraries give
    a row and the same starting loss within a sanity bound."""
    for name in ("tensorflow", "tensorflow_text"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            'raise ImportError("no TensorFlow on this machine")\n', encoding="utf-8")
    env = dict(os.environ, KERAS_BACKEND="jax",
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    out = subprocess.run(
        [sys.executable, "-m", "zoo_benchmarks.gpu", "--preset", "bert_tiny", "--batch",
         "2", "--length", "16", "--steps", "1", "--warmup", "1", "--torch-modes", "eager",
         "--zoo-variants", "default"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    rows = re.findall(r"^\| (zoo|transformers) \| (\w+) \| ([^|]+?) \|.*\| ([\d.]+) \|$",
                      out.stdout, re.M)
    assert [row[:3] for row in rows] == [("zoo", "jax", "jit"), ("transformers", "torch",
                                         "eager"), ("transformers", "torch", "eager")], rows
    # Random weights over a 30,522-token vocabulary: every loss near ln(30522) + ln(2) = 11.0.
    assert all(abs(float(row[3]) - 11.0) < 1.0 for row in rows), rows


def test_the_generate_flags_of_zoo_and_of_the_lab_are_the_same():
    """`zoo benchmark generate`'s flags are named in zoo_cli (its help runs where the lab is
    not): the same as `python -m zoo_benchmarks.generate`'s, less the latter's own."""
    from zoo_benchmarks import generate

    zoo = _benchmark_parsers()["generate"]

    def flags(parser):  # --backends: the lab's default depends on --device
        return {flag: (repr(action.default), action.nargs, action.type, action.help)
                for action in parser._actions for flag in action.option_strings
                if flag not in ("-h", "--help", "--backends")}

    lab = {flag: value for flag, value in flags(generate.parser()).items()
           if flag not in generate.STANDALONE_FLAGS}
    assert flags(zoo) == lab


@pytest.mark.xdist_group("models")  # beside the other half (HALVES)
def test_the_generate_benchmark_runs_on_jax_and_torch_without_tensorflow(tmp_path):
    """`python -m zoo_benchmarks.generate` as the GPU machine runs it (JAX and torch, no
    TensorFlow: here its import fails), --tiny, 4 new tokens: zoo, keras-hub and both
    transformers models give their row, each with exactly 4 new tokens a row, and the ratios
    against #52's targets are computed."""
    for name in ("tensorflow", "tensorflow_text"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            'raise ImportError("no TensorFlow on this machine")\n', encoding="utf-8")
    env = dict(os.environ, KERAS_BACKEND="jax",
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    out = tmp_path / "generate.json"
    proc = subprocess.run(
        [sys.executable, "-m", "zoo_benchmarks.generate", "--tiny", "--backends", "jax",
         "--batches", "2", "--repeats", "1", "--new-tokens", "4", "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    rows = {(r["library"], r["backend"], r["mode"], r["cache"]): r for r in result["rows"]}
    assert set(rows) == {("zoo", "jax", "jit", True), ("keras-hub", "jax", "jit", True),
                         ("transformers", "torch", "GPT2LMHeadModel", True),
                         ("transformers", "torch", "OpenAIGPTLMHeadModel", False)}, rows
    for row in rows.values():
        assert row["batch"] == 2 and row["new_tokens"] == [4, 4] and row["tokens_per_s"] > 0
    ratios = dict(result["ratios"])
    assert set(ratios) == {
        "generate tokens/s, batch 2: zoo with the cache (fastest) vs transformers' GPT-2 with "
        "its cache (#52)",
        "generate tokens/s, batch 2: zoo with the cache vs keras-hub GPT2CausalLM (jax; #52)",
        "generate tokens/s, batch 2: zoo with the cache vs transformers' OpenAIGPTLMHeadModel "
        "(no cache)"}, ratios
    assert all(re.match(r"[\d.]+ \((met|missed|no target)", value) for value in ratios.values())


def test_serving_times_its_contenders_in_alternation():
    """`zoo benchmark serving` (workers.alternate): pass r of every contender before pass
    r + 1 of any, each contender once a round, the round's order rotated; each contender's
    seconds come back under its name, in the order they were taken."""
    from zoo_benchmarks.workers import alternate

    calls = []

    def fake(name):
        def measure():
            calls.append(name)
            return float(sum(1 for call in calls if call == name))  # its 1st, 2nd, ... pass
        return measure

    names = ["zoo", "transformers", "onnxruntime"]
    times = alternate({name: fake(name) for name in names}, repeats=4, pause=0)
    assert calls == ["zoo", "transformers", "onnxruntime", "transformers", "onnxruntime", "zoo",
                     "onnxruntime", "zoo", "transformers", "zoo", "transformers", "onnxruntime"]
    assert times == {name: [1.0, 2.0, 3.0, 4.0] for name in names}


def test_all_only_merges_its_sections_into_the_file():
    """`zoo benchmark all --only ...`: the sections run replace those of the same heading, or
    are added at the end; their target rows replace the same comparison's, or are added after
    the table; every other line stays as it was measured."""
    import doctest

    from zoo_benchmarks import merge

    assert doctest.testmod(merge, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
    old = ("# B\n\nMachine: A.\n\n## Targets (issue #10)\n\n| comparison | ratio |\n"
           "| --- | --- |\n| kept | 1.0 (no target) |\n| x vs y | 0.5 (missed: target ≥ 1.0) |\n"
           "\n## Models: old\n\nmodels table\n\n## Serving: old (a separate run)\n\nold\n")
    new = [(["## Journey: zoo train vs Trainer", "", "journey table", ""],
            [("x vs y", "1.2 (met: target ≥ 1.0)"), ("new row", "3.0 (no target)")]),
           (["## Serving: new", "", "new serving"], [])]
    text = merge.merge(old, new, "CPU B", "2026-11-27", "zoo benchmark all --only journey")
    assert text.startswith("# B\n\nMachine: A.\n\n## Targets (issue #10)\n")
    assert ("| kept | 1.0 (no target) |\n| x vs y | 1.2 (met: target ≥ 1.0); a separate run, "
            "2026-11-27 |\n| new row | 3.0 (no target); a separate run, 2026-11-27 |\n\n"
            "## Models: old\n\nmodels table\n\n## Serving: new (a separate run)\n\nMeasured on: "
            "CPU B; 2026-11-27, `zoo benchmark all --only journey`.\n\nnew serving\n\n"
            "## Journey: zoo train vs Trainer (a separate run)\n\nMeasured on: CPU B; "
            "2026-11-27, `zoo benchmark all --only journey`.\n\njourney table\n") in text, text
    assert "old\n" not in text.split("## Serving")[1]
