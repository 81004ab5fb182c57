"""CSV and TSV files with a header line and RFC 4180 quoting, record by record, with the line
each record starts on: what `zoo.data.readers.tables` reads a user's .csv and .tsv files with.

Python's `csv` module parses (quoted commas and quotes, line breaks inside quoted fields, CRLF);
this adds the line numbers of records that span lines, a byte-order mark, undecodable bytes
named by their line, and strict quoting (an unclosed quote is a bad row, not the rest of the
file read as one field).
"""

import bisect
import codecs
import csv
import io
import re

from zoo import files
from zoo.data.readers.errors import DataError

# The line ends that csv's reader counts in reader.line_num (io's universal newlines).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# What errors="surrogateescape" makes of each byte that is not UTF-8.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def csv_records(path, report, delimiter):
    """CSV or TSV with a header line and quoting; where = the line a record starts on."""
    with files.open(path, "rb") as file:
        data = file.read()
    if not data:
        raise DataError(path, None, "empty file", "a header line", "0 bytes")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text, undecodable = data[bom:].decode("utf-8"), {}
    except UnicodeDecodeError:
        # Decoded anyway so that the other records still parse; a record holding a bad byte
        # is a bad row, named by the line of that byte.
        text = data[bom:].decode("utf-8", "surrogateescape")
        undecodable = _undecodable_lines(text, bom)
    bad_lines = sorted(undecodable)

    def bad_byte(start, end):
        i = bisect.bisect_left(bad_lines, start)
        if i < len(bad_lines) and bad_lines[i] <= end:
            line = bad_lines[i]
            return DataError(path, line, "undecodable bytes", "UTF-8 text", undecodable[line])
        return None

    # strict: an unclosed quote is an error, not the rest of the file read as one field.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows = _csv_rows(reader)
    first = next(rows, None)
    if first is None:
        raise DataError(path, None, "empty file", "a header line", "only blank lines")
    header_line, end, header = first
    error = bad_byte(header_line, end)
    if error is not None:
        raise error
    if isinstance(header, csv.Error):
        raise DataError(path, header_line, "invalid CSV", "a header line", str(header))

    def records():
        for start, end, fields in rows:
            error = bad_byte(start, end)
            if error is None and isinstance(fields, csv.Error):
                error = DataError(path, start, "invalid CSV", "fields quoted as in RFC 4180",
                                  _spanning(str(fields), start, end))
            elif error is None and len(fields) != len(header):
                error = DataError(path, start, "wrong column count",
                                  f"{len(header)} columns, as the header has",
                                  _spanning(str(len(fields)), start, end))
            if error is not None:
                report.bad_row(error)
                continue
            yield start, str(start), dict(zip(header, fields))

    return header, header_line, records()


def _csv_rows(reader):
    """(first line, last line, fields or the csv.Error) of each record; blank lines left out."""
    end = 0
    while True:
        start = end + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:  # the reader goes on at the next line
            fields = error
        end = reader.line_num
        if fields != []:
            yield start, end, fields


def _spanning(found, start, end):
    return found if start == end else f"{found} in a record from line {start} to {end}"


def _undecodable_lines(text, offset):
    """{line: what} for the first undecodable byte of each line of `text`, decoded with
    surrogateescape from a file's bytes after the first `offset` (a byte-order mark)."""
    found, line, last = {}, 1, 0
    for match in _ESCAPED_BYTE.finditer(text):
        at = match.start()
        offset += len(text[last:at].encode("utf-8", "surrogateescape"))
        line += len(_LINE_BREAK.findall(text, last, at))
        last = at
        found.setdefault(line, f"byte 0x{ord(text[at]) - 0xdc00:02x} at byte offset {offset}")
    return found
