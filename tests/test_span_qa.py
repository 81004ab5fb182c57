"""SQuAD v1.1 / v2.0: training on the samples, post-processing, the official scoring rules.

Expected scores are worked out by hand from the rules of the official evaluate-v1.1.py and
evaluate-v2.0.py (not installable; zoo.metrics.span_qa rewrites them); each derivation is in a
comment. The training runs use the 128-wide BERT (WIDE) of tests/test_training.py (at 64 wide,
v1.1 F1 29.0 and v2.0 best F1 19.9 fall short) on windows of 96 tokens every 48, so many sample
contexts get two windows.
"""

import json
import os
import shutil

import numpy as np
import pytest

from tests.test_training import WIDE
from zoo import config as config_lib
from zoo.data import DataError
from zoo.data.samples import LAYOUT
from zoo.metrics import span_qa as span_qa_metrics
from zoo_tasks.runs import train as train_run

# Measured at learning rate 1e-3 with train.seed 0 / 1 / 2: v2.0 best_f1 41.4 / 44.2 / 36.1
# (empty-answer baseline 18.2), v1.1 F1 36.0 / - / 32.3 (baseline 0). At 2e-3 v2.0 varied
# from 27 to 41 between seeds once every weight had its own random initial values. Cheaper
# settings measured for issue #64 keep no margin: 9 epochs gave v1.1 F1 30.4 and v2.0 best_f1
# 34.8 at seed 0 (limits 30 and 33.2); batch 16 for 6 epochs (as many steps as now, half the
# windows) v1.1 F1 28.3 / 27.9 and v2.0 best_f1 33.5 / 32.5 at seeds 0 / 1.
EPOCHS = 12
# CI trains SQuAD in one version, 2.0: its questions with an answer teach the same model, head,
# windows and loss as 1.1's, and its unanswerable ones the null answer and the threshold
# search on top. 1.1's pipeline still trains, exports, serves and is scored by the official
# rules in CI (tests/test_span_qa_export.py). ZOO_ALL_STYLES=1 trains and checks 1.1 here too
# (~50 CPU-s; docs/measurements.md, "The test suite").
ALL_STYLES = os.environ.get("ZOO_ALL_STYLES") == "1"
TRAINED = ("squad_v1", "squad_v2") if ALL_STYLES else ("squad_v2",)


def overrides(sample_data, *extra, sizes=WIDE):
    return sizes["bert"] + [
        f"model.vocabulary={sample_data['wordpiece']}",
        f"data.dir={sample_data['root'] / 'squad'}", "data.sequence_length=96",
        "data.doc_stride=48", "data.max_query_length=24", "train.batch_size=32",
        "train.learning_rate=1e-3", f"train.epochs={EPOCHS}", "train.deterministic=true",
        "train.eval_every=100000", *extra]


@pytest.fixture(scope="module")
def runs(sample_data, tmp_path_factory):
    """One trained run directory per task, and its training metrics."""
    out = {}
    for task in TRAINED:
        run_dir = tmp_path_factory.mktemp(task) / "run"
        config = config_lib.resolve(f"bert/{task}", overrides(sample_data))
        out[task] = (run_dir, train_run(config, str(run_dir)))
    return out


def gold_file(sample_data, task):
    return sample_data["root"] / LAYOUT[task]["dev"]


