"""The benchmarks' own metrics, and `score`, the entry point of `zoo score`.

This module holds `score`, the entry point of `zoo score`; each task family's metrics and
official scoring are a module beside it, named by the family (`classification`: GLUE, SNLI,
SciTail; `span_qa`, `tagging`, `multiple_choice`, `image_classification`; your own texts'
`text_classification`), registered for its family in `FAMILY_SCORERS` and, for your own data's
tasks, `OWN_DATA_SCORERS`. `compute` and `METRICS` (the sentence-level metrics) are
`classification`'s. The predictions files of one label per example are `predictions`.
"""

from zoo.data import BENCHMARKS
from zoo.metrics import (
    classification,
    image_classification,
    multiple_choice,
    span_qa,
    tagging,
    text_classification,
)
from zoo.metrics.classification import METRICS, compute
from zoo.metrics.predictions import HEADER, read_predictions, write_predictions

# Task family -> function(task, gold_path, predictions_path, **options) -> metrics, for the
# benchmarks' files. Span, tagging and multiple-choice tasks, whose predictions files differ,
# have their modules' scorers.
FAMILY_SCORERS = {
    "classification": classification.score_sentences,
    "span_qa": span_qa.score,
    "multiple_choice": multiple_choice.score_choices,
    "tagging": tagging.score_conll,
    "image_classification": image_classification.score_image_folder,
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
        ...                                     "0\\tIt rained.\\tIt rained.\\tentailment\\n"
        ...                                     "1\\tIt rained.\\tIt snowed.\\tnot_entailment\\n")
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


# Deprecated: the modules' former names (zoo.metrics.squad, .conll, .token_classification,
# .choices, .images).
squad, conll, token_classification = span_qa, tagging, tagging
choices, images = multiple_choice, image_classification

__all__ = ["FAMILY_SCORERS", "HEADER", "METRICS", "OPTIONS", "OWN_DATA_SCORERS", "SCORERS",
           "compute", "read_predictions", "score", "write_predictions"]
