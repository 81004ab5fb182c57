"""The sentence-level metrics: (pair) classification and regression, one label per example
(GLUE, SNLI, SciTail), and their scorer for `zoo score`.

Which metric each sentence-level task reports follows the GLUE paper (Wang et al., 2019,
"GLUE: A Multi-Task Benchmark and Analysis Platform for Natural Language Understanding",
section 3 and Table 1) and the BERT paper's Table 1 footnote (Devlin et al., 2019): Matthews
correlation for CoLA, F1 of the positive class for QQP and MRPC (accuracy alongside), Spearman
correlation for STS-B (Pearson alongside), accuracy for the others. SNLI and SciTail report
accuracy as their papers do (Bowman et al., 2015; Khot et al., 2018). Each benchmark's record
(`zoo.data.benchmarks`) names its metrics; the first name in `METRICS[task]` is the one that
picks the best checkpoint.

Degenerate inputs keep the libraries' conventions: MCC is 0.0 when either side is constant
(sklearn), F1 is 0.0 when neither side has a positive, and Pearson and Spearman are nan when the
predictions (or the gold scores) are constant, since a correlation with a constant is undefined
(scipy warns with a ConstantInputWarning).
"""

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics

from zoo.data import BENCHMARKS, DataError, read_examples
from zoo.metrics.predictions import read_predictions

# Task -> metric names, from the benchmarks' records; the first is the main one (GLUE paper,
# BERT Table 1).
METRICS = {name: benchmark.metrics for name, benchmark in BENCHMARKS.items()
           if benchmark.metrics}

_FUNCTIONS = {
    "mcc": sklearn_metrics.matthews_corrcoef,
    "accuracy": sklearn_metrics.accuracy_score,
    # MRPC and QQP label paraphrases / duplicates "1", the class whose F1 GLUE reports.
    "f1": lambda gold, predicted: sklearn_metrics.f1_score(gold, predicted, pos_label="1",
                                                           zero_division=0.0),
    "pearson": lambda gold, predicted: stats.pearsonr(gold, predicted).statistic,
    "spearman": lambda gold, predicted: stats.spearmanr(gold, predicted).statistic,
}


def compute(task, gold, predicted):
    """The metrics of `METRICS[task]` for gold and predicted labels, as python floats.

    Args:
        task: a task name from `METRICS`.
        gold: the labels as the data writes them ("1", "entailment"); floats for glue/stsb.
        predicted: the predictions, in the same form and order.

    Examples:
        >>> compute("glue/mrpc", ["1", "0", "1", "1"], ["1", "0", "0", "1"])
        {'f1': 0.8, 'accuracy': 0.75}
    """
    if task not in METRICS:
        raise ValueError(f"no metrics for task {task!r}: expected one of {', '.join(METRICS)}")
    if len(gold) != len(predicted) or not len(gold):
        raise ValueError(f"expected as many predictions as gold labels (at least one), found "
                         f"{len(gold)} gold labels and {len(predicted)} predictions")
    if BENCHMARKS[task].labels is None:
        gold, predicted = np.asarray(gold, dtype=float), np.asarray(predicted, dtype=float)
    else:
        gold, predicted = list(gold), list(predicted)
    return {name: float(_FUNCTIONS[name](gold, predicted)) for name in METRICS[task]}


def score_sentences(task, gold_path, predictions_path, **_):
    """Sentence (pair) classification and regression: one label per example."""
    examples = list(read_examples(task, gold_path))
    for i, example in enumerate(examples):
        if example["label"] is None:
            raise DataError(gold_path, f"example {i} (id {example['id']!r})", "no gold label",
                            "a labelled file such as a dev file", "no label (a test file?)")
    gold = [example["label"] for example in examples]
    predicted = read_predictions(predictions_path, len(gold), BENCHMARKS[task].labels)
    return {**compute(task, gold, predicted), "examples": len(gold)}


__all__ = ["METRICS", "compute", "score_sentences"]
