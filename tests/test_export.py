"""`zoo export` and `zoo predict`: versioned atomic SavedModels that answer like `zoo evaluate`.

The exports are loaded in a fresh process that imports only tensorflow and tensorflow_text
(`tests.harness.serve_fresh`), as TF Serving would run them; the expected answers come from the
in-process Keras pipeline of the same run (the task's tf.data packing + `model.predict`, whose
packing is tested against transformers' tokenizers in test_packing.py). The signature names
are read back with `saved_model_cli show --all`. Classification is covered here; span QA, NER,
multiple choice, language models and images have their own test_export_*.py modules.
"""

import json
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

import zoo
from tests import forkserver
from tests.harness import REPO, saved_model_signatures, serve_fresh, shared_run
from tests.test_signatures_batch import assert_every_input_batches
from tests.test_training import TINY, mrpc
from zoo import config as config_lib
from zoo import export
from zoo_cli.main import main as cli
from zoo_tasks import runs


def _train(sample_data, run_dir, experiment, task_dir, *overrides, family="bert"):
    vocab = sample_data["wordpiece" if family == "bert" else "bpe"]
    sets = TINY[family] + [
        f"data.dir={sample_data['root'] / 'glue' / task_dir}", f"model.vocabulary={vocab}",
        "data.sequence_length=32", "train.batch_size=16", "train.learning_rate=1e-3",
        "train.steps=8", "train.eval_every=8", *overrides]
    args = ["train", "--experiment", experiment, "--run-dir", str(run_dir)]
    for value in sets:
        args += ["--set", value]
    assert cli(args) == 0
    return run_dir


def pipeline(run_dir, split="dev", labels=True):
    """The in-process answers of a run on a dev split: columns, probabilities or scores,
    labels — what `zoo evaluate` computes (labels=False: None, one prediction pass fewer)."""
    config, task, model = runs.load_task(str(run_dir))
    from zoo_tasks.base import inference_model

    columns = task.examples(split)
    logits = inference_model(model).predict(task.dataset(split).map(lambda x, *_: x),
                                            verbose=0)["logits"].astype("float32")
    return columns, logits, task.predict(model, split) if labels else None


def mrpc_run(sample_data, tmp_path_factory, worker_id):
    """The run directory of a tiny MRPC run (8 steps), trained once for the session: the
    exports of this file and of tests/test_export_dtype.py read it (`shared_run`)."""
    config = config_lib.resolve("bert/glue_mrpc", mrpc(sample_data, "train.steps=8",
                                                       "train.eval_every=8"))
    return shared_run(tmp_path_factory, worker_id, "glue_mrpc_export", config)[0]


@pytest.fixture(scope="module")
def mrpc_export(sample_data, tmp_path_factory, worker_id):
    root = tmp_path_factory.mktemp("export_mrpc")
    run_dir = mrpc_run(sample_data, tmp_path_factory, worker_id)
    path = runs.export_run(str(run_dir), str(root / "exports" / "mrpc"), progress=lambda _: None)
    return run_dir, path


# Requests to the MRPC export besides the dev set: bad inputs, and what `zoo predict` is given.
LONG_TEXT = "word " * 20_000  # 100,000 characters: truncated to the sequence length
BAD_INPUTS = [
    {"sentence1": [""], "sentence2": [""]},
    {"sentence1": [LONG_TEXT], "sentence2": ["short"]},
    {"sentence1": [b"caf\xc3 \xff\xfe"], "sentence2": [b"\x80"]},
    {"sentence1": np.array([], object), "sentence2": np.array([], object)},
    {"sentence1": ["a", "b"], "sentence2": ["c"]},
]
PREDICT_REQUESTS = [{"sentence1": f"sentence {i}", "sentence2": "the other one"}
                    for i in range(5)]


@pytest.fixture(scope="module")
def mrpc_served(mrpc_export):
    """The in-process pipeline on the MRPC dev set, and the export's answers to it, to
    BAD_INPUTS and to PREDICT_REQUESTS, from one serving process (one TensorFlow start-up)."""
    run_dir, path = mrpc_export
    columns, logits, labels = pipeline(run_dir)
    dev = {"sentence1": columns["sentence1"], "sentence2": columns["sentence2"]}
    served = serve_fresh(path, [dev, *BAD_INPUTS, {k: [r[k] for r in PREDICT_REQUESTS]
                                                   for k in PREDICT_REQUESTS[0]}], show=True)
    return {"columns": columns, "logits": logits, "labels": labels, "dev": dev,
            "served_dev": served[0], "served_bad": served[1:-1], "served_predict": served[-1]}