def empty_answer_f1(path):
    """F1 of answering "" everywhere, from the gold file alone: SQuAD 1.1 gives every question
    an answer, so "" scores F1 0 on each; in 2.0 "" is right exactly on the unanswerable ones."""
    qas = [qa for article in json.loads(path.read_text())["data"]
           for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    return 100.0 * sum(bool(qa.get("is_impossible")) for qa in qas) / len(qas)


# === Training ===


@pytest.mark.skipif(not ALL_STYLES, reason=(
    "reduced form: CI trains SQuAD 2.0 (1.1's pipeline trains and serves in "
    "test_span_qa_export); ZOO_ALL_STYLES=1 trains 1.1 too"))
def test_squad_v1_trains_far_above_the_empty_answer(sample_data, runs):
    baseline = empty_answer_f1(gold_file(sample_data, "squad_v1"))
    assert baseline == 0.0
    _, metrics = runs["squad_v1"]
    assert metrics["f1"] >= baseline + 30, metrics
    assert metrics["exact_match"] >= 25, metrics


def test_squad_v2_trains_and_tunes_the_null_threshold(sample_data, runs):
    baseline = empty_answer_f1(gold_file(sample_data, "squad_v2"))
    assert 10 < baseline < 30  # one unanswerable question per paragraph
    run_dir, metrics = runs["squad_v2"]
    assert metrics["best_f1"] >= baseline + 15, (metrics, baseline)
    # The tuned threshold is the best of a search that includes the tau = 0 predictions.
    assert metrics["best_f1"] >= metrics["f1"]
    assert metrics["tau"] == -metrics["best_f1_thresh"]
    saved = json.loads((run_dir / "null_threshold.json").read_text())
    assert saved["tau"] == metrics["tau"]
    assert saved["f1_at_zero"] == metrics["f1"] and saved["f1_at_tau"] == metrics["best_f1"]


def test_zoo_score_reproduces_zoo_evaluate(sample_data, runs, capsys):
    from zoo_cli.main import main

    capsys.readouterr()  # the training runs' output
    for task in TRAINED:
        run_dir, trained = runs[task]
        assert main(["evaluate", "--run-dir", str(run_dir)]) == 0
        evaluated = json.loads(capsys.readouterr().out.splitlines()[0])
        # One evaluation, at the end: best.keras, reloaded, predicts what the trained model did.
        assert evaluated == trained
        predictions = run_dir / "predictions" / "dev.json"
        answers = json.loads(predictions.read_text(encoding="utf-8"))
        contexts = {qa["id"]: paragraph["context"]
                    for article in json.loads(gold_file(sample_data, task).read_text())["data"]
                    for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
        assert set(answers) == set(contexts)
        assert all(answer in contexts[qid] for qid, answer in answers.items())
        args = ["score", task, "--gold", str(gold_file(sample_data, task)),
                "--predictions", str(predictions)]
        if task == "squad_v2":
            args += ["--na-prob", str(run_dir / "predictions" / "dev_na_prob.json")]
        assert main(args) == 0
        scored = json.loads(capsys.readouterr().out)
        assert scored.pop("task") == task
        assert scored == {k: v for k, v in evaluated.items() if k != "tau"}
    # --na-prob is a SQuAD 2.0 option: refused for the others, with the reason (before
    # anything is scored: a 2.0 run's files serve).
    v2_dir = runs["squad_v2"][0] / "predictions"
    assert main(["score", "squad_v1", "--gold", str(gold_file(sample_data, "squad_v1")),
                 "--predictions", str(v2_dir / "dev.json"), "--na-prob",
                 str(v2_dir / "dev_na_prob.json")]) == 1
    assert "--na-prob is for squad_v2" in capsys.readouterr().err


def test_training_stream_resumes_exactly_and_gpt_is_refused(sample_data):
    import zoo_tasks

    config = config_lib.resolve("bert/squad_v1", overrides(sample_data, "train.batch_size=8"))
    task = zoo_tasks.create("squad_v1", config)
    windows = len(task.windows("train")["token_ids"])
    assert windows > len(task.examples("train"))  # some contexts have several windows
    steps = -(-windows // 8) + 3  # across the end of the first pass

    def ids(dataset, n):
        return [x["token_ids"].numpy() for x, _ in dataset.take(n)]

    full = ids(task.dataset("train", repeat=True), steps)
    resumed = ids(task.dataset("train", repeat=True, skip_batches=steps - 5), 5)
    assert all((a == b).all() for a, b in zip(full[-5:], resumed))
    with pytest.raises(config_lib.ConfigError, match="needs a BERT preset"):
        zoo_tasks.create("squad_v1", config_lib.resolve("bert/squad_v1", ["model.preset=gpt1"]))


# === Post-processing ===


def test_best_span_over_two_windows_maps_back_to_the_context():
    from zoo.data.span_qa import span_qa_windows
    from zoo.tokenizers import WordPieceTokenizer
    from zoo_tasks.span_qa import best_spans

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "?", "zoe", "met", "renee",
             "in", "krak", "##ow", "and", "then", "left", "."]
    tokenizer = WordPieceTokenizer(vocab)
    context = "Zoë met Renée in Kraków and then left."
    example = {"id": "q", "question": "Who?", "context": context,
               "answers": [{"text": "Kraków", "answer_start": 17}]}
    # Context tokens 0-9: zoe met renee in krak ##ow and then left . ; the question is 2
    # tokens, so a 12-token window holds 12 - 2 - 3 = 7 context tokens. Windows start at 0 and
    # 3 (0 + 7 < 10, 3 + 7 = 10 reaches the end): w0 = tokens 0-6, w1 = tokens 3-9, each at
    # positions 4-10 after [CLS] who ? [SEP].
    windows = span_qa_windows([example], tokenizer, max_sequence_length=12, doc_stride=3,
                              max_query_length=64)
    ids = {t: i for i, t in enumerate(vocab)}
    expected = [["zoe", "met", "renee", "in", "krak", "##ow", "and"],
                ["in", "krak", "##ow", "and", "then", "left", "."]]
    for w, tokens in enumerate(expected):
        assert windows["token_ids"][w].tolist() == [ids[t] for t in
                                                    ["[CLS]", "who", "?", "[SEP]", *tokens,
                                                     "[SEP]"]]
    # Max context (min(left, right) + 0.01 * 7 per window): krak (token 4) has min(4, 2) = 2
    # in w0 and min(1, 5) = 1 in w1, so w0; ##ow (token 5) has 1 in w0 and 2 in w1, so w1.
    assert windows["max_context_mask"][0, 8] and not windows["max_context_mask"][1, 5]
    start, end = np.zeros((2, 12)), np.zeros((2, 12))
    start[:, 0], end[:, 0] = [1.0, 0.5], [1.0, 0.5]  # [CLS]: 2.0 in w0, 1.0 in w1
    start[0, 8], end[0, 9] = 5.0, 4.0  # w0: krak .. ##ow = 9.0, the expected answer
    end[0, 10] = 4.6  # krak .. and = 9.6, but 3 tokens > max_answer_length 2
    start[1, 5], end[1, 6] = 6.0, 5.0  # w1: krak .. ##ow = 11.0, but w1 is not krak's max context
    start[1, 1], end[1, 1] = 10.0, 8.0  # question token "who": not in the context
    start[1, 8], end[1, 4] = 3.0, 7.0  # then .. in = 10.0, but the end precedes the start
    (text, s_best, s_null), = best_spans(windows, [context], start, end, n_best_size=20,
                                         max_answer_length=2)
    # krak is characters [17, 21) and ##ow [21, 23) (ó is one character): context[17:23].
    assert text == "Kraków" == context[17:23]
    assert s_best == 9.0
    assert s_null == 1.0  # the smaller [CLS] score of the two windows (run_squad.py)


# === Official scoring rules ===


def test_squad_v1_scores_by_the_official_rules(tmp_path):
    gold = {
        "q1": ["The Eiffel Tower"],
        "q2": ["an apple", "two red apples"],
        "q3": ["New  York"],
        "q4": ["A"],
        "q5": ["Berlin"],
        "q6": ["rock-n-roll"],
    }
    predictions = {"q1": "eiffel tower!", "q2": "red apple", "q3": "  new\tyork ",
                   "q4": "a", "q6": "Rock n roll"}
    # q1: both normalise to "eiffel tower" (article, case, "!"): EM 1, F1 1.
    # q2: golds "apple" and "two red apples" (articles gone), prediction "red apple".
    #     EM 0. F1 against "apple": 1 common token, P 1/2, R 1/1, F1 2/3; against "two red
    #     apples": 1 common ("red"), P 1/2, R 1/3, F1 2/5. Max: 2/3.
    # q3: whitespace collapses: "new york" both: EM 1, F1 1.
    # q4: "A" and "a" both normalise to "": EM 1; v1.1's F1 has no common token: 0.
    # q5: no prediction: wrong (0, 0), counted in the total.
    # q6: punctuation is deleted, not spaced: "rocknroll" vs "rock n roll": EM 0, F1 0.
    # EM = (1 + 0 + 1 + 1 + 0 + 0) / 6 = 50; F1 = (1 + 2/3 + 1 + 0 + 0 + 0) / 6 = 4/9.
    result = span_qa_metrics.squad_v1(gold, predictions)
    assert result["exact_match"] == 50.0
    assert result["f1"] == pytest.approx(400 / 9)
    assert result["missing"] == 1


V2_GOLD = {"a1": ["Paris", "the city of Paris"], "a2": ["blue whale"], "a3": ["1984"],
           "a4": ["the", "An Answer"], "n1": [], "n2": []}
V2_PREDICTIONS = {"a1": "Paris", "a2": "whale", "a3": "", "a4": "answer", "n1": "",
                  "n2": "London"}


def test_squad_v2_scores_by_the_official_rules():
    # Raw scores (EM, F1): a1 "Paris" = gold 1: (1, 1). a2 "whale" vs "blue whale": (0, 2/3)
    # (P 1, R 1/2). a3 "" vs "1984": (0, 0) (one side empty, the other not). a4: gold "the"
    # normalises to "" and is dropped, "An Answer" -> "answer" = prediction: (1, 1).
    # n1: gold [""], prediction "": (1, 1). n2: gold [""], prediction "London": (0, 0).
    result = span_qa_metrics.squad_v2(V2_GOLD, V2_PREDICTIONS)
    assert result == pytest.approx({
        "exact": 100 * 3 / 6, "f1": 100 * (1 + 2 / 3 + 0 + 1 + 1 + 0) / 6, "total": 6,
        "HasAns_exact": 100 * 2 / 4, "HasAns_f1": 100 * (1 + 2 / 3 + 0 + 1) / 4,
        "HasAns_total": 4, "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2})


def test_squad_v2_threshold_search_by_the_official_rules():
    # File order of the no-answer scores matters for ties (the official sort is stable).
    na_probs = {"a4": -1.0, "n2": -1.0, "a1": -2.0, "a2": 0.5, "n1": 0.5, "a3": 3.0}
    result = span_qa_metrics.squad_v2(V2_GOLD, V2_PREDICTIONS, na_probs)
    # na_prob_thresh 1.0: only a3 (3.0) counts as "", answerable, so 0 as before: the
    # plain scores are the raw ones of the test above.
    assert result["exact"] == 50.0 and result["f1"] == pytest.approx(100 * (11 / 3) / 6)
    # find_best_thresh: start with every question unanswered = 2 (n1, n2), best 2, thresh 0.
    # Sorted by score: a1 (-2), a4 (-1), n2 (-1), a2 (0.5), n1 (0.5), a3 (3).
    # EM: a1 +1 -> 3 (thresh -2); a4 +1 -> 4 (thresh -1); n2 answered "London" -1 -> 3;
    #     a2 +0; n1 "" +0; a3 +0. Best 4 of 6 at -1.0. (At -1.0 n2 is answered too, so no
    #     threshold really reaches 4: the official search walks ties one question at a time.)
    # F1: a1 +1 -> 3; a4 +1 -> 4 (thresh -1); n2 -1 -> 3; a2 +2/3 -> 3.67; rest +0. Best 4.
    assert result["best_exact"] == pytest.approx(400 / 6)
    assert result["best_exact_thresh"] == -1.0
    assert result["best_f1"] == pytest.approx(400 / 6)
    assert result["best_f1_thresh"] == -1.0


def test_squad_v2_threshold_search_keeps_all_unanswered_and_forces_empty_above_one():
    # Start: n1 answered "y" but counted as unanswered: 1; n1 (0.1) -1 -> 0; a1 (0.2) wrong
    # answer +0 -> 0. Nothing beats 1: best 1 of 2 = 50 at the initial threshold 0.0.
    result = span_qa_metrics.squad_v2({"n1": [], "a1": ["x"]}, {"n1": "y", "a1": "z"},
                                      {"n1": 0.1, "a1": 0.2})
    assert (result["best_f1"], result["best_f1_thresh"]) == (50.0, 0.0)
    # A no-answer score above 1.0 turns "y" into "": n1 right, EM and F1 1 of 2.
    result = span_qa_metrics.squad_v2({"n1": [], "a1": ["x"]}, {"n1": "y", "a1": "z"},
                                      {"n1": 1.5, "a1": 0.2})
    assert (result["exact"], result["f1"]) == (50.0, 50.0)


def test_squad_v2_missing_predictions_are_wrong_and_counted(caplog):
    # a1 right; n1 has no prediction: wrong (not "" by default) -> 1 of 2 = 50. The search
    # starts at 0 (no answered unanswerable question), a1 +1 -> 1 at thresh 0.0: 50.
    with caplog.at_level("WARNING", logger="zoo.metrics"):
        result = span_qa_metrics.squad_v2({"a1": ["x"], "n1": []}, {"a1": "x"}, {"a1": 0.0})
    assert "no prediction for 1 of 2 questions" in caplog.text
    assert result["exact"] == 50.0 and result["total"] == 2 and result["missing"] == 1
    assert result["NoAns_exact"] == 0.0
    assert (result["best_exact"], result["best_exact_thresh"]) == (50.0, 0.0)


def test_squad_score_files_and_their_errors(tmp_path):
    from zoo import metrics

    document = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{
        "context": "Paris is big.", "qas": [
            {"id": "a1", "question": "Q?", "answers": [{"text": "Paris", "answer_start": 0}],
             "is_impossible": False},
            {"id": "n1", "question": "Q?", "answers": [], "is_impossible": True}]}]}]}
    gold = tmp_path / "dev-v2.0.json"
    gold.write_text(json.dumps(document))
    predictions = tmp_path / "dev.json"
    predictions.write_text(json.dumps({"a1": "the Paris", "n1": ""}))
    na_prob = tmp_path / "na.json"
    na_prob.write_text(json.dumps({"a1": -3.0, "n1": 2.0}))
    # a1: "paris" = "paris" (the article goes); n1: "" right. All 100; the search: start 1,
    # a1 +1 -> 2 at -3.0, n1 "" +0: best 100 at -3.0.
    result = metrics.score("squad_v2", gold, predictions, na_prob=na_prob)
    assert result == {"exact": 100.0, "f1": 100.0, "total": 2, "HasAns_exact": 100.0,
                      "HasAns_f1": 100.0, "HasAns_total": 1, "NoAns_exact": 100.0,
                      "NoAns_f1": 100.0, "NoAns_total": 1, "best_exact": 100.0,
                      "best_exact_thresh": -3.0, "best_f1": 100.0, "best_f1_thresh": -3.0}
    predictions.write_text(json.dumps({"a1": "Paris", "zz": "x", "yy": ""}))
    with pytest.raises(DataError, match=r"dev\.json.*2 ids not in it: 'zz', 'yy'"):
        metrics.score("squad_v2", gold, predictions)
    predictions.write_text('{"a1": "Paris",')
    with pytest.raises(DataError, match=r"dev\.json:1: malformed JSON"):
        metrics.score("squad_v2", gold, predictions)
    with pytest.raises(ValueError,
                       match="takes no scoring option na_prob .--na-prob is for squad_v2"):
        metrics.score("glue/rte", gold, predictions, na_prob=na_prob)


