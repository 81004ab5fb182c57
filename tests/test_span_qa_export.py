"""SQuAD v1.1 / v2.0 export: raw question and context in, the answer out of the SavedModel.

A tiny run per task (tests/test_span_qa.py's settings at TINY's 64 wide, shorter windows so
that many sample contexts span several windows) is exported once; a fresh process that imports
only tensorflow and tensorflow_text answers the sample dev questions, and the answers must equal
the Python pipeline's (`SpanQATask.predict`: span_qa_windows + best_spans, with τ for v2.0)
exactly.
"""

import json

import numpy as np
import pytest

from tests.harness import saved_model_signatures, serve_fresh
from tests.test_signatures_batch import assert_every_input_batches
from tests.test_span_qa import overrides
from tests.test_training import TINY
from zoo import config as config_lib
from zoo_tasks import runs

# 64-token windows every 24 tokens: most sample contexts need two or more windows.
SETTINGS = ("data.sequence_length=64", "data.doc_stride=24", "data.max_query_length=16",
            "train.steps=40")
OUTPUTS = {"answer", "start_char", "end_char", "score"}
# The bad inputs compared with the Python pipeline (the others it refuses or cannot afford:
# span_qa_windows' max-context table of a 100,000-character context takes gigabytes).
COMPARED = ("empty question", "3,000 characters", "invalid UTF-8")


def bad_inputs():
    """(name, inputs) of the bad-input requests; the expected outputs are in the test."""
    long_context = ("The zebra lives in the savanna and eats grass. " * 2200)[:100_000]
    return [
        ("empty question", {"question": [""], "context": ["The lion sleeps in the sun."]}),
        ("empty context", {"question": ["Where?"], "context": [""]}),
        ("blank context", {"question": ["Where?"], "context": ["   \t "]}),
        ("long context", {"question": ["What does the zebra eat?"], "context": [long_context]}),
        ("3,000 characters", {"question": ["What does the zebra eat?"],
                              "context": [long_context[:3000]]}),
        ("invalid UTF-8", {"question": [b"Wh\xffo?"],
                           "context": [b"Zo\xc3\xab met \xff\xfe Ren\xc3\xa9e in Krak\xf3w."]}),
        ("batch of 0", {"question": np.array([], object), "context": np.array([], object)}),
    ]


def python_answer(task, model, inputs, tau):
    """span_qa_windows + the model + best_spans + τ on one question (the text decoded as the
    tokenizer reads it: invalid bytes as U+FFFD)."""
    from zoo.data.span_qa import span_qa_windows
    from zoo_tasks.span_qa import best_spans

    def text(value):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value

    example = {"id": "q", "question": text(inputs["question"][0]),
               "context": text(inputs["context"][0]), "answers": []}
    data = task.config.data
    windows = span_qa_windows([example], task.tokenizer, data.sequence_length, data.doc_stride,
                              data.max_query_length)
    logits = model.predict({k: windows[k] for k in ("token_ids", "segment_ids", "padding_mask")},
                           batch_size=256, verbose=0)
    if data.pad_to_multiple_of:  # the documented rule: padding positions get no logit
        logits = {k: np.where(windows["padding_mask"] > 0, v, -np.inf)
                  for k, v in logits.items()}
    (answer, s_best, s_null), = best_spans(
        windows, [example["context"]], logits["start_positions"], logits["end_positions"],
        data.n_best_size, data.max_answer_length)
    answered = task.version == 1 or s_best >= s_null + tau
    return answer if answered else "", s_best, len(windows["token_ids"])