def _stored_values(path):
    """{dtype: number of values} the SavedModel at `path` stores: in its variables, and as
    the constants of the float32 Dense layers' functions in saved_model.pb (the float32
    export's form, zoo.export.constant), each function of the graph's library counted once
    (TensorFlow stores each once, whatever calls it)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    stored = {}
    for name, shape in shapes.items():
        if name != "_CHECKPOINTABLE_OBJECT_GRAPH":
            stored[dtypes[name].name] = stored.get(dtypes[name].name, 0) + int(np.prod(shape))
    for dtype, count in _graph_constants(path).items():
        stored[dtype] = stored.get(dtype, 0) + count
    return stored


def _graph_constants(path):
    """{dtype: number of values} of the float32 Dense layers' constants in saved_model.pb."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved.ParseFromString(file.read())
    stored = {}
    for function in saved.meta_graphs[0].graph_def.library.function:
        if "_rows_" not in function.signature.name:  # ConstantDense._rows
            continue
        for node in function.node_def:
            # (not the activation's scalars: GELU's 0.5, ...)
            if node.op == "Const" and node.attr["value"].tensor.tensor_shape.dim:
                value = tf.make_ndarray(node.attr["value"].tensor)
                stored[value.dtype.name] = stored.get(value.dtype.name, 0) + value.size
    return stored


def _softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_sentence_pair_export_answers_like_the_pipeline(mrpc_export, mrpc_served):
    _, path = mrpc_export
    assert path.endswith(os.path.join("mrpc", "1"))
    columns, logits, labels = (mrpc_served[k] for k in ("columns", "logits", "labels"))
    out = mrpc_served["served_dev"]
    assert out["label"].tolist() == [label.encode() for label in labels]
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
    assert len(labels) == len(columns["label"]) == out["probabilities"].shape[0] > 50
    signatures = saved_model_signatures(path)
    assert signatures["serving_default"] == ({"sentence1", "sentence2"},
                                             {"probabilities", "label"})
    assert signatures["serving_ids"] == ({"token_ids", "segment_ids", "padding_mask"},
                                         {"probabilities", "label"})
    assert_every_input_batches(path, "classification")
    metadata = json.loads(open(os.path.join(path, export.METADATA)).read())
    assert metadata["task"] == "glue/mrpc" and metadata["version"] == 1
    # Each weight stored once (ExportArchive.track(model) stored them twice, keras#23553).
    _, _, model = runs.load_task(str(mrpc_export[0]))
    assert _stored_values(path) == {"float32": model.count_params()}
    # The Dense weights are graph constants (zoo.export.constant), the rest variables.
    dense = sum(layer.count_params() for layer in model._flatten_layers(recursive=True)
                if type(layer) is keras.layers.Dense)
    assert _graph_constants(path) == {"float32": dense} and dense > 0


