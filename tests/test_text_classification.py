"""Your own data (issue #41): text_classification on CSV, TSV, JSON lines, Parquet, folders and
rows in memory, in both styles, with one label, several or a score a row; trained, evaluated,
scored, exported, served and converted for transformers.

The rows are the sample datasets' (zoo.data.samples: learnable from random initialization),
rewritten here as a user's files with their own column and label names: SST-2's reviews as
"review" / "sentiment" (negative, positive), RTE's pairs as "premise" / "hypothesis" / "verdict",
STS-B's pairs with their scores, and a multi-label set (the sentiment, plus "short" for
reviews of five words or fewer). Expected metrics come from scikit-learn and scipy on the
predictions files, read back here with the csv module.
"""

import csv
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

import zoo_tasks
from tests.harness import REPO, serve_fresh
from tests.test_signatures_batch import assert_every_input_batches
from tests.test_training import TINY
from zoo import config as config_lib
from zoo.data import DataError
from zoo_cli.main import main as cli
from zoo_tasks import runs

SENTIMENT = {"0": "negative", "1": "positive"}


def _tsv(path):
    """A sample GLUE file's rows as dicts (tab-separated, no quoting: the GLUE layout)."""
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def _write_csv(path, header, rows, **options):
    with open(path, "w", newline="", encoding="utf-8-sig") as file:  # with a byte-order mark
        writer = csv.writer(file, **options)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _write_parquet(path, columns):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), str(path))
    return str(path)


def _multi(text, sentiment):
    return [sentiment] + (["short"] if len(text.split()) <= 5 else [])


@pytest.fixture(scope="module")
def data(sample_data, tmp_path_factory):
    """The users' files. The review CSV is the awkward kind: CRLF line ends, a byte-order
    mark, every field quoted, and a review with a quote, a comma and a line break inside."""
    root, out = sample_data["root"] / "glue", tmp_path_factory.mktemp("own_data")
    reviews = {s: [(r["sentence"].strip(), SENTIMENT[r["label"]])
                   for r in _tsv(root / "SST-2" / f"{s}.tsv")] for s in ("train", "dev")}
    awkward = ('she said "it was, in a word,\r\ncharming" and it is', "positive")
    files = {"reviews": {
        "train": _write_csv(out / "reviews_train.csv", ["review", "sentiment"],
                            reviews["train"] + [awkward], quoting=csv.QUOTE_ALL,
                            lineterminator="\r\n"),
        "dev": _write_csv(out / "reviews_dev.csv", ["review", "sentiment"], reviews["dev"])}}
    dev = reviews["dev"]
    files["dev_as"] = {
        "tsv": _write_csv(out / "dev.tsv", ["review", "sentiment"], dev, delimiter="\t"),
        "jsonl": _write_jsonl(out / "dev.jsonl", [{"review": t, "sentiment": s}
                                                  for t, s in dev]),
        "parquet": _write_parquet(out / "dev.parquet", {"review": [t for t, _ in dev],
                                                        "sentiment": [s for _, s in dev]})}
    folder = out / "dev_folder"
    for i, (text, sentiment) in enumerate(dev):
        (folder / sentiment).mkdir(parents=True, exist_ok=True)
        (folder / sentiment / f"{i:03d}.txt").write_text(text + "\n", encoding="utf-8")
    files["dev_as"]["folder"] = str(folder)
    files["reviews_rows"] = reviews
    # RTE's pairs in JSON lines, for GPT-1's entailment form.
    files["pairs"] = {s: _write_jsonl(out / f"pairs_{s}.jsonl", [
        {"premise": r["sentence1"], "hypothesis": r["sentence2"], "verdict": r["label"]}
        for r in _tsv(root / "RTE" / f"{s}.tsv")]) for s in ("train", "dev")}
    # Several labels a row: Parquet lists to train on, a CSV column joined by ";" to evaluate.
    multi = {s: [(t, _multi(t, s_)) for t, s_ in reviews[s]] for s in ("train", "dev")}
    files["multi"] = {
        "train": _write_parquet(out / "multi_train.parquet",
                                {"text": [t for t, _ in multi["train"]],
                                 "topics": [labels for _, labels in multi["train"]]}),
        "dev": _write_csv(out / "multi_dev.csv", ["text", "topics"],
                          [(t, ";".join(labels)) for t, labels in multi["dev"]])}
    files["scores"] = {s: str(root / "STS-B" / f"{s}.tsv") for s in ("train", "dev")}
    return files


def _settings(sample_data, style="bert", *overrides):
    vocab = sample_data["wordpiece" if style == "bert" else "bpe"]
    return TINY[style] + [f"model.vocabulary={vocab}", "data.sequence_length=48",
                          "train.batch_size=32", "train.learning_rate=1e-3",
                          "data.pad_to_multiple_of=16", "train.eval_every=100000", *overrides]


