"""A user's own text-classification data: CSV, TSV, JSON lines, Parquet, a folder of class
folders of .txt files, or rows already in memory (a list of dicts, a pandas DataFrame).

Every source becomes the same records (column -> value) and one function turns a record into
an example {"id", "sentence1", ("sentence2",) "label"}, so a column, a text or a label is
checked, and a failure named, the same way whatever the format. Problems with the whole file
(a missing column, no class folders) are raised; a bad row is raised or, with
`skip_bad_rows`, counted in the `Report` and skipped.
"""

import codecs
import collections.abc
import dataclasses
import itertools
import json
import math
import numbers
import os
import re

from zoo import files
from zoo.data.readers.csv_records import csv_records
from zoo.data.readers.errors import DataError
from zoo.data.readers.text import (
    checked_label,
    checked_rows,
    file_format,
    json_line,
    numbered_lines,
    walk_visible,
)

FORMATS = ("csv", "tsv", "jsonl", "parquet", "folder")
LABEL_KINDS = ("single", "regression", "multi_label")

_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl",
               ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
# Labels and ids are written one per line to the predictions TSV.
_UNWRITABLE = re.compile(r"[\t\r\n]")


def table_format(path, format=None):  # `format`: the config field
    """The format of `path`, one of FORMATS: `format` if given, "folder" for a directory, else
    by extension (case-insensitive; .json is read as JSON lines; no .gz).

    Examples:
        >>> table_format("reviews/train.CSV"), table_format("dev.ndjson", None)
        ('csv', 'jsonl')
    """
    if format is None and files.isdir(path):
        return "folder"
    return file_format(path, format, FORMATS, _EXTENSIONS, "a .csv, .tsv, .jsonl or .parquet "
                       "file or a folder of class folders (or data.format)")


def read_table(path, report, format=None, text_column="text",
               text_pair_column=None, label_column="label", id_column=None, label_kind="single",
               label_separator=",", label_required=True, labels=None):
    """{"id", "sentence1", ("sentence2" with `text_pair_column`), "label"} per row of a file.

    Args:
        path: a .csv, .tsv (both with a header line), .jsonl or .parquet file, or a folder with
            one sub-folder of .txt files per class (label: the folder's name).
        report: the `Report` that bad rows are raised from or counted in.
        format: one of FORMATS; None: from the extension (`table_format`).
        text_column, text_pair_column, label_column, id_column: column names; without an id
            column the id is the row's line number (Parquet: its 1-based row number).
        label_kind: "single" (a string), "regression" (a float) or "multi_label" (a tuple of
            strings, from a list or from a string split on `label_separator`).
        label_required: False: a file without the label column is read with labels None.
        labels: the allowed class names; other labels are bad rows, and in a folder the class
            folders not named here are skipped and counted (IMDB's train/unsup).
    """
    columns = _Columns(text_column, text_pair_column, label_column, id_column, label_kind,
                       label_separator, label_required, labels)
    kind = table_format(path, format)
    if kind == "folder":
        if text_pair_column is not None:
            raise ValueError("a folder of class folders holds one text per example: "
                             "no text_pair_column")
        if label_kind != "single":
            raise ValueError(f"a folder of class folders gives one class per example: "
                             f"label_kind 'single', not {label_kind!r}")
        folder = _Columns("text", None, "label", None, "single", ",", True, None)
        yield from _examples(path, *_folder_records(path, report, columns.labels), folder,
                             report)
        return
    if files.isdir(path):
        raise DataError(path, None, "not a file", f"a {kind} file", "a directory")
    if kind in ("csv", "tsv"):
        source = csv_records(path, report, "," if kind == "csv" else "\t")
    elif kind == "jsonl":
        source = _jsonl_records(path, report)
    else:
        source = _parquet_records(path, columns.names)
    yield from _examples(path, *source, columns, report, text_fields=kind in ("csv", "tsv"))


def read_rows(rows, report, text_column="text", text_pair_column=None, label_column="label",
              id_column=None, label_kind="single", label_separator=",", label_required=True,
              labels=None, where="rows"):
    """The examples of `read_table` from rows in memory: an iterable of dicts, or a pandas
    DataFrame. Row i (0-based) has the id str(i) unless `id_column` is given; errors name
    `where` and "row i".

    Examples:
        >>> from zoo.data.readers.errors import Report
        >>> list(read_rows([{"text": "A fine film.", "label": "pos"}], Report("rows")))
        [{'id': '0', 'sentence1': 'A fine film.', 'label': 'pos'}]
    """
    columns = _Columns(text_column, text_pair_column, label_column, id_column, label_kind,
                       label_separator, label_required, labels)
    yield from _examples(where, *_memory_records(rows, report, where), columns, report)