def test_a_fine_tuned_run_converts_for_transformers_pipeline(mrpc_export, mrpc_served,
                                                             tmp_path, capsys):
    """`zoo convert RUN OUT --to hf` (issue 20): transformers' BertForSequenceClassification
    on AutoTokenizer's packing of the dev pairs gives the run's logits, and
    `pipeline("text-classification")` on the raw pairs gives the labels the zoo export
    serves (`zoo predict`'s answers, test_zoo_predict_... below)."""
    import torch
    import transformers

    run_dir, _ = mrpc_export
    out = tmp_path / "hf"
    assert cli(["convert", str(run_dir), str(out), "--to", "hf"]) == 0
    assert f"{run_dir} (run, best checkpoint) -> {out}" in capsys.readouterr().out
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "vocab.txt"} <= set(os.listdir(out))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    assert type(model).__name__ == "BertForSequenceClassification"
    _, task, _ = runs.load_task(str(run_dir))
    assert model.config.id2label == dict(enumerate(task.labels))
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    dev = mrpc_served["dev"]
    batch = tokenizer(list(dev["sentence1"]), list(dev["sentence2"]), truncation=True,
                      max_length=32, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits.numpy()
    difference = np.max(np.abs(logits - mrpc_served["logits"]))
    print(f"\nMRPC dev: max |zoo - transformers| logit {difference:.1e}")
    assert difference <= 1e-4

    classify = transformers.pipeline("text-classification", model=str(out), device="cpu")
    answers = classify([{"text": a, "text_pair": b} for a, b in
                        zip(dev["sentence1"], dev["sentence2"])], truncation=True,
                       max_length=32, top_k=None)  # every label's score, best first
    served = mrpc_served["served_dev"]
    assert [answer[0]["label"] for answer in answers] == [x.decode() for x in served["label"]]
    # The tiny run says "1" to most pairs, so the probabilities are compared too (within
    # what logits 1e-4 apart allow).
    scores = [[{a["label"]: a["score"] for a in answer}[name] for name in task.labels]
              for answer in answers]
    np.testing.assert_allclose(scores, served["probabilities"], atol=1e-4, rtol=0)


def test_gpt1_similarity_regression_exports_a_score(sample_data, tmp_path):
    # GPT-1 section 3.3: both sentence orders; STS-B: one score, no label.
    run_dir = _train(sample_data, tmp_path / "run", "gpt1/glue_stsb", "STS-B", family="gpt1")
    path = runs.export_run(str(run_dir), str(tmp_path / "exports"), progress=lambda _: None)
    columns, logits, _ = pipeline(run_dir, labels=False)
    [out] = serve_fresh(path, [{"sentence1": columns["sentence1"],
                                "sentence2": columns["sentence2"]}], show=True)
    np.testing.assert_allclose(out["score"], logits[:, 0], atol=1e-5)
    assert saved_model_signatures(path)["serving_default"] == ({"sentence1", "sentence2"},
                                                               {"score"})


def test_a_left_to_right_run_with_a_bilstm_exports_and_other_tasks_refuse_the_bilstm(
        sample_data, tmp_path, capsys):
    """BERT Table 5 "LTR & No NSP + BiLSTM": a causal BERT with a BiLSTM under the classifier
    trains, serves what it evaluates, and is refused by `zoo convert --to hf` (no transformers
    model computes it); a task family without that head refuses `model.bilstm`."""
    import zoo_tasks
    from zoo import config as config_lib

    run_dir = _train(sample_data, tmp_path / "run", "bert/glue_sst2", "SST-2",
                     "model.backbone.causal=true", "model.bilstm=true", "model.lstm_units=8")
    _, _, model = runs.load_task(str(run_dir))
    assert model.bilstm is not None and model.backbone.causal and not model.backbone.pooler
    path = runs.export_run(str(run_dir), str(tmp_path / "exports"), progress=lambda _: None)
    columns, logits, _ = pipeline(run_dir, labels=False)
    [out] = serve_fresh(path, [{"sentence1": columns["sentence1"]}])
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
    capsys.readouterr()
    assert cli(["convert", str(run_dir), str(tmp_path / "hf"), "--to", "hf"]) == 1
    assert "its BERT is left-to-right" in capsys.readouterr().err
    for name, experiment in (("conll2003", "bert/conll2003"), ("swag", "bert/swag"),
                             ("glue/sst2", "gpt1/glue_sst2")):
        config = config_lib.resolve(experiment, ["model.bilstm=true"])
        with pytest.raises(config_lib.ConfigError, match=f"model.bilstm: {name} with "
                           f"{config.model.preset} has no BiLSTM head"):
            zoo_tasks.create(name, config)


def test_the_lstm_of_gpt1_table5_pretrains_fine_tunes_and_serves(sample_data, tmp_path, capsys):
    """GPT-1 Table 5 "LSTM w/ aux LM" (`model.preset=gpt1_lstm`): pre-trained as a language
    model, fine-tuned from it with GPT-1's input transformation (the vocabulary grows by the
    special tokens, the LSTM weights carry over), and served: the export gives the evaluation's
    probabilities. `zoo convert --to hf` refuses its language model (transformers has none)."""
    lstm = ["model.preset=gpt1_lstm", "model.backbone={hidden_dim: 32}"]
    pretrained = tmp_path / "lm"
    args = ["train", "--experiment", "gpt1/pretrain", "--run-dir", str(pretrained)]
    for value in lstm + [f"data.dir={sample_data['root'] / 'corpus'}",
                         f"model.vocabulary={sample_data['bpe']}", "data.sequence_length=32",
                         "train.batch_size=8", "train.steps=4", "train.eval_every=4",
                         "train.warmup_steps=1"]:
        args += ["--set", value]
    assert cli(args) == 0
    run_dir = _train(sample_data, tmp_path / "run", "gpt1/glue_mrpc", "MRPC", *lstm,
                     f"model.init_checkpoint={pretrained}", "train.learning_rate=0",
                     family="gpt1")
    _, _, lm = runs.load_task(str(pretrained))
    _, task, model = runs.load_task(str(run_dir))
    assert isinstance(model.backbone, zoo.models.LSTMBackbone) and model.lm
    grown = model.backbone.vocabulary_size - lm.backbone.vocabulary_size
    assert grown == len(task.tokenizer.special_tokens) > 0
    for name in ("kernel", "recurrent_kernel", "bias"):  # learning rate 0: as pre-trained
        np.testing.assert_array_equal(
            *(keras.ops.convert_to_numpy(getattr(m.backbone.lstm_layers[0].cell, name))
              for m in (model, lm)))
    path = runs.export_run(str(run_dir), str(tmp_path / "exports"), progress=lambda _: None)
    columns, logits, labels = pipeline(run_dir)
    [out] = serve_fresh(path, [{"sentence1": columns["sentence1"],
                                "sentence2": columns["sentence2"]}])
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
    assert out["label"].tolist() == [label.encode() for label in labels]
    capsys.readouterr()
    # A GPT-1 language model converts (tests/test_convert.py); the LSTM's is refused.
    assert cli(["convert", str(pretrained), str(tmp_path / "hf"), "--to", "hf"]) == 1
    assert "an LSTM language model (GPT-1 Table 5" in capsys.readouterr().err


def test_a_mixed_precision_run_exports_with_its_policy(sample_data, tmp_path):
    """Also test_training's mixed-precision case for mixed_bfloat16 (mixed_float16 is there):
    `zoo train` puts the global dtype policy back to float32 afterwards."""
    run_dir = _train(sample_data, tmp_path / "run", "bert/glue_sst2", "SST-2",
                     "train.mixed_precision=mixed_bfloat16")
    assert keras.config.dtype_policy().name == "float32"
    path = runs.export_run(str(run_dir), str(tmp_path / "exports"), progress=lambda _: None)
    metadata = json.loads(open(os.path.join(path, export.METADATA)).read())
    assert metadata["dtype_policy"] == "mixed_bfloat16"
    columns, logits, labels = pipeline(run_dir)
    [out] = serve_fresh(path, [{"sentence1": columns["sentence1"]}], show=True)
    assert out["probabilities"].dtype == np.float32
    # The same bfloat16 computation in and out of the SavedModel, in batches of other sizes
    # (other kernels): equal to bfloat16 resolution (8 bits of mantissa, 2^-8 relative).
    expected = _softmax(logits)
    np.testing.assert_allclose(out["probabilities"], expected, atol=2 ** -7)
    clear = np.abs(expected[:, 0] - expected[:, 1]) > 2 ** -6
    assert clear.sum() > len(clear) // 2
    assert [label for label, c in zip(out["label"].tolist(), clear) if c] == \
        [label.encode() for label, c in zip(labels, clear) if c]
    assert saved_model_signatures(path)["serving_default"][0] == {"sentence1"}


# `zoo COMMAND...` for each command in turn, in one process (one start-up of the backend);
# the exit code is the first non-zero one.
_ZOO_COMMANDS = """
import json, sys
from zoo_cli.main import main
for command in json.loads(sys.argv[1]):
    code = main(command)
    if code:
        sys.exit(code)
"""


def _on_backend(backend, *commands):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", _ZOO_COMMANDS, json.dumps(commands)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("backend", [
    "torch", pytest.param("jax", marks=pytest.mark.skipif(
        os.environ.get("ZOO_ALL_BACKENDS") != "1", reason="reduced form: CI trains on torch "
        "only (JAX costs another minute; test_jax_distribution fits a task on JAX); "
        "ZOO_ALL_BACKENDS=1 exports a JAX run too"))])
