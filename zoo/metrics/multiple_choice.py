"""Multiple-choice accuracy: SWAG, RACE and Story Cloze, and their predictions files.

None of the three benchmarks ships a scoring script; each reports accuracy, the percentage of
questions whose chosen answer is the gold one (SWAG paper, Zellers et al. 2018, section 5;
RACE paper, Lai et al. 2017, Table 4; Story Cloze, Mostafazadeh et al. 2016, section 5), on the
0-100 scale the papers, leaderboards and BERT Table 4 / GPT-1 Table 3 use. RACE reports its
two parts separately as well, RACE-M (middle-school exams) and RACE-H (high-school), as GPT-1
Table 3 does: a question's level is the prefix of its file's id ("middle1.txt",
"high1234.txt"), which is also the name of the folder the file sits in.

Predictions files are TSVs: a header `id<TAB>prediction`, then one row per question with its
id as the reader gives it (SWAG: `fold-ind`; RACE: `<file id>-<question number>`, e.g.
`high1234.txt-0`; Story Cloze: `InputStoryid`) and the 0-based index of the chosen answer.
"""

import logging

from zoo.data import DataError, read_examples
from zoo.data.benchmarks import names
from zoo.data.readers.text import numbered_lines
from zoo.files import write_text

logger = logging.getLogger("zoo.metrics")

HEADER = "id\tprediction"
LEVELS = ("middle", "high")  # RACE-M, RACE-H
TASKS = names("multiple_choice")  # swag, race, story_cloze


def race_level(example_id):
    """The RACE level of a question id: "middle", "high", or None for another id.

    Examples:
        >>> race_level("high1234.txt-0"), race_level("middle1.txt-2")
        ('high', 'middle')
    """
    return next((level for level in LEVELS if example_id.startswith(level)), None)


def accuracy(task, ids, gold, predicted):
    """Accuracy (0-100) of predicted choice indices; RACE adds `middle_accuracy` and
    `high_accuracy` over the questions of each level present.

    Args:
        task: "swag", "race" or "story_cloze".
        ids: the question ids, in the order of `gold`.
        gold: the gold choice indices.
        predicted: the predicted indices; None (a missing prediction) counts as wrong.

    Examples:
        >>> accuracy("race", ["high1.txt-0", "middle1.txt-0", "middle1.txt-1", "high2.txt-0"],
        ...          [0, 1, 2, 3], [0, 1, 0, None])
        {'accuracy': 50.0, 'middle_accuracy': 50.0, 'high_accuracy': 50.0}
    """
    if task not in TASKS:
        raise ValueError(f"no multiple-choice accuracy for task {task!r}: expected one of "
                         f"{', '.join(TASKS)}")
    if not (len(ids) == len(gold) == len(predicted)) or not gold:
        raise ValueError(f"expected as many ids, gold answers and predictions (at least one), "
                         f"found {len(ids)}, {len(gold)} and {len(predicted)}")
    groups = {"": range(len(gold))}
    if task == "race":
        levels = [race_level(i) for i in ids]
        for level in LEVELS:
            members = [k for k, value in enumerate(levels) if value == level]
            if members:
                groups[f"{level}_"] = members
    return {f"{prefix}accuracy": 100.0 * sum(predicted[k] == gold[k] for k in members)
            / len(members) for prefix, members in groups.items()}


def write_predictions(path, ids, predicted):
    """Write `id<TAB>prediction` rows, the file `zoo score` reads (atomically).

    Examples:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/predictions/dev.tsv"
        >>> write_predictions(path, ["high1.txt-0", "high1.txt-1"], [2, 0])
        >>> open(path).read().splitlines()
        ['id\\tprediction', 'high1.txt-0\\t2', 'high1.txt-1\\t0']
    """
    rows = [HEADER]
    for example_id, prediction in zip(ids, predicted, strict=True):
        if set(example_id) & set("\t\r\n"):
            raise ValueError(f"id {example_id!r} has a tab or line break")
        rows.append(f"{example_id}\t{int(prediction)}")
    write_text(path, "".join(row + "\n" for row in rows))


