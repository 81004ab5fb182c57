"""CoNLL-2003 entity scores (zoo.metrics.tagging) against seqeval, conlleval's Python port.

seqeval's default mode follows conlleval's chunking, so it is the independent reference: the
same precision, recall and F1, overall and per type, on awkward hand-made sentences and on
random tag sequences. The files `zoo score conll2003` reads are checked for alignment.
"""

import random

import pytest
from seqeval import metrics as seqeval

from zoo.data import DataError
from zoo.metrics import score, tagging
from zoo_cli.main import main as cli

AWKWARD = [
    # (gold, predicted)
    (["I-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]),  # an entity starting with I-
    (["B-LOC", "B-LOC", "I-LOC"], ["B-LOC", "I-LOC", "I-LOC"]),  # adjacent, same type
    (["O", "O", "B-ORG"], ["O", "O", "I-ORG"]),  # a span at the end of the sentence
    (["B-PER", "I-LOC", "I-LOC"], ["B-PER", "B-LOC", "I-LOC"]),  # type change inside I- run
    (["I-MISC", "B-MISC", "O", "I-MISC"], ["I-MISC", "I-MISC", "O", "O"]),  # IOB1 B- split
    (["O", "O"], ["B-PER", "O"]),  # a false positive only
    (["B-ORG"], ["O"]),  # a miss only
]


def reference(gold, predicted):
    report = seqeval.classification_report(gold, predicted, output_dict=True,
                                           zero_division=0)
    out = {"precision": 100 * seqeval.precision_score(gold, predicted, zero_division=0),
           "recall": 100 * seqeval.recall_score(gold, predicted, zero_division=0),
           "f1": 100 * seqeval.f1_score(gold, predicted, zero_division=0),
           "accuracy": 100 * seqeval.accuracy_score(gold, predicted)}
    for kind, values in report.items():
        if kind.isupper():
            out.update({f"{kind}_precision": 100 * values["precision"],
                        f"{kind}_recall": 100 * values["recall"],
                        f"{kind}_f1": 100 * values["f1-score"]})
    return out


def check(gold, predicted):
    ours = tagging.entity_scores(gold, predicted)
    expected = reference(gold, predicted)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), (key, gold, predicted)
    # seqeval lists only the gold types; ours adds predicted-only types with recall 0.
    assert {k for k in ours if k.endswith("_f1")} >= {k for k in expected if k.endswith("_f1")}
    return ours


@pytest.mark.parametrize("gold, predicted", AWKWARD)
def test_awkward_sentences_match_seqeval(gold, predicted):
    check([gold], [predicted])


def test_awkward_sentences_together_match_seqeval_and_hand_counts():
    gold, predicted = zip(*AWKWARD)
    ours = check(list(gold), list(predicted))
    # By hand: gold entities PER, LOC, LOC, ORG, PER, LOC, MISC, MISC, MISC, ORG = 10;
    # predicted PER, LOC, ORG, PER, LOC, MISC, PER = 7; correct PER(0-2), ORG(end), PER, LOC.
    assert (ours["entities"], ours["predicted_entities"]) == (10, 7)
    assert ours["precision"] == pytest.approx(400 / 7) and ours["recall"] == 40.0


@pytest.mark.parametrize("seed", range(20))
def test_random_tags_match_seqeval(seed):
    rng = random.Random(seed)
    tags = ["O"] * 6 + [f"{p}-{t}" for p in "BI" for t in ("PER", "ORG", "LOC", "MISC")]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(30)]
    predicted = [[t if rng.random() < 0.6 else rng.choice(tags) for t in s] for s in gold]
    check(gold, predicted)


def write(path, text):
    path.write_text(text)
    return path


GOLD = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP I-PER\n"


def test_zoo_score_reads_conlleval_files(tmp_path, capsys):
    gold = write(tmp_path / "test.txt", GOLD)
    predictions = write(tmp_path / "pred.txt", "-DOCSTART- -X- -X- O\n\n"
                        "EU NNP B-NP I-ORG B-ORG\nrejects VBZ B-VP O O\n\n"
                        "Peter NNP B-NP I-PER B-LOC\n")
    result = score("conll2003", gold, predictions)
    expected = reference([["I-ORG", "O"], ["I-PER"]], [["B-ORG", "O"], ["B-LOC"]])
    assert result["f1"] == pytest.approx(expected["f1"]) == pytest.approx(50.0)
    assert result["sentences"] == 2 and result["tokens"] == 3
    assert cli(["score", "conll2003", "--gold", str(gold), "--predictions",
                str(predictions)]) == 0
    assert '"f1": 50.0' in capsys.readouterr().out


def test_write_predictions_round_trips_through_the_scorer(tmp_path):
    gold = write(tmp_path / "test.txt", GOLD)
    predicted = [["B-ORG", "O"], ["B-PER"]]
    tagging.write_predictions(gold, predicted, tmp_path / "pred.txt")
    lines = (tmp_path / "pred.txt").read_text().splitlines()
    assert lines[2] == "EU NNP B-NP I-ORG B-ORG" and lines[0] == "-DOCSTART- -X- -X- O"
    assert score("conll2003", gold, tmp_path / "pred.txt")["f1"] == 100.0
    with pytest.raises(ValueError, match="sentence 1 has 1 words but 2 predicted tags"):
        tagging.write_predictions(gold, [["O", "O"], ["O", "O"]], tmp_path / "x.txt")
    with pytest.raises(ValueError, match="2 sentences but 3 predicted"):
        tagging.write_predictions(gold, predicted + [["O"]], tmp_path / "x.txt")


@pytest.mark.parametrize("text, message", [
    # the predicted column missing on one line
    ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG B-ORG\nrejects VBZ B-VP O\n\n"
     "Peter NNP B-NP I-PER O\n", r"pred.txt:4: misaligned line"),
    # another word on a line
    ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG O\nrejected VBZ B-VP O O\n\n"
     "Peter NNP B-NP I-PER O\n", r"pred.txt:4: misaligned line"),
    # a line short: the predicted file ends early
    ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG O\nrejects VBZ B-VP O O\n",
     r"pred.txt:5: wrong line count: expected 6 lines, one per gold line, found 4 lines"),
    # a sentence boundary moved
    ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG O\n\nrejects VBZ B-VP O O\n"
     "Peter NNP B-NP I-PER O\n", r"pred.txt:4: misaligned line"),
    # an unknown predicted tag
    ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG B-ORGANISATION\nrejects VBZ B-VP O O\n\n"
     "Peter NNP B-NP I-PER O\n", r"pred.txt:3: unknown tag"),
])
def test_misaligned_predictions_are_refused_naming_the_line(tmp_path, text, message):
    gold = write(tmp_path / "test.txt", GOLD)
    predictions = write(tmp_path / "pred.txt", text)
    with pytest.raises(DataError, match=message):
        score("conll2003", gold, predictions)