def test_a_run_trained_on_another_backend_exports_and_answers_like_its_evaluation(
        sample_data, tmp_path, backend):
    run_dir = tmp_path / "run"
    args = ["train", "--experiment", "bert/glue_mrpc", "--run-dir", str(run_dir)]
    for value in mrpc(sample_data, "train.steps=8", "train.eval_every=8"):
        args += ["--set", value]
    # Trained, then evaluated (its own predictions) from the run directory, in one process.
    _on_backend(backend, args, ["evaluate", "--run-dir", str(run_dir)])
    rows = (run_dir / "predictions" / "dev.tsv").read_text().splitlines()[1:]
    backend_labels = [row.split("\t")[1] for row in rows]
    path = runs.export_run(str(run_dir), str(tmp_path / "exports"), progress=lambda _: None)
    import zoo_tasks
    from zoo import config as config_lib

    columns = zoo_tasks.create("glue/mrpc", config_lib.resolve(
        "bert/glue_mrpc", mrpc(sample_data))).examples("dev")  # the dev pairs, no model
    [out] = serve_fresh(path, [{"sentence1": columns["sentence1"],
                                "sentence2": columns["sentence2"]}])
    assert out["label"].tolist() == [label.encode() for label in backend_labels]


def test_versions_count_up_and_are_never_overwritten(mrpc_export, tmp_path, capsys,
                                                     monkeypatch):
    # Each signature's function runs once per trace: once per export (zoo.export.write_out).
    traces = []
    endpoint = export._endpoint

    def counted(name, signature):
        fn = endpoint(name, signature)
        return lambda *args: traces.append(name) or fn(*args)
    monkeypatch.setattr(export, "_endpoint", counted)
    run_dir, _ = mrpc_export
    base = tmp_path / "exports"
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base)]) == 0
    out = capsys.readouterr().out
    assert "docker run" in out and f"-v {base}:/models/exports" in out and "curl" in out
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base), "--version", "5"]) == 0
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base)]) == 0
    assert sorted(os.listdir(base)) == ["1", "5", "6"]
    assert sorted(traces) == 3 * ["serving_default"] + 3 * ["serving_ids"]
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base), "--version", "5"]) == 1
    assert "exists; versions are never overwritten" in capsys.readouterr().err


