"""The text reading every reader shares: numbered UTF-8 lines, JSON, typed fields, columns.

The benchmark readers beside this module and `zoo.metrics` (predictions files) read through
these, so a file is split into lines, decoded and checked the same way wherever it is read.
Each failure is a `DataError` naming the file and the line.
"""

import json
import os

from zoo import files
from zoo.data.readers.errors import DataError, Report


def file_format(path, format, formats, extensions, expected):  # `format`: the config field
    """The format of a user's file: `format` if given (one of `formats`, else ValueError),
    else the one `extensions` ({".csv": "csv", ...}, lower case) maps its extension to,
    case-insensitive; an unknown extension is a DataError saying what was `expected`."""
    if format is not None:
        if format not in formats:
            raise ValueError(f"unknown data format {format!r}: expected one of "
                             + ", ".join(formats))
        return format
    extension = os.path.splitext(os.fspath(path))[1]
    if extension.lower() not in extensions:
        raise DataError(path, None, "unknown format", expected, repr(extension))
    return extensions[extension.lower()]


def walk_visible(top):
    """(folder, file names) of the tree under `top`, top-down with folders and names in sorted
    order; hidden names (".DS_Store", macOS's "._x.jpg", ".git/") are skipped, folders with
    their contents. The same order on a local disk and on a remote filesystem."""
    for root, folders, names in files.walk(top):
        folders[:] = sorted(f for f in folders if not f.startswith("."))  # prunes the walk
        yield root, sorted(n for n in names if not n.startswith("."))


def _undecodable(path, line, raw, error, offset):
    return DataError(path, line, "undecodable bytes", "UTF-8 text",
                     f"byte 0x{raw[error.start]:02x} at byte offset {offset + error.start}")


def numbered_lines(path, report=None, keep_ends=False):
    """(line number, text) for each line of a UTF-8 file, streamed.

    Lines split on "\\n" only, so a stray "\\r", form feed or U+2028 inside a field stays in it
    (str.splitlines would cut the row there). "\\r\\n" endings are accepted (a "\\r" that
    ends the file too) and a leading byte-order mark is dropped: GLUE's MRPC files start with
    one. An undecodable line is a bad row; when it is skipped its text is None, so callers can
    drop what it belonged to.
    Without a `report` every bad row is an error. An empty file is an error.

    Examples:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.tsv"
        >>> _ = path.write_bytes(b"\\xef\\xbb\\xbfindex\\tlabel\\r\\n0\\t1\\n")
        >>> list(numbered_lines(path))
        [(1, 'index\\tlabel'), (2, '0\\t1')]
    """
    report = Report(path) if report is None else report
    offset = 0
    with files.open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                report.bad_row(_undecodable(path, number, raw, error, offset))
                text = None
            else:
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                if not keep_ends:  # "\r\n", "\n", or a "\r" that ends the file
                    text = text.removesuffix("\n").removesuffix("\r")
            offset += len(raw)
            yield number, text
    if offset == 0:
        raise DataError(path, None, "empty file", "at least one line", "0 bytes")


def load_json(path):
    """One JSON document (SQuAD, a RACE file); errors carry the line of the problem."""
    if files.getsize(path) == 0:
        raise DataError(path, None, "empty file", "a JSON document", "0 bytes")
    try:
        with files.open(path, encoding="utf-8-sig") as file:
            return json.load(file)
    except UnicodeDecodeError:
        # The text stream's error position is relative to a buffer; find the real one.
        offset = 0
        with files.open(path, "rb") as file:
            for number, raw in enumerate(file, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise _undecodable(path, number, raw, error, offset) from None
                offset += len(raw)
        raise
    except json.JSONDecodeError as error:
        raise DataError(path, error.lineno, "invalid JSON", "a JSON document",
                        f"{error.msg} at column {error.colno}") from None
    except RecursionError:
        raise DataError(path, None, "invalid JSON", "a JSON document",
                        "nesting too deep to parse") from None


def json_line(path, number, text):
    """The JSON object on line `number` of a JSON-lines file (SNLI)."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(path, number, "invalid JSON", "one JSON object per line",
                        f"{error.msg} at column {error.colno}") from None
    except RecursionError:
        raise DataError(path, number, "invalid JSON", "one JSON object per line",
                        "nesting too deep to parse") from None
    if not isinstance(record, dict):
        raise DataError(path, number, "wrong type", "a JSON object", type(record).__name__)
    return record


_JSON_TYPES = {str: "a string", int: "an integer", bool: "true or false", list: "a list",
               dict: "an object"}


def json_field(record, key, kind, path, where):
    """record[key], checked to be a JSON value of type `kind`."""
    if not isinstance(record, dict):
        raise DataError(path, where, "wrong type", "a JSON object", type(record).__name__)
    if key not in record:
        raise DataError(path, where, "missing field", f"a field {key!r}",
                        "fields " + ", ".join(map(repr, record)) if record else "an empty object")
    value = record[key]
    # bool is a subclass of int in Python, but `true` is not a JSON integer.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DataError(path, where, "wrong type", f"{key!r} to be {_JSON_TYPES[kind]}",
                        f"{json.dumps(value)[:80]}")
    return value


def checked_rows(rows, build, report):
    """build(*row) for each row; a DataError is raised, or counted and the row skipped."""
    for row in rows:
        try:
            example = build(*row)
        except DataError as error:
            report.bad_row(error)
            continue
        if example is not None:
            yield example


def checked_label(path, number, text, labels):
    """`text` if it is one of `labels`, else a DataError for line `number`."""
    if text not in labels:
        raise DataError(path, number, "unknown label", "one of " + ", ".join(labels),
                        repr(text))
    return text


def column_index(path, header, required, optional=()):
    """Column index by name for a header line; every required name must be there."""
    missing = [name for name in required if name not in header]
    if missing:
        raise DataError(path, 1, "unexpected header", "columns " + ", ".join(required),
                        "header " + repr("\t".join(header))[:200])
    return {name: header.index(name) for name in (*required, *optional) if name in header}