@pytest.fixture(scope="module")
def exports(sample_data, tmp_path_factory):
    """Per task: the dev examples, the Python pipeline's answers, τ and the served outputs."""
    out = {}
    for name in ("squad_v1", "squad_v2"):
        run_dir = tmp_path_factory.mktemp(name) / "run"
        # v2.0 trains, evaluates and serves with dynamic padding (buckets of 16 tokens).
        dynamic = ("data.pad_to_multiple_of=16",) if name == "squad_v2" else ()
        runs.train(config_lib.resolve(f"bert/{name}", overrides(
            sample_data, *SETTINGS, *dynamic, sizes=TINY)), str(run_dir))
        _, task, model = runs.load_task(str(run_dir))
        examples, windows = task.examples("dev"), task.windows("dev")
        spans = task.predict(model, "dev")  # {id: (text, s_best, s_null)}
        tau = 0.0
        if name == "squad_v2":
            # This briefly trained model's tuned τ answers (almost) nothing; a τ in the middle
            # of its s_best - s_null values answers about half, so that both sides of the rule
            # are compared. Written where training writes it: the export must read it.
            tau = middle_threshold([s_best - s_null for _, s_best, s_null in spans.values()])
            path = run_dir / "null_threshold.json"
            path.write_text(json.dumps(dict(json.loads(path.read_text()), tau=tau)))
        path = runs.export_run(str(run_dir), str(run_dir.parent / "export"), progress=lambda _: 0)
        requests = [{"question": [e["question"] for e in examples],
                     "context": [e["context"] for e in examples]}]
        requests += [inputs for _, inputs in bad_inputs()]
        ids = {"token_ids": windows["token_ids"][:3], "segment_ids": windows["segment_ids"][:3],
               "padding_mask": windows["padding_mask"][:3]}
        requests.append(("serving_ids", ids))
        logits = model.predict(ids, verbose=0)
        # The Python pipeline on the bad inputs it accepts (a context with tokens).
        alone = {case: python_answer(task, model, inputs, tau) for case, inputs in bad_inputs()
                 if case in COMPARED}
        if name == "squad_v1":  # and its `zoo export --quantize int8`, served beside it
            int8 = (runs.export_run(str(run_dir), str(run_dir.parent / "int8"),
                                    progress=lambda _: 0, quantize="int8"),
                    "serving_default", requests[0])
        out[name] = {"run_dir": run_dir, "path": path, "examples": examples,
                     "windows": windows, "spans": spans,
                     "tau": tau, "requests": requests, "logits": logits, "alone": alone}
    # Both exports answer in one fresh process (one TensorFlow start-up), which also runs
    # `saved_model_cli show` on the v2.0 export.
    served = serve_fresh(out["squad_v2"]["path"], [
        (out[name]["path"], *(r if isinstance(r, tuple) else ("serving_default", r)))
        for name in out for r in out[name]["requests"]] + [int8], show=True)
    out["squad_v1"]["served_int8"] = served.pop()
    for name in out:
        out[name]["served"], served = (served[:len(out[name]["requests"])],
                                       served[len(out[name]["requests"]):])
    return out


def test_the_int8_export_scores_within_a_point_of_the_float32_one(exports):
    """`zoo export --quantize int8` of the v1.1 run: official F1 / EM (evaluate-v1.1.py's
    rules) of its served answers within a point of the float32 export's, on the same dev
    questions; most answers the same text."""
    from zoo.metrics.span_qa import squad_v1

    run = exports["squad_v1"]
    gold = {e["id"]: [a["text"] for a in e["answers"]] for e in run["examples"]}
    scores, answers = {}, {}
    for kind, served in (("float32", run["served"][0]), ("int8", run["served_int8"])):
        answers[kind] = {e["id"]: a.decode("utf-8")
                         for e, a in zip(run["examples"], served["answer"])}
        scores[kind] = squad_v1(gold, answers[kind])
    assert scores["float32"]["f1"] > 10, scores  # a model that finds answers, to compare
    for metric in ("f1", "exact_match"):
        assert abs(scores["int8"][metric] - scores["float32"][metric]) <= 1.0, scores
    same = np.mean([answers["int8"][i] == answers["float32"][i] for i in gold])
    assert same >= 0.9, same