def test_a_killed_export_leaves_no_version_and_the_next_one_succeeds(mrpc_export, tmp_path):
    run_dir, _ = mrpc_export
    base = tmp_path / "exports"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    proc = forkserver.start("zoo_cli.main", ["export", "--run-dir", run_dir, "--out", base],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (base.is_dir() and any(n.startswith(".tmp-") for n in os.listdir(base))):
        assert proc.poll() is None and time.time() < deadline, "the export never started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)  # mid-write: the staging directory exists, unrenamed
    proc.wait()
    names = os.listdir(base)
    assert not [n for n in names if n.isdigit()], names
    assert [n for n in names if n.startswith(".tmp-1-")], names
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base)]) == 0
    assert os.listdir(base) == ["1"]  # the dead export's leftovers are gone
    [out] = serve_fresh(base / "1", [{"sentence1": ["a"], "sentence2": ["b"]}])
    assert out["probabilities"].shape == (1, 2)


def test_bad_inputs_give_defined_outputs_or_invalid_argument(mrpc_served):
    results = mrpc_served["served_bad"]  # the answers to BAD_INPUTS
    for out in results[:3]:
        assert out["probabilities"].shape == (1, 2), out
        np.testing.assert_allclose(out["probabilities"].sum(), 1.0, atol=1e-5)
    assert results[3]["probabilities"].shape == (0, 2) and results[3]["label"].shape == (0,)
    assert results[4]["error"].startswith("InvalidArgumentError")
    assert "differ in batch size" in results[4]["error"]


def test_zoo_predict_reads_json_lines_like_tf_serving_instances(mrpc_export, mrpc_served,
                                                                tmp_path, capsys):
    _, path = mrpc_export
    base = os.path.dirname(path)
    lines = tmp_path / "in.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in PREDICT_REQUESTS) + "\n")
    assert cli(["predict", "--saved-model", base, "--input", str(lines), "--batch-size", "2",
                "--output", str(tmp_path / "out.jsonl")]) == 0
    results = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    expected = mrpc_served["served_predict"]  # the export's own answers to the same requests
    assert [r["label"] for r in results] == [v.decode() for v in expected["label"]]
    np.testing.assert_allclose([r["probabilities"] for r in results],
                               expected["probabilities"], atol=1e-5)
    capsys.readouterr()
    lines.write_text('{"sentence1": "a", "sentence2": "b"}\n{"sentence1": "a"}\n')
    assert cli(["predict", "--saved-model", base, "--input", str(lines)]) == 1
    assert "line 2: missing input(s) sentence2" in capsys.readouterr().err
    lines.write_text('{"sentence1": "a", "sentence2": "b"}\nnot json\n')
    assert cli(["predict", "--saved-model", base, "--input", str(lines)]) == 1
    assert "line 2: not JSON" in capsys.readouterr().err


