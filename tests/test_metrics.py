"""Benchmark metrics and `zoo score`: every expected number comes from sklearn/scipy called
directly or from arithmetic written out here, never from zoo.metrics itself."""

import json
import math
import os

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from zoo.data import BENCHMARKS, read_examples
from zoo.data.samples import LAYOUT, write_samples
from zoo.metrics import METRICS, compute, read_predictions, write_predictions
from zoo_cli import main as cli


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    out = tmp_path_factory.mktemp("metrics") / "samples"
    write_samples(out)
    return out


def gold_labels(task, path):
    return [example["label"] for example in read_examples(task, path)]


def write_rows(path, rows, header="index\tprediction"):
    """A predictions file written by hand, independently of write_predictions."""
    path.write_text("".join(line + "\n" for line in [header, *rows]), encoding="utf-8")
    return path


def zoo_score(task, gold, predictions, capsys):
    code = cli.main(["score", task, "--gold", str(gold), "--predictions", str(predictions)])
    out, err = capsys.readouterr()
    return code, out, err


# === compute: against sklearn/scipy and hand arithmetic ===


def test_main_metric_comes_first():
    # GLUE paper / BERT Table 1: MCC for CoLA, F1 for MRPC and QQP, Spearman for STS-B.
    assert {task: names[0] for task, names in METRICS.items()} == {
        "glue/cola": "mcc", "glue/sst2": "accuracy", "glue/mrpc": "f1", "glue/qqp": "f1",
        "glue/stsb": "spearman", "glue/mnli": "accuracy", "glue/qnli": "accuracy",
        "glue/rte": "accuracy", "glue/wnli": "accuracy", "snli": "accuracy",
        "scitail": "accuracy"}
    assert METRICS["glue/mrpc"] == METRICS["glue/qqp"] == ("f1", "accuracy")
    assert METRICS["glue/stsb"] == ("spearman", "pearson")


def test_the_former_module_names_still_import():
    # Deprecated names (CHANGELOG): zoo.metrics.squad, .conll, .token_classification, .choices
    # and .images.
    from zoo.metrics import (
        choices,
        conll,
        image_classification,
        images,
        multiple_choice,
        span_qa,
        squad,
        tagging,
        token_classification,
    )

    assert squad.squad_v2 is span_qa.squad_v2
    assert conll.score_conll is tagging.score_conll
    assert token_classification.score_token_classification is tagging.score_token_classification
    assert choices.score_choices is multiple_choice.score_choices
    assert images.score_image_folder is image_classification.score_image_folder


@pytest.mark.parametrize("seed", range(5))
def test_compute_equals_sklearn_and_scipy_on_random_labels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    for task in ("glue/mrpc", "glue/qqp", "glue/cola", "glue/mnli", "snli", "scitail"):
        labels = BENCHMARKS[task].labels
        gold = [labels[i] for i in rng.integers(0, len(labels), n)]
        predicted = [labels[i] for i in rng.integers(0, len(labels), n)]
        expected = {"accuracy": sk.accuracy_score(gold, predicted)}
        if task == "glue/cola":
            expected = {"mcc": sk.matthews_corrcoef(gold, predicted)}
        elif task in ("glue/mrpc", "glue/qqp"):
            expected["f1"] = sk.f1_score(gold, predicted, pos_label="1")
        result = compute(task, gold, predicted)
        assert result == expected and list(result) == list(METRICS[task])
        assert all(type(value) is float for value in result.values())
    gold = rng.uniform(0, 5, n)
    predicted = gold + rng.normal(0, 1.5, n)
    assert compute("glue/stsb", list(gold), list(predicted)) == {
        "spearman": stats.spearmanr(gold, predicted).statistic,
        "pearson": stats.pearsonr(gold, predicted).statistic}


def test_f1_and_mcc_by_hand():
    gold = ["1", "1", "1", "0", "0", "1"]
    predicted = ["1", "0", "1", "1", "0", "1"]
    tp, fp, fn, tn = 3, 1, 1, 1  # positions 0, 2, 5 | 3 | 1 | 4
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall)  # 0.75
    mcc = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))  # 0.25
    result = compute("glue/mrpc", gold, predicted)
    assert result["f1"] == pytest.approx(f1) == 0.75
    assert result["accuracy"] == pytest.approx((tp + tn) / 6)
    assert compute("glue/cola", gold, predicted)["mcc"] == pytest.approx(mcc) == 0.25
    # F1 is of the positive class "1": swapping the classes changes it (tp 1, fp 1, fn 1).
    swapped = [{"0": "1", "1": "0"}[label] for label in gold]
    assert compute("glue/qqp", swapped, [{"0": "1", "1": "0"}[p] for p in predicted])["f1"] \
        == pytest.approx(2 * 1 / (2 * 1 + 1 + 1))


