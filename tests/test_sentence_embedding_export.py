"""The sentence_embedding task end to end: a tiny random BERT saved as a sentence-transformers
folder (mean pooling, Normalize) is the init checkpoint of a `zoo train` on pairs in a CSV.
Before training the task's dev metrics equal those of sentence-transformers' own vectors
scored by scikit-learn; training with in-batch negatives raises the training pairs' MRR; the
export, served in a fresh process (tensorflow and tensorflow_text only), gives the vectors of
the Python `encode` on the run's model, and `zoo predict` writes them as JSON lines.
"""

import json

import numpy as np
import pytest

from tests.harness import serve_fresh
from tests.test_sentence_embedding import TEXTS, WORDS, write_hf_bert, write_sentence_transformers
from tests.test_signatures_batch import assert_every_input_batches
from zoo import config as config_lib
from zoo_cli.main import main as cli
from zoo_tasks import runs


def write_pairs(path, n, seed):
    """`n` (anchor, positive) pairs in a CSV: a random sentence of WORDS and its
    "translation", each word replaced by the word 7 places on in WORDS, shuffled: a mapping
    the random start does not know and in-batch negatives teach."""
    import csv

    rng = np.random.default_rng(seed)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["anchor", "positive"])
        for _ in range(n):
            words = list(rng.choice(WORDS, size=rng.integers(3, 9)))
            positive = [WORDS[(WORDS.index(w) + 7) % len(WORDS)] for w in words]
            positive = list(rng.permutation(positive))
            writer.writerow([" ".join(words), " ".join(positive)])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    import zoo_tasks

    root = tmp_path_factory.mktemp("sentence_embedding")
    write_hf_bert(root / "bert", seed=1)
    write_sentence_transformers(root / "bert", root / "st", "mean", True)
    write_pairs(root / "train.csv", 48, 0)
    write_pairs(root / "dev.csv", 24, 1)
    config = config_lib.resolve("bert/sentence_embedding", [
        "model.preset=bert_tiny", f"model.init_checkpoint={root / 'st'}",
        f"data.train_file={root / 'train.csv'}", f"data.dev_file={root / 'dev.csv'}",
        "data.sequence_length=24", "train.batch_size=8", "train.learning_rate=2e-3",
        "train.epochs=3", "train.warmup_fraction=0.1"])
    start = zoo_tasks.create(config.task, config)
    start_model = start.build_model()
    before = {split: start.evaluate(start_model, split) for split in ("train", "dev")}
    runs.train(config, str(root / "run"))
    return {"root": root, "before": before, "config": config}


def test_start_equals_sentence_transformers_and_training_learns(trained):
    import yaml
    from sentence_transformers import SentenceTransformer
    from sklearn.metrics import label_ranking_average_precision_score

    from zoo.data.readers import Report
    from zoo.data.readers.tables import read_table

    root = trained["root"]
    rows = list(read_table(str(root / "dev.csv"), Report("dev"), text_column="anchor",
                           text_pair_column="positive", label_required=False))
    st = SentenceTransformer(str(root / "st"), device="cpu")
    anchors = st.encode([r["sentence1"] for r in rows])
    positives = st.encode([r["sentence2"] for r in rows])
    expected = label_ranking_average_precision_score(np.eye(len(rows)), anchors @ positives.T)
    assert trained["before"]["dev"]["mrr"] == pytest.approx(expected, abs=1e-5)
    # The folder's settings are the run's, kept in its config.yaml.
    saved = yaml.safe_load((root / "run" / "config.yaml").read_text())
    assert (saved["model"]["pooling"], saved["model"]["normalize"]) == ("mean", True)
    # In-batch negatives on 48 pairs, 18 steps: the training pairs rank better.
    _, task, model = runs.load_task(str(root / "run"), "final")
    after = task.evaluate(model, "train")
    assert after["mrr"] > trained["before"]["train"]["mrr"] + 0.05, (
        trained["before"]["train"], after)
    # zoo evaluate: the metrics, and for each dev anchor the id of the top-ranked pair.
    metrics = runs.evaluate_run(str(root / "run"))
    assert set(metrics) == {"mrr", "recall_at_1", "recall_at_5", "examples"}
    lines = (root / "run" / "predictions" / "dev.tsv").read_text().splitlines()
    assert len(lines) == 1 + len(rows) and lines[0].split("\t") == ["index", "prediction"]


def test_export_serves_the_python_encode_and_zoo_predict_writes_it(trained, tmp_path):
    import zoo.embeddings

    root = trained["root"]
    saved = runs.export_run(str(root / "run"), str(tmp_path / "export"),
                            progress=lambda line: None)
    assert_every_input_batches(saved, "sentence_embedding")
    _, task, model = runs.load_task(str(root / "run"))
    encoder = zoo.embeddings.SentenceEncoder(model, task.tokenizer,
                                             trained["config"].data.sequence_length)
    expected = encoder.encode(TEXTS, progress=False)
    x = {k: v.numpy() for k, v in task.inputs(np.array(TEXTS[:3], object)).items()}
    results = serve_fresh(saved, [{"text": TEXTS}, {"text": np.array([], object)},
                                  {"text": [b"\xff\xfe caf\xc3", ""]}, ("serving_ids", x)])
    served = results[0]["embedding"]
    assert served.dtype == np.float32 and served.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(served, expected, atol=1e-5, rtol=0)
    assert results[1]["embedding"].shape == (0, 32)
    np.testing.assert_allclose(results[2]["embedding"][1], expected[TEXTS.index("")],
                               atol=1e-5)
    np.testing.assert_allclose(results[3]["embedding"], expected[:3], atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(served, axis=-1), 1, atol=1e-5)

    lines = tmp_path / "in.jsonl"
    lines.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    out = tmp_path / "out.jsonl"
    assert cli(["predict", "--saved-model", str(tmp_path / "export"), "--input", str(lines),
                "--batch-size", "3", "--output", str(out)]) == 0
    written = [json.loads(line)["embedding"] for line in out.read_text().splitlines()]
    np.testing.assert_allclose(written, expected, atol=1e-5, rtol=0)


def test_bad_config_is_one_line(trained):
    import zoo_tasks

    config = config_lib.resolve({"task": "sentence_embedding", "model": {
        "preset": "bert_tiny", "init_checkpoint": str(trained["root"] / "st")},
        "data": {"train_file": str(trained["root"] / "train.csv"), "text_column": "anchor"}})
    with pytest.raises(config_lib.ConfigError, match="data.text_pair_column: missing"):
        zoo_tasks.create("sentence_embedding", config)