def _config(sample_data, style, *overrides):
    return config_lib.resolve(f"{style}/text_classification",
                              _settings(sample_data, style, *overrides))


def _reviews(data, *overrides):
    return [f"data.train_file={data['reviews']['train']}",
            f"data.dev_file={data['reviews']['dev']}", "data.text_column=review",
            "data.label_column=sentiment", *overrides]


@pytest.fixture(scope="module")
def trained(sample_data, data, tmp_path_factory):
    """Four runs: BERT on the review CSV, GPT-1 on the pairs' JSON lines, BERT with several
    labels a row (Parquet) and BERT on the scores of pairs (TSV); each exported."""
    root = tmp_path_factory.mktemp("own_runs")
    settings = {
        "reviews": ("bert", _reviews(data, "train.epochs=5")),
        "pairs": ("gpt1", [f"data.train_file={data['pairs']['train']}",
                           f"data.dev_file={data['pairs']['dev']}", "data.text_column=premise",
                           "data.text_pair_column=hypothesis", "data.label_column=verdict",
                           "train.epochs=3"]),
        "multi": ("bert", [f"data.train_file={data['multi']['train']}",
                           f"data.dev_file={data['multi']['dev']}",
                           "data.label_column=topics", "data.multi_label=true",
                           "data.label_separator=;", "train.epochs=6"]),
        "scores": ("bert", [f"data.train_file={data['scores']['train']}",
                            f"data.dev_file={data['scores']['dev']}",
                            "data.text_column=sentence1", "data.text_pair_column=sentence2",
                            "data.label_column=score", "data.id_column=index",
                            "data.regression=true", "train.epochs=1"]),
    }
    out = {}
    for name, (style, overrides) in settings.items():
        run_dir = str(root / name)
        metrics = runs.train(_config(sample_data, style, *overrides), run_dir)
        export = runs.export_run(run_dir, str(root / "exports" / name),
                                 progress=lambda _: None)
        out[name] = {"run": run_dir, "metrics": metrics, "export": export}
    return out


@pytest.fixture(scope="module")
def served(trained, data):
    """Each export's `serving_default` on its dev rows, all four in one fresh process that
    imports only tensorflow and tensorflow_text (as TF Serving runs them)."""
    reviews = [text for text, _ in data["reviews_rows"]["dev"]]
    pairs = [json.loads(line) for line in open(data["pairs"]["dev"], encoding="utf-8")]
    scores = _tsv(pathlib.Path(data["scores"]["dev"]))
    inputs = {"reviews": {"text": reviews},
              "pairs": {"text": [p["premise"] for p in pairs],
                        "text_pair": [p["hypothesis"] for p in pairs]},
              "multi": {"text": _gold(data["multi"]["dev"], "text")},
              "scores": {"text": [r["sentence1"] for r in scores],
                         "text_pair": [r["sentence2"] for r in scores]}}
    answers = serve_fresh(trained["reviews"]["export"], [
        (trained[name]["export"], "serving_default", inputs[name]) for name in inputs])
    return dict(zip(inputs, answers))


def _predictions(path):
    with open(path, encoding="utf-8") as file:
        rows = list(csv.reader(file, delimiter="\t"))
    assert rows[0] == ["index", "prediction"]
    return [value for _, value in sorted((int(i), v) for i, v in rows[1:])]


def _gold(path, column, delimiter=","):
    with open(path, newline="", encoding="utf-8-sig") as file:
        return [row[column] for row in csv.DictReader(file, delimiter=delimiter)]


# === One label a row: the whole journey ===


def test_a_csv_of_reviews_trains_and_its_labels_are_kept_in_the_run(trained, data):
    run = trained["reviews"]
    config = config_lib.from_dict(_yaml(run["run"]), "config.yaml")
    assert config.data.labels == ["negative", "positive"]  # found, sorted, kept
    gold = _gold(data["reviews"]["dev"], "sentiment")
    chance = max(gold.count(x) for x in set(gold)) / len(gold)
    assert run["metrics"]["accuracy"] >= chance + 0.3, run["metrics"]
    metrics = runs.evaluate_run(run["run"])  # the best checkpoint's, as export and convert
    predicted = _predictions(os.path.join(run["run"], "predictions", "dev.tsv"))
    expected = {"accuracy": sk.accuracy_score(gold, predicted),
                "macro_f1": sk.f1_score(gold, predicted, average="macro")}
    for i, name in enumerate(["negative", "positive"]):
        p, r, f, _ = sk.precision_recall_fscore_support(gold, predicted,
                                                        labels=["negative", "positive"])
        expected.update({f"{name}/precision": p[i], f"{name}/recall": r[i], f"{name}/f1": f[i]})
    assert metrics == pytest.approx(expected, abs=1e-12)


