"""`zoo export --mixed-precision auto` and the bfloat16 warning (zoo.export.dtype, zoo.hardware).

auto times the model's forward pass in float32 and in bfloat16 on this machine and serves the
faster; the export is checked against the float32 export of the same run, served in a fresh
process that imports only tensorflow and tensorflow_text (`tests.harness.serve_fresh`). The
timings themselves are the machine's: the tests check that they are recorded and that the
choice follows them, and the choice rule on made-up timings.
"""

import json

import numpy as np
import pytest

from tests.harness import serve_fresh
from tests.test_export import mrpc_run as trained_mrpc
from zoo import export, hardware, models
from zoo.export import dtype
from zoo_cli.main import main as cli
from zoo_tasks import runs

WARNING = "export: warning: this CPU has no bfloat16 matrix hardware"
AVX512 = frozenset({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"})


@pytest.fixture(scope="module")
def mrpc_run(sample_data, tmp_path_factory, worker_id):
    """A tiny MRPC run (tests/test_export.py's, trained once for both files), its float32
    export, and that export's answers on the dev sentences."""
    root = tmp_path_factory.mktemp("export_dtype")
    run_dir = str(trained_mrpc(sample_data, tmp_path_factory, worker_id))
    path = runs.export_run(run_dir, str(root / "float32"), progress=lambda _: None)
    _, task, _ = runs.load_task(run_dir)
    columns = task.examples("dev")
    dev = {"sentence1": columns["sentence1"], "sentence2": columns["sentence2"]}
    [served] = serve_fresh(path, [dev])
    return {"run_dir": run_dir, "dev": dev, "float32": served}


def _export(run_dir, base, *flags):
    assert cli(["export", "--run-dir", run_dir, "--out", str(base), *flags]) == 0
    return json.loads((base / "1" / export.METADATA).read_text())


def _bfloat16_values(path):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(path / "variables" / "variables"))
    return sum(1 for kind in reader.get_variable_to_dtype_map().values()
               if kind == tf.bfloat16)


def test_auto_serves_the_faster_and_records_why(mrpc_run, tmp_path, capsys, monkeypatch):
    # Measured: the timings recorded, the choice theirs, and no warning whatever it is.
    monkeypatch.setattr(hardware, "cpu", lambda: hardware.CPU("Xeon", "GenuineIntel", AVX512))
    metadata = _export(mrpc_run["run_dir"], tmp_path / "auto", "--mixed-precision", "auto")
    out = capsys.readouterr().out
    auto = metadata["dtype_auto"]
    assert auto["choice"] == metadata["dtype_policy"] in ("float32", "mixed_bfloat16")
    assert auto["sequence_length"] == 32  # the run's data.sequence_length, under 128
    times = auto["milliseconds"]
    assert set(times) == {"float32", "mixed_bfloat16"}
    assert all(set(t) == {"1", "8"} and min(t.values()) > 0 for t in times.values())
    assert auto["choice"] == dtype.choose({form: {int(b): ms for b, ms in t.items()}
                                           for form, t in times.items()})
    [line] = [line for line in out.splitlines() if "batch 8 x 32: float32" in line]
    assert line.endswith(f"serving {auto['choice']}") and WARNING not in out

    # Made to win: bfloat16 is served, its weights stored in bfloat16, still with no warning.
    monkeypatch.setattr(dtype, "measure", lambda forms, **_: {
        "float32": {1: 10.0, 8: 80.0}, "mixed_bfloat16": {1: 5.0, 8: 40.0}})
    forced = _export(mrpc_run["run_dir"], tmp_path / "forced", "--mixed-precision", "auto")
    out = capsys.readouterr().out
    assert forced["dtype_policy"] == forced["dtype_auto"]["choice"] == "mixed_bfloat16"
    assert "serving mixed_bfloat16" in out and WARNING not in out
    assert _bfloat16_values(tmp_path / "forced" / "1") > 0

    served = serve_fresh(tmp_path / "auto" / "1", [
        mrpc_run["dev"], (tmp_path / "forced" / "1", "serving_default", mrpc_run["dev"])])
    float32 = mrpc_run["float32"]["probabilities"]
    bfloat16 = served[1]["probabilities"]
    assert 0 < np.abs(bfloat16 - float32).max() < 2 ** -5  # bfloat16's resolution
    if auto["choice"] == "float32":  # the same graph and weights as the float32 export
        np.testing.assert_array_equal(served[0]["probabilities"], float32)
    else:
        np.testing.assert_array_equal(served[0]["probabilities"], bfloat16)


def test_bfloat16_on_a_cpu_without_amx_warns_once(mrpc_run, tmp_path, capsys, monkeypatch):
    xeon = hardware.CPU("Xeon", "GenuineIntel", AVX512)  # the Xeon of docs/benchmarks.md
    monkeypatch.setattr(hardware, "cpu", lambda: xeon)
    metadata = _export(mrpc_run["run_dir"], tmp_path / "bf16", "--mixed-precision",
                       "mixed_bfloat16")
    lines = [line for line in capsys.readouterr().out.splitlines() if WARNING in line]
    assert len(lines) == 1
    assert "--mixed-precision auto" in lines[0] and "24.4 vs 49.6 texts/s" in lines[0]
    assert metadata["dtype_policy"] == "mixed_bfloat16" and metadata["dtype_auto"] is None
    # The CPU kinds of docs/export.md's table: slower on Intel without AMX and on AVX2 alone,
    # faster with AMX and on AMD's avx512_bf16; flags unknown (not Linux, not x86): no warning.
    for vendor, flags, warns in [("GenuineIntel", AVX512 | {"amx_bf16"}, False),
                                 ("AuthenticAMD", AVX512, False),
                                 ("AuthenticAMD", frozenset({"avx2"}), True),
                                 ("GenuineIntel", frozenset({"avx2"}), True),
                                 ("", None, False)]:
        line = dtype.bfloat16_warning(hardware.CPU("a CPU", vendor, flags))
        assert (line is not None) == warns, (vendor, flags)
        assert line is None or line == lines[0].removeprefix("export: ")


def test_auto_does_not_combine_with_int8(mrpc_run, tmp_path, capsys):
    assert cli(["export", "--run-dir", mrpc_run["run_dir"], "--out", str(tmp_path / "int8"),
                "--quantize", "int8", "--mixed-precision", "auto"]) == 1
    assert "does not combine with --mixed-precision auto" in capsys.readouterr().err


@pytest.mark.parametrize("bfloat16,expected", [
    ({1: 50.0, 8: 400.0}, "mixed_bfloat16"),  # faster at both batch sizes
    ({1: 120.0, 8: 400.0}, "float32"),        # slower at batch 1
    ({1: 50.0, 8: 1200.0}, "float32"),        # slower at batch 8
    ({1: 97.0, 8: 780.0}, "float32"),         # faster by less than the margin (5%)
    ({1: 100.0, 8: 800.0}, "float32"),        # a tie: float32's exact answers
])
def test_the_choice_is_bfloat16_only_when_faster_at_every_batch(bfloat16, expected):
    assert dtype.choose({"float32": {1: 100.0, 8: 800.0}, "mixed_bfloat16": bfloat16}) == expected


def test_the_cpu_flags_are_read_from_cpuinfo(tmp_path):
    x86 = tmp_path / "x86"
    block = ("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
             "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n")
    x86.write_text(f"processor\t: 0\n{block}\nprocessor\t: 1\n{block}")
    assert hardware.cpu(str(x86)) == ("Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", frozenset(
        {"fpu", "avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}))
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd bf16 i8mm\n")
    assert hardware.cpu(str(arm)).flags is None  # Arm's names are not x86's: unknown
    assert hardware.cpu(str(tmp_path / "absent")).flags is None  # not Linux


def _small(preset, **sizes):
    return models.create(preset, num_layers=1, hidden_dim=32, num_heads=2, intermediate_dim=64,
                         **sizes)


FAMILIES = {  # a head model of each exported family, on a one-block backbone
    "classification": lambda: models.BertClassifier(_small("bert_tiny", vocabulary_size=99), 3),
    "multiple_choice": lambda: models.GPTClassifier(
        _small("gpt1", vocabulary_size=99, max_sequence_length=64), 1, num_sequences=4,
        combine="choices"),
    "span_qa": lambda: models.BertSpanQA(_small("bert_tiny", vocabulary_size=99)),
    "tagging": lambda: models.BertTokenClassifier(_small("bert_tiny", vocabulary_size=99), 5),
    "pretraining (masked LM)": lambda: models.BertMaskedLM(_small("bert_tiny",
                                                                  vocabulary_size=99)),
    "pretraining (causal LM)": lambda: models.GPTLMHeadModel(
        _small("gpt1", vocabulary_size=99, max_sequence_length=64)),
    "sentence_embedding": lambda: models.BertTextEmbedder(_small("bert_tiny",
                                                                 vocabulary_size=99)),
    "image_classification": lambda: models.ViTClassifier(_small("vit_tiny16", image_size=32), 3),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_is_timed_on_inputs_made_from_its_model(family):
    """The synthetic batch fits every family's inputs (ids within the vocabulary and the
    positions, choices of 3-D inputs, mask positions, fixed-size images): both forms run."""
    model = FAMILIES[family]()
    forms = {"float32": model, "mixed_bfloat16": export.with_bfloat16_weights(model)}
    timings = dtype.measure(forms, batches=(1, 2), length=16, calls=1)
    assert all(set(t) == {1, 2} and min(t.values()) > 0 for t in timings.values())
    inputs = dtype.synthetic_inputs(model, 2, 16)
    outputs = model(inputs, training=False)
    for value in (outputs.values() if isinstance(outputs, dict) else [outputs]):
        assert value.shape[0] == 2 and np.isfinite(np.asarray(value, np.float32)).all()