# === Bad input ===


def broken_copy(sample_data, tmp_path, task, change):
    """The samples' SQuAD files, with `change(document)` applied to the train file."""
    folder = tmp_path / "squad"
    shutil.copytree(sample_data["root"] / "squad", folder)
    path = folder / LAYOUT[task]["train"].split("/")[-1]
    document = json.loads(path.read_text())
    qa_id = change(document)
    path.write_text(json.dumps(document))
    return folder, path, qa_id


def test_bad_answer_start_names_file_and_id_in_zoo_train(sample_data, tmp_path, capsys):
    from zoo_cli.main import main

    def shift(document):
        qa = document["data"][0]["paragraphs"][1]["qas"][0]
        qa["answers"][0]["answer_start"] += 1
        return qa["id"]

    folder, path, qa_id = broken_copy(sample_data, tmp_path, "squad_v1", shift)
    args = ["train", "--experiment", "bert/squad_v1", "--run-dir", str(tmp_path / "run")]
    for override in overrides(sample_data, f"data.dir={folder}"):
        args += ["--set", override]
    assert main(args) == 1
    error = capsys.readouterr().err
    assert str(path) in error and qa_id in error and "answer_start does not match" in error
    assert not (tmp_path / "run").exists()


def test_empty_context_is_an_error_or_a_counted_skip(sample_data, tmp_path):
    import zoo_tasks

    def empty(document):
        paragraph = document["data"][2]["paragraphs"][0]
        paragraph["context"] = "  "
        for qa in paragraph["qas"]:
            qa["answers"], qa["is_impossible"] = [], True
        return paragraph["qas"][0]["id"]

    folder, path, qa_id = broken_copy(sample_data, tmp_path, "squad_v2", empty)
    config = config_lib.resolve("bert/squad_v2", overrides(sample_data, f"data.dir={folder}"))
    with pytest.raises(DataError, match="empty context") as error:
        zoo_tasks.create("squad_v2", config)
    assert str(path) in str(error.value) and qa_id in str(error.value)
    config = config_lib.resolve("bert/squad_v2", overrides(
        sample_data, f"data.dir={folder}", "data.skip_bad_rows=true"))
    task = zoo_tasks.create("squad_v2", config)
    questions = len(json.loads(path.read_text())["data"][2]["paragraphs"][0]["qas"])
    total = sum(len(p["qas"]) for a in json.loads(path.read_text())["data"]
                for p in a["paragraphs"])
    assert len(task.examples("train")) == total - questions
    report = task.report("train")
    assert report.skipped == questions and "empty context" in str(report)