def test_the_demo_ends_with_an_export_and_a_prediction(mrpc_export, tmp_path, capsys):
    from zoo_cli import demo

    run_dir, _ = mrpc_export
    demo.export_and_predict(str(run_dir), str(tmp_path / "exports" / "mrpc"),
                            str(tmp_path / "requests.jsonl"))
    out = capsys.readouterr().out
    assert os.listdir(tmp_path / "exports" / "mrpc") == ["1"]
    results = [json.loads(line) for line in out.splitlines() if line.startswith('{"')]
    assert len(results) == len(demo.REQUESTS) == 3
    assert all(set(r) == {"label", "probabilities"} for r in results)
    assert "docker run" in out and "zoo predict --saved-model" in out


def test_an_int8_export_answers_like_the_float32_one_and_stores_int8_kernels(
        mrpc_export, mrpc_served, tmp_path, capsys):
    """`zoo export --quantize int8` (zoo.export.int8): every Dense layer served in int8; the dev
    answers stay within a quantization step of the float32 export's, accuracy within a point,
    the bad inputs get the same kinds of answers, and the SavedModel holds the int8 kernels
    and not the float32 ones. With another --mixed-precision it is refused."""
    import keras

    run_dir, _ = mrpc_export
    base = tmp_path / "int8"
    capsys.readouterr()
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base), "--quantize", "int8",
                "--mixed-precision", "mixed_bfloat16"]) == 1
    assert "does not combine with --mixed-precision mixed_bfloat16" in capsys.readouterr().err
    assert not base.exists() or not any(base.iterdir())
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base), "--quantize",
                "int8"]) == 0
    metadata = json.loads((base / "1" / export.METADATA).read_text())
    assert metadata["quantize"] == "int8" and metadata["dtype_policy"] == "float32"
    served = serve_fresh(base / "1", [mrpc_served["dev"], *BAD_INPUTS])
    int8, fp32 = served[0], mrpc_served["served_dev"]
    difference = np.abs(int8["probabilities"] - fp32["probabilities"]).max()
    assert 0 < difference < 0.02, difference
    gold = np.array([label.encode() for label in mrpc_served["columns"]["label"]], object)
    accuracy = {k: np.mean(out["label"] == gold) for k, out in (("int8", int8), ("fp32", fp32))}
    assert abs(accuracy["int8"] - accuracy["fp32"]) <= 0.01, accuracy
    for ours, theirs in zip(served[1:], mrpc_served["served_bad"]):
        assert set(ours) == set(theirs)
        if "error" in ours:
            assert ours["error"].split(":")[0] == theirs["error"].split(":")[0]
        else:
            assert ours["probabilities"].shape == theirs["probabilities"].shape
            assert ours["label"].tolist() == theirs["label"].tolist()
    _, _, model = runs.load_task(str(run_dir))
    dense = [layer for layer in model._flatten_layers() if type(layer) is keras.layers.Dense]
    kernels = sum(int(np.prod(layer.kernel.shape)) for layer in dense)
    units = sum(int(layer.kernel.shape[1]) for layer in dense)
    # The float32 kernels are replaced by int8 ones with their range ends (low, high) and
    # column sums per unit.
    assert len(dense) == 2 * 6 + 2  # 2 blocks x (query, key, value, output, 2 ffn), pooler, head
    assert _stored_values(base / "1") == {"int8": kernels,
                                          "float32": model.count_params() - kernels + 3 * units}


