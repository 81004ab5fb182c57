"""Readers for the official file format of every benchmark, behind one call: `read_examples`.

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
task's label names, in the order label ids use, are `TASKS[task].labels`: the order of BERT's
`run_classifier.py` and Hugging Face's GLUE processors and `conll2003` dataset, so converted
fine-tuned heads line up.

A malformed row is a `DataError` naming file and line. With `skip_bad_rows=True` the reader
skips it instead and counts it in `Examples.report`, which is also logged when the pass ends:
nothing is dropped silently.

This module holds the task table and the entry point; one module per format family reads the
files (`glue`, `squad`, `multiple_choice`, `conll`, `images`) on the shared `text` helpers and
the `errors` they raise or count.
"""

import dataclasses
import functools
import logging
import os
from typing import Callable

from zoo import files
from zoo.data.readers.conll import CONLL_TAGS, ENTITY_TYPES, _read_conll2003, to_iob2
from zoo.data.readers.errors import DataError, Report
from zoo.data.readers.glue import _read_nli_jsonl, _read_tsv, _Tsv
from zoo.data.readers.images import IMAGE_EXTENSIONS, _read_image_folder, image_classes
from zoo.data.readers.multiple_choice import _read_race, _read_story_cloze, _read_swag
from zoo.data.readers.squad import _read_squad

logger = logging.getLogger("zoo.data")


# === The task table ===


@dataclasses.dataclass(frozen=True)
class Task:
    """One benchmark format: how to read it and what its examples hold.

    Args:
        name: the task name given to `read_examples`.
        kind: "classification", "regression", "span", "multiple_choice", "tagging" or "image".
        labels: label names in label-id order; None when labels are numbers (STS-B scores,
            choice indices) or, for image_folder, found in the folder (`Examples.labels`).
        read: function(path, report, **options) yielding the examples.
        options: the keyword options `read` accepts.
        reads: "file", "directory", or "file or directory".
    """

    name: str
    kind: str
    labels: tuple | None
    read: Callable = dataclasses.field(repr=False)
    options: tuple = ()
    reads: str = "file"


_BINARY = ("0", "1")
_NLI = ("contradiction", "entailment", "neutral")
_TWO_WAY = ("entailment", "not_entailment")
_PAIR = dict(id="index", sentence1="sentence1", sentence2="sentence2", label="label")


def _glue(name, labels, columns, **layout):
    kind = "regression" if labels is None else "classification"
    return Task(name, kind, labels, functools.partial(_read_tsv, _Tsv(columns, labels, **layout)))


TASKS = {task.name: task for task in [
    # CoLA train/dev: no header, columns source, label, original judgement ("*" or empty),
    # sentence. test.tsv: header "index\tsentence".
    _glue("glue/cola", _BINARY, dict(id="index", sentence1="sentence", label="label"),
          headerless=("source", "label", "original_label", "sentence"),
          test_header=("index", "sentence")),
    _glue("glue/sst2", _BINARY, dict(id="index", sentence1="sentence", label="label")),
    # MRPC as GLUE distributes it (the header keeps the source file's byte-order mark).
    _glue("glue/mrpc", _BINARY,
          dict(id="index", sentence1="#1 String", sentence2="#2 String", label="Quality")),
    _glue("glue/qqp", _BINARY,
          dict(id="id", sentence1="question1", sentence2="question2", label="is_duplicate")),
    _glue("glue/stsb", None, dict(_PAIR, label="score")),
    _glue("glue/mnli", _NLI, dict(_PAIR, label="gold_label")),
    _glue("glue/qnli", _TWO_WAY, dict(_PAIR, sentence1="question", sentence2="sentence")),
    _glue("glue/rte", _TWO_WAY, _PAIR),
    _glue("glue/wnli", _BINARY, _PAIR),
    Task("snli", "classification", _NLI, functools.partial(_read_nli_jsonl, _NLI)),
    # SciTail's tsv_format: premise, hypothesis, label; no header.
    _glue("scitail", ("entails", "neutral"),
          dict(sentence1="premise", sentence2="hypothesis", label="label"),
          headerless=("premise", "hypothesis", "label")),
    Task("squad_v1", "span", None, functools.partial(_read_squad, 1)),
    Task("squad_v2", "span", None, functools.partial(_read_squad, 2)),
    Task("swag", "multiple_choice", None, _read_swag),
    Task("race", "multiple_choice", None, _read_race, reads="file or directory"),
    Task("story_cloze", "multiple_choice", None, _read_story_cloze),
    Task("conll2003", "tagging", CONLL_TAGS, _read_conll2003, options=("convert_to_iob2",)),
    Task("image_folder", "image", None, _read_image_folder, reads="directory"),
]}


# === Entry point ===


class Examples:
    """The examples of one file or directory; every iteration reads it again from the start.

    Attributes:
        task: the `Task`.
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
        task: a name from `TASKS`, e.g. "glue/mnli", "squad_v2", "conll2003".
        path: the file; for "race" a directory of RACE .txt files (or one of them), for
            "image_folder" a directory with one sub-folder of images per class.
        skip_bad_rows: skip malformed rows and count them in the returned object's `report`
            (and in a logged warning) instead of raising `DataError` at the first one.
        **options: task options; "conll2003" takes `convert_to_iob2=True` to turn the
            original IOB1 tags into IOB2.

    Returns:
        An `Examples`: iterate it for the dicts; `.labels` and `.report` describe them.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.tsv"
        >>> _ = path.write_text("index\\tsentence1\\tsentence2\\tlabel\\n"
        ...                     '0\\tIt "rained.\\tIt rained.\\tentailment\\n')
        >>> list(read_examples("glue/rte", path))
        [{'id': '0', 'sentence1': 'It "rained.', 'sentence2': 'It rained.', 'label': 'entailment'}]
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: expected one of {', '.join(TASKS)}")
    spec = TASKS[task]
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


__all__ = ["CONLL_TAGS", "ENTITY_TYPES", "IMAGE_EXTENSIONS", "TASKS", "DataError", "Examples",
           "Report", "Task", "image_classes", "read_examples", "to_iob2"]