def test_correlations_by_hand():
    gold = [1.0, 2.0, 3.0, 4.0]
    # Deviations (-1.5, -0.5, 0.5, 1.5) and (-1.5, 0.5, -0.5, 1.5): 4 / sqrt(5 * 5) = 0.8.
    assert compute("glue/stsb", gold, [1.0, 3.0, 2.0, 4.0]) == pytest.approx(
        {"spearman": 0.8, "pearson": 0.8})
    # Spearman sees only the ranks (1, 3, 2, 4); Pearson sees the outlier.
    predicted = np.array([1.0, 3.0, 2.0, 40.0])
    deviations = predicted - predicted.mean(), np.array(gold) - 2.5
    pearson = (deviations[0] @ deviations[1]) / math.sqrt(
        (deviations[0] @ deviations[0]) * (deviations[1] @ deviations[1]))
    assert compute("glue/stsb", gold, list(predicted)) == pytest.approx(
        {"spearman": 0.8, "pearson": pearson})


def test_degenerate_predictions_follow_the_libraries():
    assert compute("glue/cola", ["0", "1", "1"], ["1", "1", "1"]) == {"mcc": 0.0}
    assert compute("glue/mrpc", ["0", "0"], ["0", "0"]) == {"f1": 0.0, "accuracy": 1.0}
    with pytest.warns(stats.ConstantInputWarning):
        result = compute("glue/stsb", [1.0, 2.0, 3.0], [2.5, 2.5, 2.5])
    assert math.isnan(result["spearman"]) and math.isnan(result["pearson"])


def test_compute_rejects_bad_input():
    with pytest.raises(ValueError, match="3 gold labels and 2 predictions"):
        compute("glue/rte", ["entailment"] * 3, ["entailment"] * 2)
    with pytest.raises(ValueError, match="0 gold labels and 0 predictions"):
        compute("glue/rte", [], [])
    with pytest.raises(ValueError, match="glue/cola"):
        compute("squad_v1", ["a"], ["a"])


# === zoo score on the sample dev files ===

DEV = [("glue/mrpc", "dev"), ("glue/cola", "dev"), ("glue/stsb", "dev"),
       ("glue/mnli", "dev_matched"), ("snli", "dev"), ("scitail", "dev")]


@pytest.mark.parametrize("task,split", DEV)
def test_gold_labels_as_predictions_score_perfectly(samples, tmp_path, capsys, task, split):
    gold_path = samples / LAYOUT[task][split]
    gold = gold_labels(task, gold_path)
    write_predictions(tmp_path / "predictions.tsv", gold)
    code, out, err = zoo_score(task, gold_path, tmp_path / "predictions.tsv", capsys)
    assert code == 0, err
    assert out.count("\n") == 1
    result = json.loads(out)
    assert result.pop("task") == task and result.pop("examples") == len(gold)
    assert result == {name: 1.0 for name in METRICS[task]}


