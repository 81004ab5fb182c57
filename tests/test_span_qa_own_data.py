"""Your own question answering (issue #41): SQuAD-format JSON of any name, its version found in
the file; trained, evaluated, scored, exported and served as the SQuAD tasks are.

The files are the SQuAD samples (zoo.data.samples) under a user's names. A short run: what is
tested here is the journey; the SQuAD tasks' learning, windows and metrics are
tests/test_span_qa.py's, on the same code.
"""

import json
import os
import shutil

import pytest

import zoo_tasks
from tests.harness import serve_fresh
from tests.test_training import TINY
from zoo import config as config_lib
from zoo.data.readers.span_qa import squad_version
from zoo_cli.main import main as cli
from zoo_tasks import runs

SETTINGS = ["data.sequence_length=64", "data.doc_stride=32", "data.max_query_length=16",
            "train.batch_size=16", "train.learning_rate=1e-3", "train.steps=10"]


@pytest.fixture(scope="module")
def faq(sample_data, tmp_path_factory):
    """A v2.0 run on files named faq_train.json / faq_dev.json, evaluated and exported."""
    root = tmp_path_factory.mktemp("faq")
    squad = sample_data["root"] / "squad"
    for name, source in (("faq_train.json", "train-v2.0.json"), ("faq_dev.json", "dev-v2.0.json"),
                         ("v1.json", "dev-v1.1.json")):
        shutil.copy(squad / source, root / name)
    config = config_lib.resolve("bert/question_answering", TINY["bert"] + SETTINGS + [
        f"model.vocabulary={sample_data['wordpiece']}",
        f"data.train_file={root / 'faq_train.json'}", f"data.dev_file={root / 'faq_dev.json'}"])
    assert config.data.version_2 is None
    run_dir = str(root / "run")
    runs.train(config, run_dir)
    metrics = runs.evaluate_run(run_dir)
    export = runs.export_run(run_dir, str(root / "exports"), progress=lambda _: None)
    return {"root": root, "run": run_dir, "metrics": metrics, "export": export}


def test_the_version_is_found_in_the_file_and_kept_in_the_run(faq):
    assert squad_version(faq["root"] / "faq_train.json") == 2
    assert squad_version(faq["root"] / "v1.json") == 1
    config, task, _ = runs.load_task(faq["run"])
    assert config.data.version_2 is True and task.version == 2
    assert {"best_f1", "tau", "HasAns_total", "NoAns_total"} <= set(faq["metrics"])
    assert os.path.exists(os.path.join(faq["run"], "null_threshold.json"))


def test_zoo_score_gives_the_evaluations_official_metrics(faq, capsys):
    predictions = os.path.join(faq["run"], "predictions")
    capsys.readouterr()
    assert cli(["score", "question_answering", "--gold", str(faq["root"] / "faq_dev.json"),
                "--predictions", os.path.join(predictions, "dev.json"),
                "--na-prob", os.path.join(predictions, "dev_na_prob.json")]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored.pop("task") == "question_answering"
    expected = {k: v for k, v in faq["metrics"].items() if k != "tau"}
    assert scored == pytest.approx(expected, abs=1e-9)


def test_the_export_answers_as_the_run_predicts_at_its_threshold(faq):
    """The served answers are the run's best spans where s_best >= s_null + tau (BERT 4.3),
    else no answer: compared where the predictions file (written at tau = 0) says the same."""
    questions = [(qa["id"], qa["question"], paragraph["context"])
                 for article in json.loads((faq["root"] / "faq_dev.json").read_text())["data"]
                 for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    [served] = serve_fresh(faq["export"], [{"question": [q for _, q, _ in questions],
                                            "context": [c for _, _, c in questions]}])
    predictions = os.path.join(faq["run"], "predictions")
    with open(os.path.join(predictions, "dev.json"), encoding="utf-8") as file:
        answers = json.load(file)
    with open(os.path.join(predictions, "dev_na_prob.json"), encoding="utf-8") as file:
        na_probs = json.load(file)
    tau, compared = faq["metrics"]["tau"], 0
    for (qid, _, _), answer in zip(questions, served["answer"]):
        if na_probs[qid] <= min(0.0, -tau):  # answered either way
            assert answer.decode() == answers[qid], qid
            compared += 1
        elif na_probs[qid] > max(0.0, -tau):  # unanswered either way
            assert answer.decode() == "", qid
            compared += 1
    assert compared >= len(questions) // 2, (compared, len(questions), tau)


def test_a_missing_file_is_named(sample_data):
    config = config_lib.resolve("bert/question_answering", TINY["bert"] + SETTINGS + [
        f"model.vocabulary={sample_data['wordpiece']}"])
    with pytest.raises(config_lib.ConfigError, match=r"data.train_file: missing; the train file "
                                                     r"of your data \(a SQuAD v1.1 or v2.0"):
        zoo_tasks.create("question_answering", config)