def read_predictions(path, num_choices):
    """Read an `id<TAB>prediction` file strictly against the gold questions.

    Args:
        path: the predictions file.
        num_choices: {question id: number of choices} of the gold file.

    Returns:
        {id: chosen index} for the ids the file has; an id not in `num_choices`, an id twice,
        an index that is not one of the question's choices or a wrong header is a `DataError`
        naming the file and line. Missing ids are for the caller to count.
    """
    lines = numbered_lines(path)
    number, header = next(lines, (1, None))
    if header != HEADER:
        raise DataError(path, 1, "unexpected header", repr(HEADER),
                        "an empty file" if header is None else repr(header[:200]))
    predictions, seen = {}, {}
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != 2:
            raise DataError(path, number, "wrong column count", "2 tab-separated columns",
                            len(fields))
        example_id, value = fields
        if example_id not in num_choices:
            raise DataError(path, number, "unknown id", "an id of the gold file",
                            repr(example_id[:200]))
        if example_id in seen:
            raise DataError(path, number, "duplicate id", "each id once",
                            f"{example_id!r} again (first on line {seen[example_id]})")
        n = num_choices[example_id]
        if not (value.isascii() and value.isdigit()) or int(value) >= n:
            raise DataError(path, number, "choice out of range",
                            f"a choice index from 0 to {n - 1}", repr(value[:200]))
        seen[example_id] = number
        predictions[example_id] = int(value)
    return predictions


def score_choices(task, gold_path, predictions_path, **_):
    """`zoo score` for swag, race and story_cloze: accuracy (0-100), `total` questions and
    `missing` predictions (counted as wrong); RACE adds `middle_accuracy`, `high_accuracy`.

    Args:
        task: "swag", "race" or "story_cloze".
        gold_path: the official labelled file (SWAG val.csv, the Story Cloze test CSV) or,
            for RACE, a directory of its .txt files (dev, or dev/high) or one file.
        predictions_path: the `id<TAB>prediction` TSV that `zoo evaluate` writes.

    Examples:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "val.csv").write_text(
        ...     "fold-ind,sent1,sent2,ending0,ending1,ending2,ending3,label\\n"
        ...     "7,A man sits.,He,eats.,runs.,sleeps.,sings.,2\\n")
        >>> _ = (folder / "dev.tsv").write_text("id\\tprediction\\n7\\t2\\n")
        >>> score_choices("swag", folder / "val.csv", folder / "dev.tsv")
        {'accuracy': 100.0, 'total': 1, 'missing': 0}
    """
    examples = list(read_examples(task, gold_path))
    first = {}
    for i, example in enumerate(examples):
        where = f"question {i} (id {example['id']!r})"
        if example["label"] is None:
            raise DataError(gold_path, where, "no gold label", "a labelled file such as a dev "
                            "file", "no label (a test file?)")
        if example["id"] in first:
            raise DataError(gold_path, where, "duplicate id", "each question id once",
                            f"{example['id']!r} again (first: question {first[example['id']]})")
        first[example["id"]] = i
    ids = [example["id"] for example in examples]
    predictions = read_predictions(predictions_path,
                                   {e["id"]: len(e["choices"]) for e in examples})
    missing = len(ids) - len(predictions)
    if missing:
        logger.warning("%s: %d of %d questions have no prediction; they count as wrong",
                       predictions_path, missing, len(ids))
    metrics = accuracy(task, ids, [e["label"] for e in examples],
                       [predictions.get(i) for i in ids])
    return {**metrics, "total": len(ids), "missing": missing}


__all__ = ["HEADER", "LEVELS", "accuracy", "race_level", "read_predictions", "score_choices",
           "write_predictions"]