def test_a_float32_run_exports_as_bfloat16_with_unchanged_answers(mrpc_export, mrpc_served,
                                                                  tmp_path):
    run_dir, path = mrpc_export
    base = tmp_path / "bf16"
    assert cli(["export", "--run-dir", str(run_dir), "--out", str(base),
                "--mixed-precision", "mixed_bfloat16"]) == 0
    metadata = json.loads((base / "1" / export.METADATA).read_text())
    assert metadata["dtype_policy"] == "mixed_bfloat16"
    columns, inputs = mrpc_served["columns"], mrpc_served["dev"]
    # The plain mixed_bfloat16 model of the second half, written first so that one serving
    # process answers for both exports.
    _, task, model = runs.load_task(str(run_dir))
    archive, _ = export.build_archive(task, export.with_dtype_policy(model, "mixed_bfloat16"),
                                      str(run_dir))
    archive.write_out(str(tmp_path / "plain"), verbose=False)
    bf16, plain = serve_fresh(base / "1", [inputs, (tmp_path / "plain", "serving_default",
                                                    inputs)])
    fp32 = mrpc_served["served_dev"]
    difference = np.abs(bf16["probabilities"] - fp32["probabilities"]).max()
    assert 0 < difference < 2 ** -5, difference  # computed in bfloat16, to its resolution
    gold = [label.encode() for label in columns["label"]]
    accuracy = {k: np.mean(out["label"] == np.array(gold, object))
                for k, out in (("bf16", bf16), ("fp32", fp32))}
    assert abs(accuracy["bf16"] - accuracy["fp32"]) <= 0.02, accuracy

    # The export stores the dense and embedding weights in bfloat16 (`with_bfloat16_weights`):
    # the served answers are those of the plain mixed_bfloat16 model, bit for bit, and the
    # variables shrink to little more than half (LayerNorms and the tokenizer stay as they are).
    np.testing.assert_array_equal(bf16["probabilities"], plain["probabilities"])
    sizes = {name: _size(os.path.join(directory, "variables")) for name, directory in
             (("bf16", base / "1"), ("plain", tmp_path / "plain"))}
    assert sizes["bf16"] < 0.55 * sizes["plain"], sizes
    # The plain model stores float32 values as many as the float32 export (whose Dense
    # weights are constants in saved_model.pb: zoo.export.constant).
    assert _stored_values(tmp_path / "plain") == _stored_values(path) == {
        "float32": model.count_params()}


def _size(directory):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(directory) for name in names)


@pytest.mark.parametrize("activation,fused", [
    ("linear", None), ("relu", "Relu"), ("tanh", "Tanh"), ("sigmoid", "Sigmoid"),
    ("gelu", "GeluExact"), ("zoo gelu", "GeluExact"), ("zoo gelu_approximate", "GeluApproximate"),
    ("softmax", False)])
def test_an_int8_dense_computes_its_activation_in_the_fused_kernel(activation, fused):
    """zoo.export.int8: the product, scales, bias and activation in one `_QuantizedMatMul` whose
    fused_ops name the layer's activation (exact vs tanh GELU differ by less than the int8
    error, so the graph is read); an activation it cannot fuse runs after it in float32.
    Outputs within int8 error of the float32 layer's, in a graph and eagerly."""
    import keras
    import tensorflow as tf

    from zoo.export import int8
    from zoo.layers.transformer import activation_function

    function = (activation_function(activation.split()[1]) if activation.startswith("zoo")
                else activation)
    model = keras.Sequential([keras.Input((48,)), keras.layers.Dense(32, activation=function)])
    rng = np.random.default_rng(0)
    kernel, bias = rng.normal(0, 0.3, (48, 32)), rng.normal(0, 0.3, 32)
    model.set_weights([kernel, bias])
    x = rng.normal(0, 1, (20, 48)).astype("float32")
    expected = model(x).numpy()
    with int8.dense_layers(model) as weights:
        graph = tf.function(model).get_concrete_function(tf.TensorSpec([None, 48])).graph
        eager, traced = model(x).numpy(), tf.function(model)(x).numpy()
    assert weights.layers[0].fused == fused
    ops = [op for op in graph.get_operations() if op.type == "_QuantizedMatMul"]
    assert len(ops) == 1
    assert [f.decode() for f in ops[0].get_attr("fused_ops")] == [
        "BiasAdd", *([fused] if fused else []), "Dequantize"]
    # Every activation here changes by at most 1.13x its input's change: a bound from the
    # int8 error of the product (7-bit weights, 48 terms: ~1.6 % of its largest value).
    scale = np.abs(x @ kernel + bias).max()
    for out in (eager, traced):
        error = np.abs(out - expected).max()
        assert 0 < error < 0.02 * scale, (error, scale)
    np.testing.assert_allclose(model(x).numpy(), expected)  # the float32 layer is back
