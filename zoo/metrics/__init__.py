"""The benchmarks' own metrics, and the predictions files that `zoo score` reads.

This module holds the sentence-level metrics (GLUE, SNLI, SciTail) and the `score` entry
point; each other task family's official scoring is a module beside it, registered in
`SCORERS`.

Which metric each sentence-level task reports follows the GLUE paper (Wang et al., 2019,
"GLUE: A Multi-Task Benchmark and Analysis Platform for Natural Language Understanding",
section 3 and Table 1) and the BERT paper's Table 1 footnote (Devlin et al., 2019): Matthews
correlation for CoLA, F1 of the positive class for QQP and MRPC (accuracy alongside), Spearman
correlation for STS-B (Pearson alongside), accuracy for the others. SNLI and SciTail report
accuracy as their papers do (Bowman et al., 2015; Khot et al., 2018). The first name in
`METRICS[task]` is the one that picks the best checkpoint.

Degenerate inputs keep the libraries' conventions: MCC is 0.0 when either side is constant
(sklearn), F1 is 0.0 when neither side has a positive, and Pearson and Spearman are nan when the
predictions (or the gold scores) are constant, since a correlation with a constant is undefined
(scipy warns with a ConstantInputWarning).

Predictions files are GLUE submission TSVs: a header `index<TAB>prediction`, then one row per
example with its 0-based number and the predicted label (or score), in any order.
"""

import math

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics

from zoo.data import TASKS, DataError, read_examples
from zoo import files
from zoo.files import write_text
from zoo.metrics import choices, conll, images, squad

# Task -> metric names; the first is the main one (GLUE paper, BERT Table 1).
METRICS = {
    "glue/cola": ("mcc",),
    "glue/sst2": ("accuracy",),
    "glue/mrpc": ("f1", "accuracy"),
    "glue/qqp": ("f1", "accuracy"),
    "glue/stsb": ("spearman", "pearson"),
    "glue/mnli": ("accuracy",),
    "glue/qnli": ("accuracy",),
    "glue/rte": ("accuracy",),
    "glue/wnli": ("accuracy",),
    "snli": ("accuracy",),
    "scitail": ("accuracy",),
}

_FUNCTIONS = {
    "mcc": sklearn_metrics.matthews_corrcoef,
    "accuracy": sklearn_metrics.accuracy_score,
    # MRPC and QQP label paraphrases / duplicates "1", the class whose F1 GLUE reports.
    "f1": lambda gold, predicted: sklearn_metrics.f1_score(gold, predicted, pos_label="1",
                                                           zero_division=0.0),
    "pearson": lambda gold, predicted: stats.pearsonr(gold, predicted).statistic,
    "spearman": lambda gold, predicted: stats.spearmanr(gold, predicted).statistic,
}

HEADER = "index\tprediction"


def compute(task, gold, predicted):
    """The metrics of `METRICS[task]` for gold and predicted labels, as python floats.

    Args:
        task: a task name from `METRICS`.
        gold: the labels as the data writes them ("1", "entailment"); floats for glue/stsb.
        predicted: the predictions, in the same form and order.

    Example:
        >>> compute("glue/mrpc", ["1", "0", "1", "1"], ["1", "0", "0", "1"])
        {'f1': 0.8, 'accuracy': 0.75}
    """
    if task not in METRICS:
        raise ValueError(f"no metrics for task {task!r}: expected one of {', '.join(METRICS)}")
    if len(gold) != len(predicted) or not len(gold):
        raise ValueError(f"expected as many predictions as gold labels (at least one), found "
                         f"{len(gold)} gold labels and {len(predicted)} predictions")
    if TASKS[task].labels is None:
        gold, predicted = np.asarray(gold, dtype=float), np.asarray(predicted, dtype=float)
    else:
        gold, predicted = list(gold), list(predicted)
    return {name: float(_FUNCTIONS[name](gold, predicted)) for name in METRICS[task]}


def write_predictions(path, predictions):
    """Write a GLUE submission TSV: `index<TAB>prediction`, one row per example.

    Labels are written as they are; scores as `repr(float(x))`, which reads back exactly. The
    file is written to a temporary file beside `path` and renamed into place.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/predictions/dev.tsv"
        >>> write_predictions(path, [2.5, 0.1])
        >>> open(path).read().splitlines()
        ['index\\tprediction', '0\\t2.5', '1\\t0.1']
        >>> read_predictions(path, 2)
        [2.5, 0.1]
    """
    rows = [HEADER]
    for index, prediction in enumerate(predictions):
        text = prediction if isinstance(prediction, str) else repr(float(prediction))
        if set(text) & set("\t\r\n"):
            raise ValueError(f"prediction {index} has a tab or line break: {text!r}")
        rows.append(f"{index}\t{text}")
    write_text(path, "".join(row + "\n" for row in rows))


def _lines(path):
    """(line number, text) per line, split on "\\n" only; a BOM and "\\r" endings are dropped."""
    with files.open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise DataError(path, number, "undecodable bytes", "UTF-8 text",
                                f"byte 0x{raw[error.start]:02x}") from None
            yield number, text.removesuffix("\n").removesuffix("\r")


