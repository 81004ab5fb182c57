"""GLUE and other tab-separated files (SciTail), and NLI in JSON lines (SNLI)."""

import dataclasses
import itertools
import re

from zoo.data.readers.errors import DataError
from zoo.data.readers.text import (
    checked_label,
    checked_rows,
    column_index,
    json_field,
    json_line,
    numbered_lines,
)


@dataclasses.dataclass(frozen=True)
class TsvLayout:
    """Layout of one tab-separated format.

    `columns` maps example keys to column names; "id" and "label" may be absent from a file
    (no id: the line number is the id; no label: a test file, label None). Files with a
    header are read by column name, so MNLI's train (12 columns), dev (16) and test (10)
    files all work. Formats without a header give their column names in `headerless`;
    such a file may still start with `test_header` (CoLA's test.tsv does).
    """

    columns: dict
    labels: tuple | None  # None: a similarity score from 0 to 5 (STS-B)
    headerless: tuple = ()
    test_header: tuple = ()


_SCORE = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")


def read_tsv(layout, path, report):
    """{"id", "sentence1", "sentence2" (pair tasks), "label"} per row of a GLUE-style TSV file
    laid out as `layout` (a `TsvLayout`); bad rows go to `report`."""
    # Never CSV quoting: GLUE sentences contain unbalanced quotes (MRPC's `" the witness "`),
    # and a quote-aware parser silently merges rows. A tab is the only separator.
    lines = numbered_lines(path, report)
    number, text = next(lines)
    if text is None:
        raise DataError(path, 1, "unexpected header", "a UTF-8 first line", "undecodable bytes")
    first = text.split("\t")
    if layout.headerless and tuple(first) != layout.test_header:
        header = layout.headerless
        lines = itertools.chain([(number, text)], lines)
    else:
        header = first
    text_keys = [key for key in ("sentence1", "sentence2") if key in layout.columns]
    index = column_index(path, header, [layout.columns[key] for key in text_keys],
                         [layout.columns[key] for key in ("id", "label") if key in layout.columns])
    index = {key: index[name] for key, name in layout.columns.items() if name in index}

    def build(number, text):
        if text is None:
            return None
        fields = text.split("\t")
        if len(fields) != len(header):
            raise DataError(path, number, "wrong column count",
                            f"{len(header)} tab-separated columns", len(fields))
        example = {"id": fields[index["id"]] if "id" in index else str(number)}
        for key in text_keys:
            example[key] = fields[index[key]]
        example["label"] = None
        if "label" in index:
            value = fields[index["label"]]
            if layout.labels is not None:
                example["label"] = checked_label(path, number, value, layout.labels)
            elif _SCORE.fullmatch(value) and float(value) <= 5:
                example["label"] = float(value)
            else:
                raise DataError(path, number, "unknown label", "a score from 0 to 5", repr(value))
        return example

    yield from checked_rows(lines, build, report)


# === NLI in JSON lines (SNLI) ===


def read_nli_jsonl(labels, path, report):
    """{"id", "sentence1", "sentence2", "label"} per line of SNLI's JSON lines, `labels` the
    allowed gold labels; pairs without a gold label ("-") are skipped and counted."""
    def build(number, text):
        if text is None:
            return None
        record = json_line(path, number, text)
        fields = {key: json_field(record, key, str, path, number)
                  for key in ("pairID", "sentence1", "sentence2", "gold_label")}
        if fields["gold_label"] == "-":  # no majority among the annotators (SNLI paper, 2.2)
            report.skip(path, number, "no gold label")
            return None
        return {"id": fields["pairID"], "sentence1": fields["sentence1"],
                "sentence2": fields["sentence2"],
                "label": checked_label(path, number, fields["gold_label"], labels)}

    yield from checked_rows(numbered_lines(path, report), build, report)
