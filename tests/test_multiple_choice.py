"""SWAG, RACE and Story Cloze: training beats chance, BERT packing, and `zoo score`.

Each task trains a tiny model (2 layers, 64 or 128 wide: TINY or WIDE of test_training.py,
from random initialization) on its sample data (zoo.data.samples) and must beat chance by
MARGIN points, chance being the larger of 1 / number of choices and the dev set's majority
answer, both computed here from the gold file. CI trains each task in one style, BERT and GPT-1
both covered (the other style shows as skipped with its reason); ZOO_ALL_STYLES=1 trains
both. Expected packing comes from transformers' BertTokenizer (pair encoding,
truncation="only_first") on the same vocabulary; expected accuracies from
sklearn.metrics.accuracy_score.
"""

import collections
import dataclasses
import json
import logging
import os

import numpy as np
import pytest
from sklearn.metrics import accuracy_score

from tests.test_training import TINY, WIDE
from zoo import config as config_lib
from zoo import metrics
from zoo.data import DataError, read_examples
from zoo.data.samples import LAYOUT
from zoo_cli.main import main as cli
from zoo_tasks import runs

ALL_STYLES = os.environ.get("ZOO_ALL_STYLES") == "1"
CI_STYLE = {"swag": "gpt1", "race": "bert", "story_cloze": "bert"}
NUM_CHOICES = {"swag": 4, "race": 4, "story_cloze": 2}
# The split each task trains on and the labelled split it is evaluated on (LAYOUT names).
TRAIN = {"swag": "train", "race": "train", "story_cloze": "val"}
DEV = {"swag": "val", "race": "dev", "story_cloze": "test"}
# Tokens per choice: every SWAG choice fits, Story Cloze stories lose their end.
LENGTH = {("swag", "bert"): 56, ("swag", "gpt1"): 48, ("race", "bert"): 48,
          ("race", "gpt1"): 48, ("story_cloze", "bert"): 64, ("story_cloze", "gpt1"): 64}
# RACE: 240 training questions, 15 steps an epoch. Its sample asks what a passage shows (the
# kind of things someone handled); a question whose answer is copied from the article (the
# earlier sample) was not learnt from scratch in a CI budget (17-31 % after 60-360 steps).
# RACE trains bert_tiny's 128 wide (WIDE). Measured there with train.seed 0 / 1: after 8
# epochs 50.0 / 46.9 (chance + margin 40.0), after 6 48.4 / 40.6, too close; at TINY's 64 wide
# 28.1 (seed 0) after 8 and 40.6 / 34.4 after 12. Story Cloze trains TINY for 10 epochs: 98.0 /
# 89.0 (77.0 needed; 12.0 s alone against 14.5 s for 8 epochs at 128 wide, 98.0 on seed 0;
# after 8 epochs at 64 wide exactly its 77.0 on seed 0, at 128 wide after 5 76.0 / 75.0).
# SWAG trains TINY: 56.0 / 59.0 after 4 epochs (49.0 needed; 58.0 / 59.0 after 6; at 128 wide
# it was 50.0 after 4).
WIDE_TASKS = ("race",)
EPOCHS = {"swag": 4, "race": 8, "story_cloze": 10}
# Accuracy points over chance.
MARGIN = {"swag": 15.0, "race": 15.0, "story_cloze": 15.0}


def cases():
    for task in CI_STYLE:
        for style in ("bert", "gpt1"):
            marks = [] if style == CI_STYLE[task] or ALL_STYLES else [pytest.mark.skip(
                reason="reduced form: CI trains each task in one style; ZOO_ALL_STYLES=1 "
                       "trains this one too")]
            yield pytest.param(task, style, marks=marks, id=f"{task}-{style}")


def chance(task, path):
    """Accuracy (0-100) of the better blind guess: a uniform pick or the commonest answer."""
    labels = [e["label"] for e in read_examples(task, path)]
    majority = max(collections.Counter(labels).values()) / len(labels)
    return 100 * max(1 / NUM_CHOICES[task], majority)


