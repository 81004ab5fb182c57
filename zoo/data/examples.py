"""The examples of any benchmark file in its official format, behind one call: `read_examples`.

Line-based files are streamed and JSON documents (SQuAD, one RACE file) parsed once. Every
reader yields plain dicts; the keys depend on the task family:

    GLUE, SNLI, SciTail   {"id", "sentence1", "sentence2" (pair tasks), "label"}
    SQuAD 1.1 / 2.0       {"id", "question", "context", "answers": [{"text", "answer_start"}],
                           "is_impossible"}
    SWAG, RACE, Story     {"id", "context", "question" (RACE only), "choices", "label"}
    CoNLL-2003            {"words", "tags"}
    image_folder          {"path", "label"}

Labels are what the file says: the label name for classification ("entailment", "1"), a float
for STS-B, a choice index for multiple choice, None in test files that have no labels. Each
task's label names, in the order label ids use, are `BENCHMARKS[task].labels`.

A malformed row is a `DataError` naming file and line. With `skip_bad_rows=True` the reader
skips it instead and counts it in `Examples.report`, which is also logged when the pass ends:
nothing is dropped silently.

Which reader a task uses, with which options, is its record in `zoo.data.benchmarks`; the
readers themselves are `zoo.data.readers`, one module per format family.
"""

import logging
import os

from zoo import files
from zoo.data.benchmarks import BENCHMARKS
from zoo.data.readers import DataError, Report, image_classes

logger = logging.getLogger("zoo.data")


class Examples:
    """The examples of one file or directory; every iteration reads it again from the start.

    Attributes:
        task: the task's `Benchmark` record.
        path: what is read.
        labels: label names in label-id order (for image_folder: the class folders), or None.
        report: the `Report` of the latest pass; complete once iteration has finished.
    """

    def __init__(self, task, path, skip_bad_rows=False, **options):
        self.task, self.path, self.skip_bad_rows, self.options = task, path, skip_bad_rows, options
        self.labels = tuple(image_classes(path)) if task.kind == "image" else task.labels
        self.report = Report(path, skip_bad_rows)

    def __iter__(self):
        report = self.report = Report(self.path, self.skip_bad_rows)
        for example in self.task.read(self.path, report, **self.options):
            report.examples += 1
            yield example
        if not report.examples and not report.skipped:
            raise DataError(self.path, None, "no examples", "at least one example", "none")
        if report.skipped:
            logger.warning("%s", report)
        if report.layout:
            logger.info("%s %s: %s", self.task.name, os.path.basename(self.path), report.layout)

    def __repr__(self):
        return f"Examples({self.task.name!r}, {self.path!r})"


def read_examples(task, path, skip_bad_rows=False, **options):
    """The examples of a benchmark file in its official format, as plain dicts.

    Args:
        task: a name from `BENCHMARKS`, e.g. "glue/mnli", "squad_v2", "conll2003".
        path: the file; for "race" a directory of RACE .txt files (or one of them), for
            "image_folder" a directory with one sub-folder of images per class.
        skip_bad_rows: skip malformed rows and count them in the returned object's `report`
            (and in a logged warning) instead of raising `DataError` at the first one.
        **options: task options; "conll2003" takes `convert_to_iob2=True` to turn the
            original IOB1 tags into IOB2.

    Returns:
        An `Examples`: iterate it for the dicts; `.labels` and `.report` describe them.

    Examples:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.tsv"
        >>> _ = path.write_text("index\\tsentence1\\tsentence2\\tlabel\\n"
        ...                     '0\\tIt "rained.\\tIt rained.\\tentailment\\n')
        >>> list(read_examples("glue/rte", path))
        [{'id': '0', 'sentence1': 'It "rained.', 'sentence2': 'It rained.', 'label': 'entailment'}]
    """
    if task not in BENCHMARKS:
        raise ValueError(f"unknown task {task!r}: expected one of {', '.join(BENCHMARKS)}")
    spec = BENCHMARKS[task]
    unknown = set(options) - set(spec.options)
    if unknown:
        raise TypeError(f"task {task!r} takes options {list(spec.options) or 'none'}, "
                        f"found {sorted(unknown)}")
    path = os.fspath(path)
    if not files.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory (task {task})")
    if files.isdir(path) and "directory" not in spec.reads:
        raise IsADirectoryError(f"{path}: task {task} reads a file, found a directory")
    return Examples(spec, path, skip_bad_rows, **options)


__all__ = ["Examples", "read_examples"]