def middle_threshold(differences):
    """A τ halfway across the widest gap between the middle half of sorted s_best - s_null:
    far from every question's value, so float round-off cannot flip a decision."""
    values = np.sort(np.asarray(differences, np.float64))
    n = len(values)
    middle = values[n // 4: 3 * n // 4 + 1]
    gap = int(np.argmax(np.diff(middle)))
    return float((middle[gap] + middle[gap + 1]) / 2)


@pytest.mark.parametrize("name", ["squad_v1", "squad_v2"])
def test_served_answers_equal_the_python_pipeline(exports, name):
    run = exports[name]
    examples, spans, tau = run["examples"], run["spans"], run["tau"]
    served = run["served"][0]
    assert set(served) == OUTPUTS, served
    counts = np.bincount(run["windows"]["example_index"], minlength=len(examples))
    assert (counts > 1).sum() >= 10 and counts.max() >= 3  # contexts longer than one window
    answered = 0
    for i, example in enumerate(examples):
        text, s_best, s_null = spans[example["id"]]
        # SpanQATask.evaluate's rule, at the run's τ (BERT 4.3): a span when s_best >= s_null + τ.
        expected = text if name == "squad_v1" or s_best >= s_null + tau else ""
        answer = served["answer"][i].decode("utf-8")
        start, end = int(served["start_char"][i]), int(served["end_char"][i])
        assert answer == expected, (example["id"], answer, expected, s_best, s_null, tau)
        assert served["score"][i] == pytest.approx(s_best, abs=1e-5)
        if expected:
            answered += 1
            assert example["context"][start:end] == answer
        else:
            assert (start, end) == (-1, -1)
    assert answered >= 10
    if name == "squad_v2":
        assert len(examples) - answered >= 5, (answered, tau)  # some questions unanswered


def test_a_converted_run_answers_like_the_export_in_transformers_pipeline(exports, tmp_path):
    """`zoo convert RUN OUT --to hf` (issue 20) gives a BertForQuestionAnswering with the run's
    logits on every dev window, and transformers' tokenizer and model give the served answer
    to every question whose context fits one window."""
    import torch
    import transformers

    from zoo_cli.main import main as cli

    run = exports["squad_v1"]
    out = tmp_path / "hf"
    assert cli(["convert", str(run["run_dir"]), str(out), "--to", "hf"]) == 0
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(out).eval()
    assert type(model).__name__ == "BertForQuestionAnswering"
    windows = run["windows"]
    names = {"input_ids": "token_ids", "token_type_ids": "segment_ids",
             "attention_mask": "padding_mask"}
    with torch.no_grad():
        theirs = model(**{k: torch.tensor(np.asarray(windows[v]), dtype=torch.long)
                          for k, v in names.items()})
    _, task, ours = runs.load_task(str(run["run_dir"]))
    logits = ours.predict({v: windows[v] for v in names.values()}, batch_size=256, verbose=0)
    real = np.asarray(windows["padding_mask"]) > 0
    difference = max(np.max(np.abs(logits[f"{k}_positions"][real] -
                                   getattr(theirs, f"{k}_logits").numpy()[real]))
                     for k in ("start", "end"))
    print(f"\nSQuAD dev windows: max |zoo - transformers| logit {difference:.1e}")
    assert difference <= 1e-4

    # transformers 5 removed the question-answering pipeline (transformers.pipelines.
    # REMOVED_TASKS), so its answer is built here from transformers' own parts: AutoTokenizer's
    # packing and character offsets, the converted model, and BERT 4.2's rule (the span i..j
    # of the context with the highest S·T_i + E·T_j, j >= i, at most max_answer_length tokens)
    # searched over every pair.
    data = task.config.data
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    counts = np.bincount(windows["example_index"], minlength=len(run["examples"]))
    single = [i for i, count in enumerate(counts) if count == 1 and len(tokenizer(
        run["examples"][i]["question"], add_special_tokens=False)["input_ids"]) <=
        data.max_query_length]  # one window, and a question zoo does not cut
    assert len(single) >= 10
    served = run["served"][0]
    for i in single:
        example = run["examples"][i]
        batch = tokenizer(example["question"], example["context"], truncation="only_second",
                          max_length=data.sequence_length, return_offsets_mapping=True,
                          return_tensors="pt")
        offsets = batch.pop("offset_mapping")[0].numpy()
        context = np.array(batch.sequence_ids(0)) == 1
        with torch.no_grad():
            result = model(**batch)
        start, end = result.start_logits[0].numpy(), result.end_logits[0].numpy()
        scores = start[:, None] + end[None, :]
        n = len(start)
        rows, columns = np.indices((n, n))
        valid = (context[:, None] & context[None, :] & (columns >= rows)
                 & (columns - rows < data.max_answer_length))
        s, e = np.unravel_index(np.argmax(np.where(valid, scores, -np.inf)), scores.shape)
        a, b = int(offsets[s][0]), int(offsets[e][1])
        assert (example["context"][a:b], a, b) == (
            served["answer"][i].decode(), int(served["start_char"][i]),
            int(served["end_char"][i])), example["id"]


@pytest.mark.parametrize("name", ["squad_v1", "squad_v2"])
def test_serving_ids_gives_the_models_logits(exports, name):
    run = exports[name]
    served = run["served"][-1]
    assert set(served) == {"start_logits", "end_logits"}
    np.testing.assert_allclose(served["start_logits"], run["logits"]["start_positions"],
                               atol=1e-5)
    np.testing.assert_allclose(served["end_logits"], run["logits"]["end_positions"], atol=1e-5)


def test_signatures_are_listed_by_saved_model_cli(exports):
    signatures = saved_model_signatures(exports["squad_v2"]["path"])
    assert signatures["serving_default"] == ({"question", "context"}, OUTPUTS)
    assert signatures["serving_ids"] == ({"token_ids", "segment_ids", "padding_mask"},
                                         {"start_logits", "end_logits"})
    for name in ("squad_v1", "squad_v2"):  # v2.0's with dynamic padding
        assert_every_input_batches(exports[name]["path"], "span_qa")


@pytest.mark.parametrize("name", ["squad_v1", "squad_v2"])
def test_bad_input_gives_the_documented_outputs(exports, name):
    results = dict(zip([n for n, _ in bad_inputs()], exports[name]["served"][1:-1]))
    for case, result in results.items():
        assert "error" not in result, (case, result)
        assert set(result) == OUTPUTS, case
    requests = dict(bad_inputs())

    def check_span(case, context):
        result = results[case]
        answer = result["answer"][0].decode("utf-8")
        start, end = int(result["start_char"][0]), int(result["end_char"][0])
        if answer:
            assert context[start:end] == answer, case
        else:
            assert (start, end) == (-1, -1), case
        assert np.isfinite(result["score"][0]), case
        return answer

    # No window for a context without tokens: no answer, score 0.0 (training refuses it).
    for case in ("empty context", "blank context"):
        result = results[case]
        assert (result["answer"].tolist(), result["start_char"].tolist(),
                result["end_char"].tolist(), result["score"].tolist()) == ([b""], [-1], [-1],
                                                                           [0.0]), case
    # An empty question still packs ([CLS] [SEP] context); a 100,000-character context gets
    # hundreds of windows; invalid bytes read as U+FFFD, one character each, like the
    # tokenizer reads them. Each answer is the Python pipeline's on the same text.
    repaired = requests["invalid UTF-8"]["context"][0].decode("utf-8", errors="replace")
    assert repaired == "Zo\u00eb met \ufffd\ufffd Ren\u00e9e in Krak\ufffdw."
    contexts = {"empty question": requests["empty question"]["context"][0],
                "3,000 characters": requests["3,000 characters"]["context"][0],
                "invalid UTF-8": repaired}
    for case, context in contexts.items():
        expected, s_best, windows = exports[name]["alone"][case]
        assert check_span(case, context) == expected, case
        assert results[case]["score"][0] == pytest.approx(s_best, abs=1e-5), case
    assert exports[name]["alone"]["3,000 characters"][2] > 20  # windows
    check_span("long context", requests["long context"]["context"][0])
    # A batch of 0 answers nothing.
    assert all(value.shape == (0,) for value in results["batch of 0"].values())


@pytest.mark.parametrize("length,stride,query", [(48, 16, 16), (40, 100, 30)])
def test_graph_windows_equal_span_qa_windows(sample_data, length, stride, query):
    """span_qa_windows_graph cuts the dev contexts exactly as span_qa_windows (stride below and
    above the window; questions cut)."""
    import tensorflow as tf

    import zoo_tasks
    from zoo.data.span_qa import span_qa_windows_graph

    config = config_lib.resolve("bert/squad_v2", overrides(
        sample_data, f"data.sequence_length={length}", f"data.doc_stride={stride}",
        f"data.max_query_length={query}"))
    task = zoo_tasks.create("squad_v2", config, check_data=False)
    examples, expected = task.examples("dev"), task.windows("dev")
    tok = task.tokenizer
    ids, starts, ends = tok.tokenize_with_offsets(tf.constant([e["context"] for e in examples]))
    windows = span_qa_windows_graph(tok(tf.constant([e["question"] for e in examples])), ids,
                                    starts, ends, length, stride, query, tok.cls_token_id,
                                    tok.sep_token_id, tok.pad_token_id)
    assert len(expected["token_ids"]) > 2 * len(examples)
    for key, value in windows.items():
        np.testing.assert_array_equal(value.numpy(), expected[key], err_msg=key)


def test_tau_is_read_from_the_run_or_zero(sample_data, tmp_path):
    import zoo_tasks

    config = config_lib.resolve("bert/squad_v2", overrides(sample_data))
    task = zoo_tasks.create("squad_v2", config, check_data=False)
    assert task.null_threshold(str(tmp_path)) == 0.0  # no null_threshold.json: τ = 0
    (tmp_path / "null_threshold.json").write_text(json.dumps({"tau": -1.25}))
    assert task.null_threshold(str(tmp_path)) == -1.25
    v1 = zoo_tasks.create("squad_v1", config_lib.resolve("bert/squad_v1", overrides(sample_data)),
                          check_data=False)
    assert v1.null_threshold(str(tmp_path)) == 0.0  # v1.1 always answers