def read_tsv(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    assert lines[0] == "id\tprediction"
    return dict(line.split("\t") for line in lines[1:])


@pytest.mark.parametrize("task, style", list(cases()))
def test_task_trains_beats_chance_and_score_agrees(sample_data, tmp_path, capsys, task, style):
    root = sample_data["root"]
    run_dir = tmp_path / "run"
    sizes = WIDE if task in WIDE_TASKS else TINY
    config = config_lib.resolve(f"{style}/{task}", sizes[style] + [
        f"model.vocabulary={sample_data['wordpiece' if style == 'bert' else 'bpe']}",
        f"data.dir={os.path.dirname(root / LAYOUT[task][TRAIN[task]])}",
        f"data.sequence_length={LENGTH[task, style]}", "train.batch_size=16",
        "train.learning_rate=1e-3", "train.warmup_fraction=0.1", f"train.epochs={EPOCHS[task]}",
        "train.deterministic=true", "train.eval_every=100000"])
    metrics = runs.train(config, str(run_dir))
    gold = root / LAYOUT[task][DEV[task]]
    baseline = chance(task, gold)
    assert metrics["accuracy"] >= baseline + MARGIN[task], (metrics, baseline)
    if task == "race":  # GPT-1 Table 3 reports RACE-M and RACE-H besides the whole set
        assert {"middle_accuracy", "high_accuracy"} <= set(metrics)

    # zoo evaluate writes id<TAB>prediction; zoo score reads it back to the same numbers.
    capsys.readouterr()
    assert cli(["evaluate", "--run-dir", str(run_dir), "--checkpoint", "final"]) == 0
    evaluated = json.loads(capsys.readouterr().out.splitlines()[0])
    predictions = run_dir / "predictions" / "dev.tsv"
    assert cli(["score", task, "--gold", str(gold), "--predictions", str(predictions)]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["missing"] == 0 and evaluated == pytest.approx(
        {k: v for k, v in scored.items() if k.endswith("accuracy")}, abs=1e-9)
    examples = list(read_examples(task, gold))
    predicted = read_tsv(predictions)
    assert scored["total"] == len(examples) == len(predicted)
    assert scored["accuracy"] == pytest.approx(100 * accuracy_score(
        [e["label"] for e in examples], [int(predicted[e["id"]]) for e in examples]))
    if style == "bert":
        _converted_run_answers_alike(run_dir, tmp_path / "hf", predicted, examples)


def _converted_run_answers_alike(run_dir, out, predicted, examples):
    """`zoo convert RUN OUT --to hf` (issue 20): transformers' BertForMultipleChoice gives
    the run's logits on the dev examples and picks the choices `zoo evaluate` picked (whose
    answers the export serves: test_multiple_choice_export.py). transformers has no multiple-choice
    pipeline, so the model is called on the task's own packing."""
    import torch
    import transformers

    assert cli(["convert", str(run_dir), str(out), "--to", "hf", "--checkpoint", "final"]) == 0
    hf = transformers.AutoModelForMultipleChoice.from_pretrained(out).eval()
    assert type(hf).__name__ == "BertForMultipleChoice"
    _, task, model = runs.load_task(str(run_dir), "final")
    names = {"input_ids": "token_ids", "token_type_ids": "segment_ids",
             "attention_mask": "padding_mask"}
    ours, theirs = [], []
    for x, *_ in task.dataset("dev"):
        ours.append(model.predict_on_batch(x)["logits"])
        with torch.no_grad():
            theirs.append(hf(**{k: torch.tensor(x[v].numpy(), dtype=torch.long)
                                for k, v in names.items()}).logits.numpy())
    ours, theirs = np.concatenate(ours), np.concatenate(theirs)
    difference = np.max(np.abs(ours - theirs))
    print(f"\n{task.name} dev: max |zoo - transformers| logit {difference:.1e}")
    assert ours.shape == (len(examples), task.num_choices) and difference <= 1e-4
    assert theirs.argmax(-1).tolist() == [int(predicted[e["id"]]) for e in examples]


# === Packing ===


def _task(sample_data, task, style, length):
    import zoo_tasks

    root = sample_data["root"]
    return zoo_tasks.create(task, {
        "model": {"preset": "bert_tiny" if style == "bert" else "gpt1",
                  "vocabulary": sample_data["wordpiece" if style == "bert" else "bpe"]},
        "data": {"dir": os.path.dirname(root / LAYOUT[task][TRAIN[task]]),
                 "sequence_length": length}}, check_data=False)


@pytest.mark.parametrize("task", ["swag", "race", "story_cloze"])
def test_bert_style_matches_transformers_pair_encoding(sample_data, task):
    from transformers import BertTokenizer

    length = 40  # short: most RACE articles and Story Cloze contexts are truncated
    hf = BertTokenizer(os.path.join(sample_data["wordpiece"], "vocab.txt"), do_lower_case=True)
    mc = _task(sample_data, task, "bert", length)
    x, y, _ = next(iter(mc.dataset(DEV[task] if task != "story_cloze" else "dev",
                                   batch_size=8)))
    examples = list(read_examples(task, mc.path("dev")))[:8]
    for i, example in enumerate(examples):
        for k, choice in enumerate(example["choices"]):
            question = example.get("question", "")
            # transformers' RACE processor: a cloze question takes the option in its blank.
            second = (question.replace("_", choice) if "_" in question
                      else f"{question} {choice}".strip())
            expected = hf(example["context"], second, truncation="only_first",
                          max_length=length, padding="max_length")
            assert x["token_ids"][i, k].numpy().tolist() == expected["input_ids"]
            assert x["segment_ids"][i, k].numpy().tolist() == expected["token_type_ids"]
            assert x["padding_mask"][i, k].numpy().tolist() == expected["attention_mask"]
        assert int(y["logits"][i]) == example["label"]


def test_gpt_style_is_start_context_question_delim_answer_extract(sample_data):
    mc = _task(sample_data, "race", "gpt1", 48)
    tok = mc.tokenizer
    start, delimiter, extract = (tok.token_to_id(t) for t in tok.special_tokens)
    x, y, weights = next(iter(mc.dataset("dev", batch_size=4)))
    assert x["token_ids"].shape == (4, 4, 48) and y["lm"].shape == (4, 4, 48)
    for i, example in enumerate(list(read_examples("race", mc.path("dev")))[:4]):
        article = tok(example["context"]).numpy().tolist()
        question = tok(example["question"]).numpy().tolist()
        answers = [tok(c).numpy().tolist() for c in example["choices"]]
        # The article loses its end so that the question and the longest answer fit.
        kept = article[:48 - 3 - len(question) - max(map(len, answers))]
        for k, answer in enumerate(answers):
            ids = [start, *kept, *question, delimiter, *answer, extract]
            padded = ids + [0] * (48 - len(ids))
            assert x["token_ids"][i, k].numpy().tolist() == padded
            # The auxiliary LM loss: every real position predicts the next token.
            assert y["lm"][i, k].numpy().tolist() == padded[1:] + [0]
            assert weights["lm"][i, k].numpy().tolist() == [1.0] * (len(ids) - 1) + [0.0] * (
                49 - len(ids))


def test_training_order_is_a_function_of_seed_and_position(sample_data):
    # The resume contract: skipping k batches of the endless stream gives batch k onwards.
    mc = _task(sample_data, "story_cloze", "bert", 32)
    ids = [x["token_ids"].numpy() for x, *_ in mc.dataset("train", repeat=True).take(30)]
    resumed = [x["token_ids"].numpy() for x, *_ in
               mc.dataset("train", repeat=True, skip_batches=27).take(3)]
    # (27 batches of 32 cross the 400-question epoch boundary.)
    assert len(resumed) == 3 and all(np.array_equal(a, b) for a, b in zip(ids[27:], resumed))
    # Another seed, another order.
    other = dataclasses.replace(mc.config, train=dataclasses.replace(mc.config.train, seed=1))
    mc.config = other
    first = next(iter(mc.dataset("train", repeat=True)))[0]["token_ids"].numpy()
    assert not np.array_equal(first, ids[0])


# === zoo score ===

SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2," \
              "ending3,label\n"


def _swag(folder, labels):
    rows = "".join(f"{i},anetv_x,{100 + i},A man sits. He,A man sits.,He,gold,eats.,runs.,"
                   f"sleeps.,sings.,{label}\n" for i, label in enumerate(labels))
    path = folder / "val.csv"
    path.write_text(SWAG_HEADER + rows)
    return path


def _predictions(folder, rows, header="id\tprediction"):
    path = folder / "dev.tsv"
    path.write_text("".join(line + "\n" for line in [header, *rows]))
    return path


def test_swag_accuracy_matches_sklearn_and_counts_missing(tmp_path, caplog):
    gold_labels = [0, 3, 2, 1, 1, 0, 2, 3]
    gold = _swag(tmp_path, gold_labels)
    predicted = {100: 0, 101: 3, 102: 1, 103: 1, 104: 2, 106: 2}  # 105 and 107 missing
    path = _predictions(tmp_path, [f"{i}\t{p}" for i, p in reversed(predicted.items())])
    with caplog.at_level(logging.WARNING, logger="zoo.metrics"):
        result = metrics.score("swag", gold, path)
    # Missing answers are wrong: -1 is never a gold index.
    expected = 100 * accuracy_score(gold_labels, [predicted.get(100 + i, -1) for i in range(8)])
    assert result == {"accuracy": pytest.approx(expected), "total": 8, "missing": 2}
    assert "2 of 8 questions have no prediction" in caplog.text


def test_race_reports_middle_and_high_like_sklearn_on_each_part(tmp_path, capsys):
    gold, predictions = {}, []
    rng = np.random.default_rng(0)
    for level, files in (("middle", 3), ("high", 4)):
        (tmp_path / "dev" / level).mkdir(parents=True)
        for n in range(files):
            answers = list(rng.choice(list("ABCD"), 2))
            record = {"id": f"{level}{n}.txt", "article": "Some text.", "answers": answers,
                      "questions": ["Why?", "Who is _ ?"],
                      "options": [["a", "b", "c", "d"]] * 2}
            (tmp_path / "dev" / level / f"{n}.txt").write_text(json.dumps(record))
            for q, answer in enumerate(answers):
                question_id = f"{level}{n}.txt-{q}"
                gold[question_id] = "ABCD".index(answer)
                guess = int(rng.integers(4))
                predictions.append((question_id, guess))
    path = _predictions(tmp_path, [f"{i}\t{p}" for i, p in predictions])
    assert cli(["score", "race", "--gold", str(tmp_path / "dev"), "--predictions",
                str(path)]) == 0
    result = json.loads(capsys.readouterr().out)
    for prefix in ("", "middle", "high"):
        part = [(gold[i], p) for i, p in predictions if i.startswith(prefix)]
        expected = 100 * accuracy_score(*zip(*part))
        assert result[f"{prefix}_accuracy" if prefix else "accuracy"] == pytest.approx(expected)
    assert result["total"] == 14 and result["missing"] == 0 and result["task"] == "race"


def test_story_cloze_scores_the_two_endings(tmp_path):
    header = ("InputStoryid,InputSentence1,InputSentence2,InputSentence3,InputSentence4,"
              "RandomFifthSentenceQuiz1,RandomFifthSentenceQuiz2,AnswerRightEnding\n")
    answers = {"a1": 1, "b2": 2, "c3": 2, "d4": 1, "e5": 2}  # 1-based, as the file has them
    gold = tmp_path / "test.csv"
    gold.write_text(header + "".join(f"{i},S1.,S2.,S3.,S4.,Good.,Bad.,{a}\n"
                                     for i, a in answers.items()))
    predicted = {"a1": 0, "b2": 0, "c3": 1, "d4": 0, "e5": 1}  # 0-based choice indices
    path = _predictions(tmp_path, [f"{i}\t{p}" for i, p in predicted.items()])
    expected = 100 * accuracy_score([a - 1 for a in answers.values()], list(predicted.values()))
    assert metrics.score("story_cloze", gold, path) == {
        "accuracy": pytest.approx(expected), "total": 5, "missing": 0}


@pytest.mark.parametrize("rows, header, line, message", [
    (["100\t0", "999\t1"], "id\tprediction", 3, "unknown id: expected an id of the gold file"),
    (["100\t0", "101\t1", "100\t2"], "id\tprediction", 4, "duplicate id"),
    (["100\t4"], "id\tprediction", 2, "choice out of range: expected a choice index from 0 to 3"),
    (["100\t-1"], "id\tprediction", 2, "choice out of range"),
    (["100\tB"], "id\tprediction", 2, "choice out of range"),
    (["100\t0\t1"], "id\tprediction", 2, "wrong column count"),
    (["100\t0"], "index\tprediction", 1, "unexpected header"),
])
def test_bad_predictions_name_file_and_line(tmp_path, rows, header, line, message):
    gold = _swag(tmp_path, [0, 1])
    path = _predictions(tmp_path, rows, header)
    with pytest.raises(DataError) as error:
        metrics.score("swag", gold, path)
    assert str(error.value).startswith(f"{path}:{line}: ") and message in str(error.value)


def test_unlabelled_gold_is_refused(tmp_path):
    gold = tmp_path / "test.csv"
    gold.write_text(SWAG_HEADER.replace(",label\n", "\n") +
                    "0,anetv_x,5,A man sits. He,A man sits.,He,gold,eats.,runs.,sleeps.,sings.\n")
    path = _predictions(tmp_path, ["5\t0"])
    with pytest.raises(DataError, match="no gold label"):
        metrics.score("swag", gold, path)
