"""CoNLL-2003: the two-column reader layouts and entity-level scoring against seqeval."""

import logging
import random

import pytest
from seqeval import metrics as seqeval

from zoo.data import DataError, read_examples
from zoo.metrics import score
from zoo.metrics.conll import chunks, evaluate_tags

# A real-looking two-column copy of the CoNLL-2003 test set's start, IOB1 (entities start
# with I-; B- only between adjacent entities of one type), tab-separated, with -DOCSTART-.
TWO_COLUMN_IOB1 = """-DOCSTART-\tO

SOCCER\tO
-\tO
JAPAN\tI-LOC
GET\tO
LUCKY\tO
WIN\tO
,\tO
CHINA\tI-PER
IN\tO
SURPRISE\tO
DEFEAT\tO
.\tO

Nadim\tI-PER
Ladki\tI-PER

AL-AIN\tI-LOC
,\tO
United\tI-LOC
Arab\tI-LOC
Emirates\tI-LOC
1996-12-06\tO
"""

# The IOB2 space-separated variant without -DOCSTART- lines (as many re-distributions have).
TWO_COLUMN_IOB2 = """EU B-ORG
rejects O
German B-MISC
call O
to O
boycott O
British B-MISC
lamb O
. O

Peter B-PER
Blackburn I-PER
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,layout", [
    (TWO_COLUMN_IOB1, "2 columns (word tag), tab-separated, IOB1"),
    (TWO_COLUMN_IOB2, "2 columns (word tag), space-separated, IOB2"),
    (TWO_COLUMN_IOB1.replace("\t", " "), "2 columns (word tag), space-separated, IOB1"),
    (TWO_COLUMN_IOB2.replace(" ", "\t"), "2 columns (word tag), tab-separated, IOB2"),
])
def test_two_column_layouts(tmp_path, caplog, text, layout):
    path = write(tmp_path, "test.txt", text)
    examples = read_examples("conll2003", path, convert_to_iob2=True)
    with caplog.at_level(logging.INFO, logger="zoo.data"):
        sentences = list(examples)
    assert examples.report.layout == layout
    assert f"conll2003 test.txt: {layout}" in caplog.text
    if "JAPAN" in text:
        assert [s["words"] for s in sentences][1] == ["Nadim", "Ladki"]
        assert sentences[0]["tags"][2] == "B-LOC" and sentences[0]["tags"][7] == "B-PER"
        assert sentences[2]["tags"][:5] == ["B-LOC", "O", "B-LOC", "I-LOC", "I-LOC"]
    else:
        assert sentences[1] == {"words": ["Peter", "Blackburn"], "tags": ["B-PER", "I-PER"]}


def test_mixed_layout_is_refused(tmp_path):
    path = write(tmp_path, "test.txt", TWO_COLUMN_IOB2.replace("call O", "call NN I-NP O"))
    with pytest.raises(DataError, match=r"test.txt:4: wrong column count: expected 2 "
                       r"space-separated columns \(word tag\) as on line 1, found 4"):
        list(read_examples("conll2003", path))
    path = write(tmp_path, "tabs.txt", TWO_COLUMN_IOB2.replace("call O", "call\tO"))
    with pytest.raises(DataError, match=r"tabs.txt:4: .*found 2 tab-separated columns"):
        list(read_examples("conll2003", path))
    path = write(tmp_path, "three.txt", "EU NNP B-ORG\n")
    with pytest.raises(DataError, match=r"three.txt:1: unknown layout"):
        list(read_examples("conll2003", path))


AWKWARD = [
    (["I-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]),            # span starting with I-
    (["B-PER", "B-PER", "I-PER"], ["B-PER", "I-PER", "I-PER"]),    # adjacent spans, one type
    (["O", "O", "B-LOC"], ["O", "O", "I-LOC"]),                    # span at the sentence end
    (["I-ORG", "I-LOC", "I-LOC"], ["I-ORG", "I-ORG", "I-LOC"]),    # type changes inside I-
    (["O", "I-MISC", "B-MISC"], ["O", "I-MISC", "I-MISC"]),        # IOB1 input
    (["B-PER", "I-LOC", "O"], ["B-PER", "O", "O"]),                # I- of another type
]


def assert_like_seqeval(gold, predicted):
    ours = evaluate_tags(gold, predicted)
    for name, function in (("precision", seqeval.precision_score),
                           ("recall", seqeval.recall_score), ("f1", seqeval.f1_score)):
        assert ours[name] == pytest.approx(100 * function(gold, predicted), abs=1e-9), name
    report = seqeval.classification_report(gold, predicted, output_dict=True, zero_division=0)
    types = {k for k in report if k not in ("micro avg", "macro avg", "weighted avg")}
    predicted_types = {kind for sentence in predicted for kind, _, _ in chunks(sentence)}
    assert set(k for k in ours if isinstance(ours[k], dict)) == types | predicted_types
    for kind in types:
        for name in ("precision", "recall", "f1"):
            reference = report[kind][name.replace("f1", "f1-score")]
            assert ours[kind][name] == pytest.approx(100 * reference, abs=1e-9)
        assert ours[kind]["support"] == report[kind]["support"]


def test_awkward_sequences_like_seqeval():
    assert_like_seqeval([g for g, _ in AWKWARD], [p for _, p in AWKWARD])
    assert chunks(["B-PER", "B-PER", "I-PER"]) == [("PER", 0, 1), ("PER", 1, 3)]
    assert chunks(["O", "I-MISC", "B-MISC"]) == [("MISC", 1, 2), ("MISC", 2, 3)]


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_like_seqeval(seed):
    rng = random.Random(seed)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "B-MISC"]
    gold, predicted = [], []
    for _ in range(rng.randint(1, 6)):
        n = rng.randint(1, 12)
        gold.append([rng.choice(tags) for _ in range(n)])
        predicted.append([t if rng.random() < 0.6 else rng.choice(tags) for t in gold[-1]])
    assert_like_seqeval(gold, predicted)


def predictions_text(text, predicted):
    """The conlleval input: each data line of `text` with one more column."""
    tags = iter(predicted)
    return "".join(line + ("" if not line.split() or line.startswith("-DOCSTART-")
                           else " " + next(tags)) + "\n" for line in text.splitlines())


def test_score_conll_files(tmp_path):
    gold = write(tmp_path, "test.txt", TWO_COLUMN_IOB1)
    tags = [line.split()[1] for line in TWO_COLUMN_IOB1.splitlines()
            if line.split() and not line.startswith("-DOCSTART-")]
    predicted = ["O" if t == "I-PER" else t for t in tags]
    path = write(tmp_path, "predictions.txt", predictions_text(TWO_COLUMN_IOB1, predicted))
    result = score("conll2003", gold, path)
    # Independently: gold chunks LOC JAPAN, PER CHINA, PER Nadim Ladki, LOC AL-AIN, LOC United
    # Arab Emirates = 5; predicted the 3 LOC, all correct.
    assert result["precision"] == 100.0 and result["recall"] == pytest.approx(60.0)
    assert result["PER"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    assert result["tokens"] == len(tags)


def test_misaligned_predictions_are_refused(tmp_path):
    gold = write(tmp_path, "test.txt", TWO_COLUMN_IOB2)
    n = len([line for line in TWO_COLUMN_IOB2.splitlines() if line.split()])
    good = predictions_text(TWO_COLUMN_IOB2, ["O"] * n)
    cases = [
        (good.replace("call O O", "call O"), r"pred.txt:4: wrong column count"),
        (good.replace("lamb O O", "sheep O O"), r"pred.txt:8: misaligned line"),
        (good.rsplit("\n", 2)[0] + "\n", r"pred.txt:12: missing line"),
        (good + "extra O O\n", r"pred.txt:13: extra line"),
    ]
    for text, message in cases:
        with pytest.raises(DataError, match=message):
            score("conll2003", gold, write(tmp_path, "pred.txt", text))