def _yaml(run_dir):
    import yaml

    with open(os.path.join(run_dir, "config.yaml"), encoding="utf-8") as file:
        return yaml.safe_load(file)


def test_zoo_score_and_evaluate_read_every_format_alike(trained, data, capsys):
    """The same dev rows as TSV, JSON lines, Parquet and a folder evaluate to the same
    metrics as the CSV; `zoo score` with the columns gives them from the files."""
    run = trained["reviews"]
    expected = runs.evaluate_run(run["run"])  # and predictions/dev.tsv for zoo score
    _, task, model = runs.load_task(run["run"])  # `zoo evaluate --data FILE` in one process
    for kind, path in data["dev_as"].items():
        metrics = task.evaluate(model, path=path)
        assert metrics == pytest.approx(expected, abs=1e-12), kind
    capsys.readouterr()
    assert cli(["score", "text_classification", "--gold", data["reviews"]["dev"],
                "--predictions", os.path.join(run["run"], "predictions", "dev.tsv"),
                "--set", "data.text_column=review", "--set", "data.label_column=sentiment"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored.pop("task") == "text_classification" and scored.pop("examples") == 100
    assert scored == pytest.approx(expected, abs=1e-12)


def test_the_export_takes_text_and_answers_with_the_datas_labels(trained, data, tmp_path):
    """`zoo predict` (a fresh process, as TF Serving would) on the raw reviews answers with
    the run's own predictions, named as in the CSV."""
    for name in trained:  # text, pairs on GPT-1, several labels, a score: every input batches
        assert_every_input_batches(trained[name]["export"], "text_classification")
    run = trained["reviews"]
    texts = [text for text, _ in data["reviews_rows"]["dev"]]
    requests = tmp_path / "requests.jsonl"
    _write_jsonl(requests, [{"text": t} for t in texts])
    done = subprocess.run([sys.executable, "-m", "zoo_cli.main", "predict", "--saved-model",
                           os.path.dirname(run["export"]), "--input", str(requests)],
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    runs.evaluate_run(run["run"])
    assert [a["label"] for a in answers] == _predictions(
        os.path.join(run["run"], "predictions", "dev.tsv"))
    assert {len(a["probabilities"]) for a in answers} == {2}


def test_a_run_converted_for_transformers_gives_the_exports_labels(trained, served, data,
                                                                   tmp_path):
    import transformers

    run, served = trained["reviews"], served["reviews"]
    out = tmp_path / "hf"
    assert cli(["convert", run["run"], str(out), "--to", "hf"]) == 0
    texts = [text for text, _ in data["reviews_rows"]["dev"]]
    classify = transformers.pipeline("text-classification", model=str(out), device="cpu")
    answers = classify(texts, truncation=True, max_length=48, top_k=None)
    assert [a[0]["label"] for a in answers] == [x.decode() for x in served["label"]]
    scores = [[{a["label"]: a["score"] for a in answer}[name]
               for name in ("negative", "positive")] for answer in answers]
    np.testing.assert_allclose(scores, served["probabilities"], atol=1e-4, rtol=0)


# === GPT-1, several labels, scores ===


def test_gpt1_trains_on_pairs_in_json_lines_and_serves_text_and_text_pair(trained, served):
    run, served = trained["pairs"], served["pairs"]
    assert run["metrics"]["accuracy"] >= 0.75, run["metrics"]  # RTE samples: chance ~0.5
    runs.evaluate_run(run["run"])
    assert [x.decode() for x in served["label"]] == _predictions(
        os.path.join(run["run"], "predictions", "dev.tsv"))


def test_several_labels_a_row_score_as_sklearn_and_serve_their_names(trained, served, data):
    run, served = trained["multi"], served["multi"]
    metrics = runs.evaluate_run(run["run"])
    labels = ["negative", "positive", "short"]
    gold = [[x for x in cell.split(";") if x] for cell in _gold(data["multi"]["dev"], "topics")]
    predicted = [[x for x in cell.split(";") if x] for cell in _predictions(
        os.path.join(run["run"], "predictions", "dev.tsv"))]
    binary = [[[name in row for name in labels] for row in rows] for rows in (gold, predicted)]
    expected = {"micro_f1": sk.f1_score(*binary, average="micro", zero_division=0),
                "macro_f1": sk.f1_score(*binary, average="macro", zero_division=0),
                "exact_match": sk.accuracy_score(*binary)}
    assert metrics == pytest.approx(expected, abs=1e-12)
    assert run["metrics"]["micro_f1"] >= 0.6, run["metrics"]
    names = [[x.decode() for x in row if x] for row in served["labels"]]
    assert names == predicted
    assert np.asarray(served["probabilities"]).shape == (len(gold), 3)


def test_scores_of_pairs_correlate_as_scipy_says_and_serve_a_score(trained, served, data):
    run, served = trained["scores"], served["scores"]
    metrics = runs.evaluate_run(run["run"])
    gold = [float(x) for x in _gold(data["scores"]["dev"], "score", delimiter="\t")]
    predicted = [float(x) for x in _predictions(
        os.path.join(run["run"], "predictions", "dev.tsv"))]
    assert metrics == pytest.approx({
        "pearson": stats.pearsonr(gold, predicted).statistic,
        "spearman": stats.spearmanr(gold, predicted).statistic,
        "mse": float(np.mean((np.array(gold) - np.array(predicted)) ** 2))}, abs=1e-9)
    np.testing.assert_allclose(served["score"], predicted, atol=1e-4)


# === Rows in memory, checks, bad data ===


def test_rows_in_memory_give_the_dataset_of_the_same_rows_in_a_file(sample_data, data):
    import pandas as pd

    config = _config(sample_data, "bert", *_reviews(data))
    from_file = zoo_tasks.create("text_classification", config)
    train = [{"review": t, "sentiment": s} for t, s in data["reviews_rows"]["train"]]
    train.append({"review": 'she said "it was, in a word,\r\ncharming" and it is',
                  "sentiment": "positive"})  # the CSV's awkward row, read back from the file
    dev = pd.DataFrame([{"review": t, "sentiment": s} for t, s in data["reviews_rows"]["dev"]])
    in_memory = zoo_tasks.create("text_classification", _config(sample_data, "bert", *_reviews(
        data, "data.train_file=null", "data.dev_file=null")), rows={"train": train, "dev": dev})
    assert in_memory.labels == from_file.labels == ("negative", "positive")
    for split in ("train", "dev"):
        a, b = from_file.examples(split), in_memory.examples(split)
        for key in ("sentence1", "sentence2", "label"):
            assert a[key] == b[key], (split, key)
        batches = zip(from_file.dataset(split), in_memory.dataset(split))
        for (x1, y1, _), (x2, y2, _) in batches:
            for key in x1:
                np.testing.assert_array_equal(x1[key], x2[key])
            np.testing.assert_array_equal(y1["logits"], y2["logits"])


def test_zoo_data_check_counts_labels_and_token_lengths(sample_data, data, capsys):
    assert cli(["data", "check", "text_classification", data["reviews"]["train"],
                "--set", "data.text_column=review", "--set", "data.label_column=sentiment",
                "--set", f"model.vocabulary={sample_data['wordpiece']}",
                "--set", "data.sequence_length=8"]) == 0
    out = capsys.readouterr().out.splitlines()
    gold = _gold(data["reviews"]["train"], "sentiment")
    assert out[0] == f"text_classification: {len(gold)} rows in {data['reviews']['train']} (csv)"
    assert out[1] == (f"  labels: negative {gold.count('negative')}, "
                      f"positive {gold.count('positive')}")
    assert out[2].startswith("  token lengths: p50 ") and "would be cut" in out[2]


def test_bad_labels_are_named_with_their_line(sample_data, data, tmp_path):
    rows = data["reviews_rows"]["dev"]
    unseen = _write_csv(tmp_path / "dev.csv", ["review", "sentiment"],
                        rows[:3] + [("a fine film", "neutral")])
    config = _config(sample_data, "bert", *_reviews(data, f"data.dev_file={unseen}"))
    with pytest.raises(DataError, match=rf"^{unseen}:5: unknown label: expected one of "
                                        r"negative, positive, found 'neutral'$"):
        zoo_tasks.create("text_classification", config)
    one_class = _write_csv(tmp_path / "train.csv", ["review", "sentiment"],
                           [(t, "positive") for t, _ in rows[:5]])
    config = _config(sample_data, "bert", *_reviews(data, f"data.train_file={one_class}"))
    with pytest.raises(DataError, match="one class: expected at least two labels"):
        zoo_tasks.create("text_classification", config)
    config = _config(sample_data, "bert", *_reviews(data, "data.label_column=stars"))
    with pytest.raises(DataError, match=r"missing column: expected a column 'stars', found "
                                        r"columns 'review', 'sentiment'"):
        zoo_tasks.create("text_classification", config)
    with pytest.raises(config_lib.ConfigError, match="data.train_file: missing"):
        zoo_tasks.create("text_classification", _config(sample_data, "bert"))
