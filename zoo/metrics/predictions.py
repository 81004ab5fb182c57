"""GLUE submission files, the predictions files of the sentence-level tasks and of images.

A header `index<TAB>prediction`, then one row per example with its 0-based number and the
predicted label (or score), in any order. `zoo evaluate` writes them and `zoo score` reads
them strictly; every scorer of `zoo.metrics` whose predictions are one label per example reads
them here. Lines are read as the benchmark readers read theirs (`numbered_lines`).
"""

import math

from zoo.data.readers import DataError
from zoo.data.readers.text import numbered_lines
from zoo.files import write_text
from zoo.storage import storage_operation

HEADER = "index\tprediction"


def write_predictions(path, predictions):
    """Write a GLUE submission TSV: `index<TAB>prediction`, one row per example.

    Labels are written as they are; scores as `repr(float(x))`, which reads back exactly. The
    file is written to a temporary file beside `path` and renamed into place; a storage fault
    is a `zoo.storage.StorageError` "writing the predictions PATH: <reason>".

    Examples:
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
    with storage_operation("writing the predictions", path):  # a full or read-only disk
        write_text(path, "".join(row + "\n" for row in rows))


def read_predictions(path, num_examples, labels=None, parse=None):
    """Read a GLUE submission TSV strictly: every index from 0 to num_examples - 1 once.

    Args:
        path: the file `write_predictions` (or a GLUE submission script) wrote.
        num_examples: how many examples the gold file has.
        labels: the allowed label names; None for scores (floats).
        parse: instead of `labels`, function(text) -> the prediction, raising a ValueError
            whose message says what was expected (your own data's labels and label sets).

    Returns:
        The predictions ordered by index: label strings, or floats when `labels` is None.

    Examples:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/dev.tsv"
        >>> _ = open(path, "w").write("index\\tprediction\\n1\\t0\\n0\\t1\\n")
        >>> read_predictions(path, 2, labels=("0", "1"))
        ['1', '0']
    """
    lines = numbered_lines(path)
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
        if parse is None:
            predictions[index] = _value(path, number, value, labels)
            continue
        try:
            predictions[index] = parse(value)
        except ValueError as error:
            raise DataError(path, number, "bad prediction", str(error), repr(value)) from None
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


__all__ = ["HEADER", "read_predictions", "write_predictions"]
