"""Your own tagged words (issue #41): token_classification with the user's tag set and scheme,
from JSON lines and CoNLL columns; trained, evaluated, scored, exported and served.

The sentences are the CoNLL-2003 samples (zoo.data.samples) with a user's entity types
(PERSON, COMPANY, PLACE, OTHER) in IOBES: training in JSON lines, the dev set as two CoNLL
columns. Entity scores are checked against seqeval's strict IOBES mode, an independent
reference; a part-of-speech tag set (no entity scheme) is scored by token accuracy.
"""

import json
import os

import pytest

import zoo_tasks
from tests.harness import serve_fresh
from tests.test_training import TINY
from zoo import config as config_lib
from zoo.data import read_examples
from zoo.data.readers import to_iob2
from zoo_cli.main import main as cli
from zoo_tasks import runs

TYPES = {"PER": "PERSON", "ORG": "COMPANY", "LOC": "PLACE", "MISC": "OTHER"}


def iobes(tags):
    """IOB2 tags as IOBES with the user's types (written out here, not taken from zoo)."""
    out = []
    for i, tag in enumerate(tags):
        if tag == "O":
            out.append(tag)
            continue
        prefix, kind = tag.split("-", 1)
        last = i + 1 == len(tags) or tags[i + 1] != f"I-{kind}"
        out.append(("S" if last else "B") + "-" + TYPES[kind] if prefix == "B" else
                   ("E" if last else "I") + "-" + TYPES[kind])
    return out


@pytest.fixture(scope="module")
def genes(sample_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("tagged")
    conll = sample_data["root"] / "conll2003"
    sentences = {split: [(s["words"], iobes(to_iob2(s["tags"]))) for s in
                         read_examples("conll2003", conll / f"{name}.txt")]
                 for split, name in (("train", "train"), ("dev", "valid"))}
    train = root / "train.jsonl"
    train.write_text("".join(json.dumps({"words": w, "ner": t}) + "\n"
                             for w, t in sentences["train"]), encoding="utf-8")
    dev = root / "dev.conll"
    dev.write_text("".join("".join(f"{w}\t{t}\n" for w, t in zip(*s)) + "\n"
                           for s in sentences["dev"]), encoding="utf-8")
    config = config_lib.resolve("bert/token_classification", TINY["bert"] + [
        f"model.vocabulary={sample_data['wordpiece']}", f"data.train_file={train}",
        f"data.dev_file={dev}", "data.tokens_column=words", "data.tags_column=ner",
        "data.sequence_length=48", "train.batch_size=32", "train.learning_rate=1e-3",
        "train.epochs=6", "train.eval_every=100000"])
    run_dir = str(root / "run")
    runs.train(config, run_dir)
    metrics = runs.evaluate_run(run_dir)
    export = runs.export_run(run_dir, str(root / "exports"), progress=lambda _: None)
    return {"root": root, "run": run_dir, "metrics": metrics, "export": export,
            "dev": sentences["dev"], "dev_file": str(dev)}


def test_the_tag_set_is_the_datas_and_entities_score_as_seqeval_on_iobes(genes):
    from seqeval.metrics import f1_score, precision_score, recall_score
    from seqeval.scheme import IOBES

    config, task, _ = runs.load_task(genes["run"])
    assert config.data.labels[:4] == ["O", "B-COMPANY", "E-COMPANY", "S-COMPANY"]
    assert task.main_metric == "f1"
    gold = [tags for _, tags in genes["dev"]]
    with open(os.path.join(genes["run"], "predictions", "dev.jsonl"), encoding="utf-8") as file:
        predicted = [json.loads(line)["tags"] for line in file]
    metrics = genes["metrics"]
    assert metrics["f1"] >= 50.0, metrics  # all O scores 0
    # seqeval's default mode is conlleval's: an ill-formed predicted entity (I- or E- after
    # O) starts one, as zoo's scoring of the IOB2 form does.
    assert metrics["precision"] == pytest.approx(100 * precision_score(gold, predicted),
                                                 abs=1e-9)
    assert metrics["recall"] == pytest.approx(100 * recall_score(gold, predicted), abs=1e-9)
    assert metrics["f1"] == pytest.approx(100 * f1_score(gold, predicted), abs=1e-9)
    # Where the predictions are well-formed IOBES, its strict mode agrees too.
    strict = dict(mode="strict", scheme=IOBES)
    if precision_score(gold, predicted, **strict) == precision_score(gold, predicted):
        assert metrics["f1"] == pytest.approx(100 * f1_score(gold, predicted, **strict))
    assert {"PERSON_f1", "COMPANY_f1", "PLACE_f1"} <= set(metrics)


def test_zoo_score_reads_the_gold_file_and_the_predictions(genes, capsys):
    capsys.readouterr()
    assert cli(["score", "token_classification", "--gold", genes["dev_file"], "--predictions",
                os.path.join(genes["run"], "predictions", "dev.jsonl")]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored.pop("task") == "token_classification"
    assert scored.pop("sentences") == len(genes["dev"])
    expected = {k: v for k, v in genes["metrics"].items() if k != "words_unpredicted"}
    assert scored == pytest.approx(expected, abs=1e-9)


def test_the_export_tags_raw_sentences_with_the_users_tags(genes):
    texts = [" ".join(words) for words, _ in genes["dev"]]
    [served] = serve_fresh(genes["export"], [{"text": texts}])
    with open(os.path.join(genes["run"], "predictions", "dev.jsonl"), encoding="utf-8") as file:
        predicted = [json.loads(line)["tags"] for line in file]
    for row, (words, _) in enumerate(genes["dev"]):
        assert [w.decode() for w in served["words"][row][:len(words)]] == words
        assert [t.decode() for t in served["tags"][row][:len(words)]] == predicted[row]


def test_tags_of_no_entity_scheme_are_scored_by_token_accuracy(sample_data, tmp_path):
    train = tmp_path / "pos.conll"
    train.write_text("The\tDT\ncat\tNN\nsat\tVBD\n\nA\tDT\ndog\tNN\nran\tVBD\n\n",
                     encoding="utf-8")
    config = config_lib.resolve("bert/token_classification", TINY["bert"] + [
        f"model.vocabulary={sample_data['wordpiece']}", f"data.train_file={train}",
        f"data.dev_file={train}"])
    task = zoo_tasks.create("token_classification", config)
    assert task.labels == ("DT", "NN", "VBD") and task.main_metric == "accuracy"
    assert task.outside == "DT"  # no "O": a word with no token takes the first tag


def test_zoo_data_check_reads_a_jsonl_with_its_fields(tmp_path, capsys):
    path = tmp_path / "ner.jsonl"
    path.write_text('{"words": ["Ada", "Lovelace", "wrote"], "ner": ["B-PER", "I-PER", "O"]}\n'
                    '{"words": ["Turing", "ran"], "ner": ["S-PER", "O"]}\n', encoding="utf-8")
    capsys.readouterr()
    assert cli(["data", "check", "token_classification", str(path), "--set",
                "data.tokens_column=words", "--set", "data.tags_column=ner"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"token_classification: 2 examples in {path}"
    assert out[-1] == "  B-PER 1, I-PER 1, O 2, S-PER 1"