@dataclasses.dataclass(frozen=True)
class _Columns:
    """Which columns to read and how to read the label (read_table's options)."""

    text: str
    pair: str | None
    label: str
    id: str | None
    label_kind: str
    separator: str
    label_required: bool
    labels: tuple | None

    def __post_init__(self):
        if self.label_kind not in LABEL_KINDS:
            raise ValueError(f"unknown label_kind {self.label_kind!r}: expected one of "
                             + ", ".join(LABEL_KINDS))
        if self.label_kind == "multi_label" and not self.separator:
            raise ValueError("label_separator must not be empty")
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(self.labels))

    @property
    def names(self):
        return tuple(name for name in (self.text, self.pair, self.label, self.id) if name)


# === One record (column -> value) -> one example ===


def _examples(path, header, header_where, records, columns, report, text_fields=False):
    """The examples of `records`, (where, default id, record) each, whose columns are `header`
    (None: no records). `text_fields`: CSV/TSV, every value a string as written."""
    if header is None:
        return
    for name in (columns.text, columns.pair, columns.id, columns.label):
        if name is None or (name == columns.label and name not in header
                            and not columns.label_required):
            continue
        if name not in header:
            raise DataError(path, header_where, "missing column", f"a column {name!r}",
                            "columns " + ", ".join(map(repr, header)) if header else "none")
        if header.count(name) > 1:  # a record would hold only one of them
            raise DataError(path, header_where, "duplicate column", f"one column {name!r}",
                            f"{header.count(name)}")
    has_label = columns.label in header

    def build(where, default_id, record):
        example = {"id": default_id}
        if columns.id is not None:
            example["id"] = _id(_field(record, columns.id, path, where), columns.id, path, where)
        example["sentence1"] = _text(_field(record, columns.text, path, where), columns.text,
                                     path, where)
        if columns.pair is not None:
            example["sentence2"] = _text(_field(record, columns.pair, path, where),
                                         columns.pair, path, where)
        example["label"] = None
        if has_label:
            example["label"] = _label(_field(record, columns.label, path, where), columns, path,
                                      where, text_fields)
        return example

    yield from checked_rows(records, build, report)


def _field(record, name, path, where):
    if name not in record:
        raise DataError(path, where, "missing field", f"a field {name!r}",
                        "fields " + ", ".join(map(repr, record)) if record else "an empty row")
    value = record[name]
    # numpy scalars and arrays (a DataFrame's cells, lists read by pandas) as Python values.
    if hasattr(value, "tolist") and not isinstance(value, (str, list, tuple, dict)):
        value = value.tolist()
    return value


def _shown(value):
    try:
        return json.dumps(value, ensure_ascii=False)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _missing(value):
    """None, NaN, or pandas' NA: an empty cell however it was read."""
    return (value is None or (isinstance(value, float) and math.isnan(value))
            or type(value).__name__ == "NAType")


def _text(value, name, path, where):
    if not isinstance(value, str):
        raise DataError(path, where, "wrong type", f"text in column {name!r}", _shown(value))
    if not value.strip():
        raise DataError(path, where, "empty text", f"text in column {name!r}", "an empty value")
    return value


def _id(value, name, path, where):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str):
        raise DataError(path, where, "wrong type", f"an id (a string or an integer) in column "
                        f"{name!r}", _shown(value))
    if not value.strip():
        raise DataError(path, where, "empty id", f"an id in column {name!r}", "an empty value")
    if _UNWRITABLE.search(value):
        raise DataError(path, where, "bad id", "an id without tabs or line breaks", repr(value))
    return value


def _label(value, columns, path, where, text_fields):
    name = columns.label
    if columns.label_kind == "multi_label":
        if _missing(value):
            return ()  # as an empty CSV cell: no labels
        if isinstance(value, str):
            parts = [part.strip() for part in value.split(columns.separator)]
            parts = [part for part in parts if part]
        elif isinstance(value, (list, tuple)):
            parts = value
        else:
            raise DataError(path, where, "wrong type", f"in column {name!r} a list of labels or "
                            f"labels separated by {columns.separator!r}", _shown(value))
        labels = (_class_name(part, columns, path, where) for part in parts)
        return tuple(dict.fromkeys(labels))  # first-occurrence order, no duplicates
    if not columns.label_required and (_missing(value) or (isinstance(value, str)
                                                           and not value.strip())):
        return None
    if columns.label_kind == "regression":
        return _number(value, name, path, where)
    if text_fields:
        value = value.strip()
    return _class_name(value, columns, path, where)


def _class_name(value, columns, path, where):
    """One class label as a string: a string as it is, an integer as its digits."""
    if isinstance(value, bool):  # before int: bool is an int in Python
        value = "true" if value else "false"
    elif isinstance(value, numbers.Integral):
        value = str(int(value))
    elif _missing(value):
        value = ""
    elif not isinstance(value, str):
        raise DataError(path, where, "wrong type", f"a label (a string or an integer) in column "
                        f"{columns.label!r}", _shown(value))
    if not value.strip():
        raise DataError(path, where, "empty label", f"a label in column {columns.label!r}",
                        "an empty value")
    if _UNWRITABLE.search(value):
        raise DataError(path, where, "bad label", "a label without tabs or line breaks",
                        repr(value))
    if columns.labels is not None:
        return checked_label(path, where, value, columns.labels)
    return value


