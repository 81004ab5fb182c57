"""The metrics of your own data (`text_classification`), by the kind of its labels, and its
scorer for `zoo score`.

    one label a row      accuracy, macro_f1, and per label "<label>/precision", "/recall", "/f1"
    a number a row       pearson, spearman, mse
    any labels a row     micro_f1, macro_f1, exact_match (every label of the row right)

All are scikit-learn's and scipy's own functions, so they equal what a user computes with them
on the same predictions: macro F1 averages over the labels found in the gold labels or the
predictions (sklearn's default), a class never predicted nor present scores 0 (zero_division).
The first metric of each kind picks the best checkpoint.
"""

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics
from sklearn.preprocessing import MultiLabelBinarizer

from zoo.data import read_examples
from zoo.metrics.predictions import read_predictions

# The metric that picks the best checkpoint, by label kind ("single", "regression",
# "multi_label").
MAIN_METRICS = {"single": "accuracy", "regression": "pearson", "multi_label": "micro_f1"}


def single_label_metrics(gold, predicted, labels):
    """Accuracy, macro F1 and each label's precision, recall and F1 (`labels`: the names to
    report, in order), as python floats.

    Examples:
        >>> single_label_metrics(["a", "b", "b"], ["a", "b", "a"], ["a", "b"])["macro_f1"]
        0.6666666666666666
    """
    precision, recall, f1, _ = sklearn_metrics.precision_recall_fscore_support(
        gold, predicted, labels=list(labels), zero_division=0.0)
    results = {"accuracy": float(sklearn_metrics.accuracy_score(gold, predicted)),
               "macro_f1": float(sklearn_metrics.f1_score(gold, predicted, average="macro",
                                                          zero_division=0.0))}
    for i, label in enumerate(labels):
        results.update({f"{label}/precision": float(precision[i]),
                        f"{label}/recall": float(recall[i]), f"{label}/f1": float(f1[i])})
    return results


def regression_metrics(gold, predicted):
    """Pearson and Spearman correlation (nan where either side is constant) and the mean
    squared error."""
    gold, predicted = np.asarray(gold, dtype=float), np.asarray(predicted, dtype=float)
    return {"pearson": float(stats.pearsonr(gold, predicted).statistic),
            "spearman": float(stats.spearmanr(gold, predicted).statistic),
            "mse": float(sklearn_metrics.mean_squared_error(gold, predicted))}


def multi_label_metrics(gold, predicted, labels):
    """Micro and macro F1 over `labels` and the exact-match ratio (sklearn's subset accuracy)
    of label sets (lists or tuples of names).

    Examples:
        >>> multi_label_metrics([("a",), ("a", "b")], [("a",), ("a",)], ["a", "b"])
        {'micro_f1': 0.8, 'macro_f1': 0.5, 'exact_match': 0.5}
    """
    binarizer = MultiLabelBinarizer(classes=list(labels))
    gold, predicted = binarizer.fit_transform(gold), binarizer.transform(predicted)
    return {"micro_f1": float(sklearn_metrics.f1_score(gold, predicted, average="micro",
                                                       zero_division=0.0)),
            "macro_f1": float(sklearn_metrics.f1_score(gold, predicted, average="macro",
                                                       zero_division=0.0)),
            "exact_match": float(sklearn_metrics.accuracy_score(gold, predicted))}


def label_kind(data):
    """"single", "regression" or "multi_label", from a `zoo.config.DataConfig`."""
    return "regression" if data.regression else "multi_label" if data.multi_label else "single"


def compute(kind, gold, predicted, labels=None):
    """The metrics of `kind` (see `label_kind`) for gold and predicted labels in file order;
    `labels`: the label names (single, multi-label), default those found in either."""
    if len(gold) != len(predicted) or not len(gold):
        raise ValueError(f"expected as many predictions as gold labels (at least one), found "
                         f"{len(gold)} gold labels and {len(predicted)} predictions")
    if kind == "regression":
        return regression_metrics(gold, predicted)
    if kind == "multi_label":
        found = sorted({name for names in (*gold, *predicted) for name in names})
        return multi_label_metrics(gold, predicted, labels or found)
    return single_label_metrics(gold, predicted, labels or sorted({*gold, *predicted}))


def score_text_classification(task, gold_path, predictions_path, data=None, **_):
    """`zoo score text_classification`: a predictions file (`index<TAB>prediction`; several
    labels joined by `data.label_separator`) against the labels of a file of your own,
    read with the columns of `data` (a `zoo.config.DataConfig`, from `--set data.KEY=...`)."""
    if data is None:
        raise ValueError("text_classification: scoring needs the data section (its columns)")
    kind = label_kind(data)
    examples = list(read_examples(
        task, gold_path, format=data.format, text_column=data.text_column,
        text_pair_column=data.text_pair_column, label_column=data.label_column,
        id_column=data.id_column, label_kind=kind, label_separator=data.label_separator))
    gold = [example["label"] for example in examples]
    labels = tuple(data.labels) if data.labels else None
    predicted = read_predictions(predictions_path, len(gold),
                                 parse=prediction_parser(kind, labels, data.label_separator))
    return {**compute(kind, gold, predicted, labels), "examples": len(gold)}


def prediction_parser(kind, labels, separator):
    """function(text) -> a prediction of `kind` read from a predictions file's cell; a
    ValueError says what was expected. `labels`: the names allowed (None: any)."""
    def name(text):
        if not text or (labels is not None and text not in labels):
            raise ValueError("one of " + ", ".join(labels) if labels else "a label name")
        return text

    if kind == "regression":
        return None  # read_predictions' own: a finite number
    if kind == "multi_label":
        return lambda text: tuple(name(part) for part in text.split(separator) if part)
    return name


__all__ = ["MAIN_METRICS", "compute", "label_kind", "multi_label_metrics",
           "prediction_parser", "regression_metrics", "score_text_classification",
           "single_label_metrics"]