def read_predictions(path, num_examples, labels=None):
    """Read a GLUE submission TSV strictly: every index from 0 to num_examples - 1 once.

    Args:
        path: the file `write_predictions` (or a GLUE submission script) wrote.
        num_examples: how many examples the gold file has.
        labels: the allowed label names; None for scores (floats).

    Returns:
        The predictions ordered by index: label strings, or floats when `labels` is None.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/dev.tsv"
        >>> _ = open(path, "w").write("index\\tprediction\\n1\\t0\\n0\\t1\\n")
        >>> read_predictions(path, 2, labels=("0", "1"))
        ['1', '0']
    """
    lines = _lines(path)
    number, header = next(lines, (1, None))
    if header != HEADER:
        raise DataError(path, 1, "unexpected header", repr(HEADER),
                        "an empty file" if header is None else repr(header[:200]))
    predictions, seen = [None] * num_examples, {}
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != 2:
            raise DataError(path, number, "wrong column count", "2 tab-separated columns",
                            len(fields))
        index, value = fields
        if not (index.isascii() and index.isdigit()):
            raise DataError(path, number, "bad index", "a non-negative integer", repr(index))
        index = int(index)
        if index >= num_examples:
            raise DataError(path, number, "index out of range",
                            f"an index from 0 to {num_examples - 1}", index)
        if index in seen:
            raise DataError(path, number, "duplicate index", "each index once",
                            f"index {index} again (first on line {seen[index]})")
        seen[index] = number
        predictions[index] = _value(path, number, value, labels)
    if len(seen) < num_examples:
        missing = [i for i in range(num_examples) if i not in seen]
        listed = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise DataError(path, number + 1, "missing index", f"{num_examples} rows, one per "
                        f"example", f"the end of the file without index {listed} "
                        f"({len(missing)} missing)")
    return predictions


def _value(path, number, value, labels):
    if labels is not None:
        if value not in labels:
            raise DataError(path, number, "unknown label", "one of " + ", ".join(labels),
                            repr(value))
        return value
    try:
        score = float(value)
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        raise DataError(path, number, "not a number", "a finite number", repr(value))
    return score


def _score_sentences(task, gold_path, predictions_path, **_):
    """Sentence (pair) classification and regression: one label per example."""
    examples = list(read_examples(task, gold_path))
    for i, example in enumerate(examples):
        if example["label"] is None:
            raise DataError(gold_path, f"example {i} (id {example['id']!r})", "no gold label",
                            "a labelled file such as a dev file", "no label (a test file?)")
    gold = [example["label"] for example in examples]
    predicted = read_predictions(predictions_path, len(gold), TASKS[task].labels)
    return {**compute(task, gold, predicted), "examples": len(gold)}


# Task -> function(task, gold_path, predictions_path, **options) -> metrics. Span, tagging and
# multiple-choice tasks, whose predictions files differ, register their modules' scorers here.
SCORERS = {task: _score_sentences for task in METRICS}
SCORERS["image_folder"] = images.score_image_folder
SCORERS["conll2003"] = conll.score_conll
SCORERS["squad_v1"] = SCORERS["squad_v2"] = squad.score
SCORERS.update({task: choices.score_choices for task in ("swag", "race", "story_cloze")})
# Task -> the scoring options its scorer takes (`zoo score` flags, as keyword names).
OPTIONS = {"squad_v2": ("na_prob",)}


def score(task, gold_path, predictions_path, **options):
    """The metrics of a predictions file against a gold file in the task's official format.

    Args:
        task: a task name from `SCORERS`.
        gold_path: the benchmark file with the gold labels (a dev file).
        predictions_path: the task's predictions file as `zoo evaluate` writes it (GLUE: a
            submission TSV, `write_predictions`).
        **options: task-specific scoring options (SQuAD v2.0: `na_prob`, a no-answer
            probability file).

    Returns:
        {metric: value, ..., "examples": number of examples}.

    Example:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "dev.tsv").write_text("index\\tsentence1\\tsentence2\\tlabel\\n"
        ...     "0\\tIt rained.\\tIt rained.\\tentailment\\n"
        ...     "1\\tIt rained.\\tIt snowed.\\tnot_entailment\\n")
        >>> write_predictions(folder / "predictions.tsv", ["entailment", "entailment"])
        >>> score("glue/rte", folder / "dev.tsv", folder / "predictions.tsv")
        {'accuracy': 0.5, 'examples': 2}
    """
    if task not in SCORERS:
        raise ValueError(f"cannot score task {task!r}: expected one of {', '.join(SCORERS)}")
    unknown = sorted(key for key, value in options.items()
                     if value is not None and key not in OPTIONS.get(task, ()))
    if unknown:
        users = "; ".join(f"{', '.join('--' + n.replace('_', '-') for n in names)} is for "
                          f"{name}" for name, names in OPTIONS.items())
        raise ValueError(f"task {task} takes no scoring option {', '.join(unknown)} ({users})")
    return SCORERS[task](task, gold_path, predictions_path, **options)