def _number(value, name, path, where):
    number = None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            pass
    if number is None or not math.isfinite(number):
        raise DataError(path, where, "not a number", f"a number in column {name!r}", repr(value))
    return number


# === Record sources: (header, where the header is, records) ===


def _jsonl_records(path, report):
    """One JSON object per line; the first object's keys are the columns."""
    def records():
        for number, text in numbered_lines(path, report):
            if text is None or not text.strip():  # undecodable (counted) or blank
                continue
            try:
                record = json_line(path, number, text)
            except DataError as error:
                report.bad_row(error)
                continue
            yield number, str(number), record

    return _first_keys(records())


def _first_keys(records):
    """(header, where, records): the header is the first record's keys."""
    first = next(records, None)
    if first is None:
        return None, None, iter(())
    return list(first[2]), first[0], itertools.chain([first], records)


def _parquet_records(path, names):
    """The rows of a Parquet file, only the columns in `names` read; where = "row i", 1-based."""
    import pyarrow  # here: a slow import that only Parquet files need
    import pyarrow.parquet as pq

    with files.open(path, "rb") as file:
        try:
            table = pq.ParquetFile(file)
            header = table.schema_arrow.names
            rows = table.read(columns=[name for name in dict.fromkeys(names)
                                       if name in header]).to_pylist()
        except pyarrow.ArrowException as error:
            raise DataError(path, None, "invalid Parquet", "a Parquet file",
                            str(error)[:200]) from None
    return header, None, ((f"row {i}", str(i), row) for i, row in enumerate(rows, 1))


def _memory_records(rows, report, where):
    """Rows in memory: a DataFrame (duck-typed: pandas is not imported) or dicts."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        records = rows.to_dict("records")
        return list(rows.columns), None, ((f"row {i}", str(i), record)
                                          for i, record in enumerate(records))

    def records():
        for i, row in enumerate(rows):
            if not isinstance(row, collections.abc.Mapping):
                report.bad_row(DataError(where, f"row {i}", "wrong type", "a dict of column "
                                         "values", type(row).__name__))
                continue
            yield f"row {i}", str(i), row

    return _first_keys(records())


def _folder_records(path, report, labels):
    """A split folder of class folders of .txt files; the layout is checked before any file is
    read. where = id = "<class>/<file name>"."""
    if not files.isdir(path):
        raise DataError(path, None, "not a directory", "a folder of class folders",
                        "a file" if files.exists(path) else "nothing")
    names = sorted(name for name in files.listdir(path) if not name.startswith("."))
    classes = [name for name in names if files.isdir(os.path.join(path, name))]
    if not classes:
        raise DataError(path, None, "no class folders", "one sub-folder of .txt files per class",
                        "only files: " + _some(names) if names else "an empty folder")
    strays = [name for name in names if name not in classes]
    if strays:
        raise DataError(path, None, "files outside the class folders",
                        "only one sub-folder per class", _some(strays))
    listed = []  # (class, where, file)
    for name in classes:
        folder = os.path.join(path, name)
        if labels is not None and name not in labels:
            for root, found in walk_visible(folder):
                for file in found:
                    report.skip(path, _relative(path, root, file), "class folder not in "
                                "data.labels")
            continue
        count = 0
        for root, found in walk_visible(folder):
            if root != folder:
                raise DataError(os.path.join(root, found[0]) if found else root, None,
                                "nested folder", "the .txt files directly in each class folder",
                                "a sub-folder")
            for file in found:
                if not file.lower().endswith(".txt"):
                    raise DataError(os.path.join(root, file), None, "not a text file",
                                    "only .txt files in the class folders",
                                    repr(os.path.splitext(file)[1]))
                listed.append((name, _relative(path, root, file), os.path.join(root, file)))
                count += 1
        if not count:
            report.bad_row(DataError(folder, None, "empty class folder", "at least one .txt "
                                     "file", "none"))

    def records():
        for name, where, file in listed:
            with files.open(file, "rb") as handle:
                data = handle.read()
            bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
            try:
                text = data[bom:].decode("utf-8")
            except UnicodeDecodeError as error:
                report.bad_row(DataError(path, where, "undecodable bytes", "UTF-8 text",
                                         f"byte 0x{data[bom + error.start]:02x} at byte offset "
                                         f"{bom + error.start}"))
                continue
            text = text.rstrip("\r\n")
            if not text.strip():
                report.bad_row(DataError(path, where, "empty text", "text in the file",
                                         "an empty file" if not text else "only white space"))
                continue
            yield where, where, {"text": text, "label": name}

    return ("text", "label"), None, records()


def _some(names, limit=5):
    return ", ".join(names[:limit]) + (f", ... {len(names) - limit} more"
                                       if len(names) > limit else "")


def _relative(path, root, name):
    """"<class>/<name>" for a file of folder `root` under the split folder `path`."""
    return "/".join([root[len(os.fspath(path)):].strip("/"), name]).lstrip("/")