@pytest.mark.parametrize("task,split", DEV)
def test_perturbed_predictions(samples, tmp_path, capsys, task, split):
    gold_path = samples / LAYOUT[task][split]
    gold = gold_labels(task, gold_path)
    flipped = set(range(0, len(gold), 7))
    labels = BENCHMARKS[task].labels
    if labels is None:  # STS-B: move the flipped scores to the other end of the 0-5 scale
        predicted = [5.0 - g if i in flipped else g for i, g in enumerate(gold)]
    else:
        predicted = [labels[(labels.index(g) + 1) % len(labels)] if i in flipped else g
                     for i, g in enumerate(gold)]
    # Rows in reverse order: the index, not the position, says which example a row is.
    rows = [f"{i}\t{repr(p) if labels is None else p}" for i, p in enumerate(predicted)][::-1]
    code, out, err = zoo_score(task, gold_path, write_rows(tmp_path / "p.tsv", rows), capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["examples"] == len(gold)
    if labels is None:
        assert result["spearman"] == stats.spearmanr(gold, predicted).statistic < 1
        assert result["pearson"] == stats.pearsonr(gold, predicted).statistic < 1
    elif task == "glue/cola":
        assert result["mcc"] == sk.matthews_corrcoef(gold, predicted) < 1
    else:
        assert result["accuracy"] == sk.accuracy_score(gold, predicted)
        assert result["accuracy"] == pytest.approx((len(gold) - len(flipped)) / len(gold))
    if task == "glue/mrpc":
        tp = sum(g == p == "1" for g, p in zip(gold, predicted))
        fp = sum(g == "0" and p == "1" for g, p in zip(gold, predicted))
        fn = sum(g == "1" and p == "0" for g, p in zip(gold, predicted))
        assert result["f1"] == sk.f1_score(gold, predicted, pos_label="1")
        assert result["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))


def test_bom_and_crlf_are_tolerated(samples, tmp_path, capsys):
    gold_path = samples / LAYOUT["glue/rte"]["dev"]
    gold = gold_labels("glue/rte", gold_path)
    text = "\ufeffindex\tprediction\r\n" + "".join(f"{i}\t{g}\r\n" for i, g in enumerate(gold))
    (tmp_path / "p.tsv").write_bytes(text.encode("utf-8"))
    code, out, err = zoo_score("glue/rte", gold_path, tmp_path / "p.tsv", capsys)
    assert code == 0, err
    assert json.loads(out) == {"accuracy": 1.0, "examples": len(gold), "task": "glue/rte"}


# === Bad predictions files: exit 1, one line naming the file and line ===


def _mrpc_rows(gold):
    return [f"{i}\t{g}" for i, g in enumerate(gold)]


BAD = {  # name -> (edit of the correct rows, header, line, words in the message)
    "missing index": (lambda rows: rows[:-1], None, 101, "missing index"),
    "duplicate index": (lambda rows: rows[:7] + ["5\t1"] + rows[8:], None, 9, "duplicate index"),
    "unknown label": (lambda rows: rows[:3] + ["3\t2"] + rows[4:], None, 5, "unknown label"),
    "wrong header": (lambda rows: rows, "id\tlabel", 1, "unexpected header"),
    "non-integer index": (lambda rows: rows[:2] + ["two\t1"] + rows[3:], None, 4, "bad index"),
    "index out of range": (lambda rows: rows + ["100\t1"], None, 102, "index out of range"),
    "wrong column count": (lambda rows: rows[:1] + ["1\t1\t0"] + rows[2:], None, 3,
                           "wrong column count"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_predictions_file(samples, tmp_path, capsys, monkeypatch, name):
    monkeypatch.delenv("ZOO_TRACEBACK", raising=False)
    edit, header, line, words = BAD[name]
    gold_path = samples / LAYOUT["glue/mrpc"]["dev"]
    rows = edit(_mrpc_rows(gold_labels("glue/mrpc", gold_path)))
    path = write_rows(tmp_path / "p.tsv", rows, header or "index\tprediction")
    code, out, err = zoo_score("glue/mrpc", gold_path, path, capsys)
    assert code == 1 and out == ""
    assert f"zoo score: error: {path}:{line}: {words}" in err and "Traceback" not in err


def test_non_number_for_stsb(samples, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ZOO_TRACEBACK", raising=False)
    gold_path = samples / LAYOUT["glue/stsb"]["dev"]
    rows = [f"{i}\t{g}" for i, g in enumerate(gold_labels("glue/stsb", gold_path))]
    rows[4] = "4\thigh"
    path = write_rows(tmp_path / "p.tsv", rows)
    code, _, err = zoo_score("glue/stsb", gold_path, path, capsys)
    assert code == 1
    assert f"{path}:6: not a number: expected a finite number, found 'high'" in err


def test_test_file_as_gold(samples, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ZOO_TRACEBACK", raising=False)
    gold_path = samples / LAYOUT["glue/mrpc"]["test"]
    path = write_rows(tmp_path / "p.tsv", [f"{i}\t1" for i in range(100)])
    code, _, err = zoo_score("glue/mrpc", gold_path, path, capsys)
    assert code == 1
    # Readers do not keep line numbers, so the place is the first example and its id.
    assert f"{gold_path}: example 0 (id '0'): no gold label" in err and "test file" in err


def test_missing_file_and_unsupported_task(samples, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ZOO_TRACEBACK", raising=False)
    gold_path = samples / LAYOUT["glue/mrpc"]["dev"]
    code, _, err = zoo_score("glue/mrpc", gold_path, tmp_path / "absent.tsv", capsys)
    assert code == 1 and "absent.tsv" in err
    code, _, err = zoo_score("pretrain/masked_lm", gold_path, tmp_path / "absent.tsv", capsys)
    assert code == 1 and "cannot score task 'pretrain/masked_lm'" in err and "glue/stsb" in err


# === write_predictions / read_predictions ===


def test_round_trip_labels_and_exact_floats(tmp_path):
    labels = ["entailment", "neutral", "contradiction", "neutral"]
    path = tmp_path / "new" / "dir" / "mnli.tsv"
    write_predictions(path, labels)
    assert read_predictions(path, 4, BENCHMARKS["glue/mnli"].labels) == labels
    assert path.read_text().splitlines()[:2] == ["index\tprediction", "0\tentailment"]
    scores = [0.1, 1 / 3, 2.675, 5e-324, 1e300, -0.0, 4.999999999999999,
              np.float32(0.1), np.float64(2 / 7)]
    write_predictions(path, scores)
    back = read_predictions(path, len(scores))
    assert back == [float(x) for x in scores]
    assert all(a.hex() == float(b).hex() for a, b in zip(back, scores))  # bit for bit
    assert os.listdir(path.parent) == ["mnli.tsv"]  # no temporary file left behind


def test_predictions_edited_on_windows_read_as_written(tmp_path):
    # "\r\n" endings, with or without the last line's "\n" (an editor that drops it).
    path = tmp_path / "dev.tsv"
    for ending in (b"\r\n", b"\r"):
        path.write_bytes(b"index\tprediction\r\n0\t1\r\n1\t0" + ending)
        assert read_predictions(path, 2, ("0", "1")) == ["1", "0"]


def test_write_predictions_refuses_what_the_format_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match="prediction 1"):
        write_predictions(tmp_path / "p.tsv", ["1", "a\tb"])
    assert not (tmp_path / "p.tsv").exists()
