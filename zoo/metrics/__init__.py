"""The benchmarks' own metrics, and `score`, the entry point of `zoo score`.

This module holds the sentence-level metrics (GLUE, SNLI, SciTail) and the `score` entry
point; each other task family's official scoring is a module beside it (`span_qa`, `tagging`,
`choices`, `images`; your own texts' `text_classification`), registered for its family in
`FAMILY_SCORERS` and, for your own data's tasks, `OWN_DATA_SCORERS`. The predictions files of
one label per example are `predictions`.

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
from zoo.metrics import choices, images, span_qa, tagging, text_classification
from zoo.metrics.predictions import HEADER, read_predictions, write_predictions

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


def _score_sentences(task, gold_path, predictions_path, **_):
    """Sentence (pair) classification and regression: one label per example."""
    examples = list(read_examples(task, gold_path))
    for i, example in enumerate(examples):
        if example["label"] is None:
            raise DataError(gold_path, f"example {i} (id {example['id']!r})", "no gold label",
                            "a labelled file such as a dev file", "no label (a test file?)")
    gold = [example["label"] for example in examples]
    predicted = read_predictions(predictions_path, len(gold), BENCHMARKS[task].labels)
    return {**compute(task, gold, predicted), "examples": len(gold)}


# Task family -> function(task, gold_path, predictions_path, **options) -> metrics, for the
# benchmarks' files. Span, tagging and multiple-choice tasks, whose predictions files differ,
# have their modules' scorers.
FAMILY_SCORERS = {
    "classification": _score_sentences,
    "span_qa": span_qa.score,
    "multiple_choice": choices.score_choices,
    "tagging": tagging.score_conll,
    "image_classification": images.score_image_folder,
}
# Task family -> the scorer of your own data's task (a record with `own_data`), which reads the
# files with the run's data section.
OWN_DATA_SCORERS = {
    "text_classification": text_classification.score_text_classification,
    "span_qa": span_qa.score_question_answering,
    "tagging": tagging.score_token_classification,
}
# Task -> its family's scorer.
SCORERS = {name: (OWN_DATA_SCORERS if benchmark.own_data else FAMILY_SCORERS)[benchmark.family]
           for name, benchmark in BENCHMARKS.items()}
# Task -> the scoring options its scorer takes (`zoo score` flags, as keyword names).
OPTIONS = {name: benchmark.scoring_options for name, benchmark in BENCHMARKS.items()
           if benchmark.scoring_options}


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

    Examples:
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
        users = "; ".join(f"{', '.join(_flag(n) for n in names)} is for {name}"
                          for name, names in OPTIONS.items())
        raise ValueError(f"task {task} takes no scoring option {', '.join(unknown)} ({users})")
    return SCORERS[task](task, gold_path, predictions_path, **options)


def _flag(option):
    """The `zoo score` flag of a scoring option: na_prob -> --na-prob; data -> --set data.*."""
    return "--set data.KEY=VALUE" if option == "data" else "--" + option.replace("_", "-")


# Deprecated: the modules' former names (zoo.metrics.squad, .conll, .token_classification).
squad, conll, token_classification = span_qa, tagging, tagging

__all__ = ["FAMILY_SCORERS", "HEADER", "METRICS", "OPTIONS", "OWN_DATA_SCORERS", "SCORERS",
           "compute", "read_predictions", "score", "write_predictions"]
