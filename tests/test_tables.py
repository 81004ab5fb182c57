"""A user's own text-classification data (zoo.data.readers.tables): the same rows in every
format, awkward CSV, labels of each kind, and bad input named by file and line or counted."""

import csv
import io
import json
import os

import pytest

from zoo import files
from zoo.data.readers.errors import DataError, Report
from zoo.data.readers.tables import FORMATS, read_rows, read_table, table_format

ROWS = [  # id, text, label: a comma, quotes, non-ASCII text, an integer-looking id
    {"id": "r1", "text": "A fine, funny film.", "label": "pos"},
    {"id": "r2", "text": 'He said "no" twice.', "label": "neg"},
    {"id": "17", "text": "Ünïcödé, ça va — très bien.", "label": "pos"},
]
EXPECTED = [
    {"id": "r1", "sentence1": "A fine, funny film.", "label": "pos"},
    {"id": "r2", "sentence1": 'He said "no" twice.', "label": "neg"},
    {"id": "17", "sentence1": "Ünïcödé, ça va — très bien.", "label": "pos"},
]


def write(path, content):
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as file:
        file.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def delimited(rows, delimiter):
    """Rows as the csv module writes them (quoting where needed), header first."""
    text = io.StringIO()
    writer = csv.DictWriter(text, list(rows[0]), delimiter=delimiter)
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def write_table(directory, kind, rows):
    if kind == "csv":
        return write(directory / "data.csv", delimited(rows, ","))
    if kind == "tsv":
        return write(directory / "data.tsv", delimited(rows, "\t"))
    if kind == "jsonl":
        return write(directory / "data.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    import pyarrow
    import pyarrow.parquet

    path = os.fspath(directory / "data.parquet")
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), path)
    return path


def read(path, skip_bad_rows=False, **options):
    return list(read_table(path, Report(path, skip_bad_rows), **options))


def error_of(path, **options):
    with pytest.raises(DataError) as error:
        read(path, **options)
    return error.value


# === The same rows in every format ===


@pytest.mark.parametrize("kind, default_ids", [
    ("csv", ["2", "3", "4"]),  # the line numbers, after the header
    ("tsv", ["2", "3", "4"]),
    ("jsonl", ["1", "2", "3"]),
    ("parquet", ["1", "2", "3"]),  # row numbers from 1
])
def test_every_file_format_gives_the_same_examples(tmp_path, kind, default_ids):
    path = write_table(tmp_path, kind, ROWS)
    assert table_format(path) == kind
    assert read(path, id_column="id") == EXPECTED
    assert read(path) == [{**example, "id": id} for example, id in zip(EXPECTED, default_ids)]


def test_rows_in_memory_a_list_of_dicts_or_a_dataframe():
    assert list(read_rows(ROWS, Report("rows"), id_column="id")) == EXPECTED
    assert [e["id"] for e in read_rows(iter(ROWS), Report("rows"))] == ["0", "1", "2"]
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(ROWS)
    assert list(read_rows(frame, Report("rows"), id_column="id")) == EXPECTED
    assert [e["id"] for e in read_rows(frame, Report("rows"))] == ["0", "1", "2"]
    # numpy integers in cells (an int64 column) are labels and ids like Python's
    frame = pandas.DataFrame({"text": ["a", "b"], "label": [3, 0], "n": [10, 11]})
    assert list(read_rows(frame, Report("rows"), id_column="n")) == [
        {"id": "10", "sentence1": "a", "label": "3"}, {"id": "11", "sentence1": "b", "label": "0"}]


def test_a_folder_of_class_folders(tmp_path):
    write(tmp_path / "train/pos/r1.txt", "\ufeffA fine, funny film.\r\n")
    write(tmp_path / "train/neg/r2.txt", 'He said "no" twice.\n\nSecond paragraph.\n\n')
    write(tmp_path / "train/pos/r3.TXT", "Ünïcödé")
    write(tmp_path / "train/pos/.DS_Store", b"\x00\x01")  # hidden: not a row
    assert table_format(tmp_path / "train") == "folder"
    assert read(tmp_path / "train", text_column="ignored", label_column="ignored") == [
        {"id": "neg/r2.txt", "sentence1": 'He said "no" twice.\n\nSecond paragraph.',
         "label": "neg"},
        {"id": "pos/r1.txt", "sentence1": "A fine, funny film.", "label": "pos"},
        {"id": "pos/r3.TXT", "sentence1": "Ünïcödé", "label": "pos"},
    ]
    with pytest.raises(ValueError, match="no text_pair_column"):
        read(tmp_path / "train", text_pair_column="b")


def test_a_folder_read_with_labels_skips_and_counts_other_class_folders(tmp_path):
    for name in ("neg/0_3.txt", "pos/0_9.txt", "unsup/0_0.txt", "unsup/1_0.txt"):
        write(tmp_path / "train" / name, f"review {name}")  # IMDB's train/ with unsup/
    report = Report(tmp_path / "train")
    examples = list(read_table(tmp_path / "train", report, labels=("neg", "pos")))
    assert [(e["id"], e["label"]) for e in examples] == [
        ("neg/0_3.txt", "neg"), ("pos/0_9.txt", "pos")]
    assert report.skipped == 2 and not report.bad_rows
    assert str(report) == ("skipped 2 rows by rule in train: 2 class folder not in data.labels "
                           "(unsup/0_0.txt, unsup/1_0.txt)")


def test_folder_layout_errors(tmp_path):
    os.makedirs(tmp_path / "empty")
    write(tmp_path / "flat/a.txt", "text")
    error = error_of(tmp_path / "flat")
    assert (error.reason, error.where) == ("no class folders", None)
    assert str(error) == (f"{tmp_path / 'flat'}: no class folders: expected one sub-folder of "
                          ".txt files per class, found only files: a.txt")
    assert error_of(tmp_path / "empty", format="folder").reason == "no class folders"

    for name in ("pos/a.txt", "urls_pos.txt", "labeledBow.feat", "a", "b", "c", "d"):
        write(tmp_path / "strays" / name, "x")
    error = error_of(tmp_path / "strays", skip_bad_rows=True)  # a layout error: never skipped
    assert error.reason == "files outside the class folders"
    assert error.found == "a, b, c, d, labeledBow.feat, ... 1 more"

    write(tmp_path / "nested/pos/a.txt", "x")
    write(tmp_path / "nested/pos/more/b.txt", "x")
    error = error_of(tmp_path / "nested")
    assert (error.path, error.reason) == (os.path.join(tmp_path, "nested/pos/more/b.txt"),
                                          "nested folder")
    write(tmp_path / "html/pos/a.html", "x")
    error = error_of(tmp_path / "html")
    assert (error.path, error.reason, error.found) == (
        os.path.join(tmp_path, "html/pos/a.html"), "not a text file", "'.html'")


def test_folder_bad_files_are_bad_rows(tmp_path):
    write(tmp_path / "train/pos/a.txt", "fine")
    write(tmp_path / "train/pos/b.txt", "\n\n")
    write(tmp_path / "train/neg/c.txt", b"caf\xe9")
    error = error_of(tmp_path / "train")
    assert str(error) == (f"{tmp_path / 'train'}: neg/c.txt: undecodable bytes: expected UTF-8 "
                          "text, found byte 0xe9 at byte offset 3")
    report = Report(tmp_path / "train", skip_bad_rows=True)
    assert [e["id"] for e in read_table(tmp_path / "train", report)] == ["pos/a.txt"]
    assert str(report) == ("skipped 2 bad rows in train: 1 undecodable bytes (neg/c.txt), "
                           "1 empty text (pos/b.txt)")


# === CSV as spreadsheets and pandas write it ===

AWKWARD = (
    b"\xef\xbb\xbfid,text,label\r\n"  # 1: a byte-order mark, CRLF line ends
    b'a,"one, two",pos\r\n'  # 2: a quoted comma
    b'b,"say ""hi""",neg\r\n'  # 3: doubled quotes
    b'c,"first line\r\nsecond line",pos\r\n'  # 4-5: a line break inside quotes
    b"\r\n"  # 6: a blank line, not a row
    b"d, after ,neg \r\n"  # 7: spaces kept in the text, stripped from the label
    b"e,last,pos"  # 8: no final line end
)


def test_awkward_csv_and_the_line_numbers_after_a_multi_line_record(tmp_path):
    path = write(tmp_path / "train.csv", AWKWARD)
    assert read(path) == [
        {"id": "2", "sentence1": "one, two", "label": "pos"},
        {"id": "3", "sentence1": 'say "hi"', "label": "neg"},
        {"id": "4", "sentence1": "first line\r\nsecond line", "label": "pos"},
        {"id": "7", "sentence1": " after ", "label": "neg"},
        {"id": "8", "sentence1": "last", "label": "pos"},
    ]
    assert [e["id"] for e in read(path, id_column="id")] == ["a", "b", "c", "d", "e"]
    bad = write(tmp_path / "bad.csv", AWKWARD.replace(b"d, after ,", b"d,   ,"))
    assert str(error_of(bad)) == (f"{bad}:7: empty text: expected text in column 'text', found "
                                  "an empty value")


def test_undecodable_bytes_name_the_line_of_the_byte(tmp_path):
    content = AWKWARD.replace(b"second line", b"second l\xefne").replace(b"last", b"l\xe4st")
    path = write(tmp_path / "train.csv", content)
    error = error_of(path)
    assert (error.where, error.reason) == (5, "undecodable bytes")  # line 5 of the record 4-5
    assert error.found == f"byte 0xef at byte offset {content.index(b'l' + bytes([0xef])) + 1}"
    report = Report(path, skip_bad_rows=True)
    assert [e["id"] for e in read_table(path, report)] == ["2", "3", "7"]
    assert report.bad_rows == {"undecodable bytes": [(path, 5), (path, 8)]}
    header = write(tmp_path / "header.csv", b"te\xffxt,label\nfine,pos\n")
    assert str(error_of(header, skip_bad_rows=True)) == (
        f"{header}:1: undecodable bytes: expected UTF-8 text, found byte 0xff at byte offset 2")


def test_wrong_column_counts_and_an_unclosed_quote(tmp_path):
    path = write(tmp_path / "train.csv", 'text,label\n"a",pos\nb\nc,pos,extra\n"d,neg\ne,pos\n')
    assert str(error_of(path)) == (f"{path}:3: wrong column count: expected 2 columns, as the "
                                   "header has, found 1")
    report = Report(path, skip_bad_rows=True)
    assert list(read_table(path, report)) == [{"id": "2", "sentence1": "a", "label": "pos"}]
    assert str(report) == ("skipped 3 bad rows in train.csv: 2 wrong column count (lines 3, 4), "
                           "1 invalid CSV (line 5)")
    assert report.first_errors["invalid CSV"].found.endswith("in a record from line 5 to 6")


def test_pairs_and_a_tsv_with_quotes(tmp_path):
    path = write(tmp_path / "dev.tsv", 'pid\tpremise\thypothesis\tgold\n'
                 '7\tA man "sleeps".\tNobody sleeps.\tcontradiction\n')
    assert read(path, text_column="premise", text_pair_column="hypothesis",
                label_column="gold", id_column="pid") == [
        {"id": "7", "sentence1": 'A man "sleeps".', "sentence2": "Nobody sleeps.",
         "label": "contradiction"}]
    error = error_of(path, text_column="premise", text_pair_column="hypo", label_column="gold")
    assert str(error) == (f"{path}:1: missing column: expected a column 'hypo', found columns "
                          "'pid', 'premise', 'hypothesis', 'gold'")


def test_missing_columns_are_file_errors_even_when_skipping_bad_rows(tmp_path):
    path = write(tmp_path / "train.csv", "sentence,label\nfine,pos\n")
    assert str(error_of(path, skip_bad_rows=True)) == (
        f"{path}:1: missing column: expected a column 'text', found columns 'sentence', "
        "'label'")
    assert error_of(path, text_column="sentence", id_column="uid").found == (
        "columns 'sentence', 'label'")
    test = write(tmp_path / "test.jsonl", '\n{"text": "no label here"}\n')
    assert str(error_of(test)) == (f"{test}:2: missing column: expected a column 'label', "
                                   "found columns 'text'")
    assert read(test, label_required=False) == [
        {"id": "2", "sentence1": "no label here", "label": None}]
    parquet = write_table(tmp_path, "parquet", [{"sentence": "a", "label": "b"}])
    assert str(error_of(parquet)) == (f"{parquet}: missing column: expected a column 'text', "
                                      "found columns 'sentence', 'label'")
    with pytest.raises(DataError, match=r"^rows: row 0: missing column: .*'sentence'"):
        list(read_rows([{"sentence": "a", "label": "b"}], Report("rows")))


# === Labels: single, regression, multi-label ===


def test_single_labels_from_json_values(tmp_path):
    lines = ['{"text": "a", "label": 1}', '{"text": "b", "label": true}',
             '{"text": "c", "label": " spaced "}', '{"text": "d", "label": 1.5}',
             '{"text": "e", "label": null}', '{"text": "f", "label": ""}',
             '{"text": "g", "label": "x\\ty"}', '{"text": "h"}', '{"text": 3, "label": "z"}',
             '{"text": " ", "label": "z"}', "[1]", "{oops"]
    path = write(tmp_path / "train.jsonl", "\n".join(lines) + "\n")
    report = Report(path, skip_bad_rows=True)
    assert [e["label"] for e in read_table(path, report)] == ["1", "true", " spaced "]
    assert report.bad_rows == {
        "wrong type": [(path, 4), (path, 9), (path, 11)], "empty label": [(path, 5), (path, 6)],
        "bad label": [(path, 7)], "missing field": [(path, 8)], "empty text": [(path, 10)],
        "invalid JSON": [(path, 12)]}
    assert str(report.first_errors["bad label"]) == (
        f"{path}:7: bad label: expected a label without tabs or line breaks, found 'x\\ty'")
    assert str(report.first_errors["empty label"]).startswith(f"{path}:5: empty label: ")


def test_labels_outside_data_labels_are_bad_rows(tmp_path):
    path = write(tmp_path / "train.csv", "text,label\na,pos\nb,Pos\n")
    assert str(error_of(path, labels=("neg", "pos"))) == (
        f"{path}:3: unknown label: expected one of neg, pos, found 'Pos'")


def test_regression_labels(tmp_path):
    path = write(tmp_path / "train.csv",
                 "text,score\na,1.5\nb, 2 \nc,-3e-1\nd,abc\ne,nan\nf,\ng,inf\n")
    report = Report(path, skip_bad_rows=True)
    examples = list(read_table(path, report, label_column="score", label_kind="regression"))
    assert [e["label"] for e in examples] == [1.5, 2.0, -0.3]
    assert report.bad_rows == {"not a number": [(path, 5), (path, 6), (path, 7), (path, 8)]}
    assert str(error_of(path, label_column="score", label_kind="regression")) == (
        f"{path}:5: not a number: expected a number in column 'score', found 'abc'")
    jsonl = write(tmp_path / "train.jsonl", '{"text": "a", "label": 4}\n'
                  '{"text": "b", "label": "0.25"}\n{"text": "c", "label": true}\n')
    report = Report(jsonl, skip_bad_rows=True)
    assert [e["label"] for e in read_table(jsonl, report, label_kind="regression")] == [4.0, 0.25]
    assert report.bad_rows == {"not a number": [(jsonl, 3)]}


def test_multi_labels(tmp_path):
    path = write(tmp_path / "train.csv", 'text,tags\na,"b, a,,b"\nb,\nc,c\n')
    assert [e["label"] for e in read(path, label_column="tags", label_kind="multi_label")] == [
        ("b", "a"), (), ("c",)]
    tsv = write(tmp_path / "train.tsv", "text\ttags\na\tx|y , z|x\n")
    assert read(tsv, label_column="tags", label_kind="multi_label", label_separator="|")[0][
        "label"] == ("x", "y , z")
    jsonl = write(tmp_path / "train.jsonl", '{"text": "a", "label": ["x", 2, "x"]}\n'
                  '{"text": "b", "label": []}\n{"text": "c", "label": "p;q"}\n'
                  '{"text": "d", "label": {"x": 1}}\n{"text": "e", "label": ["ok", "t\\nu"]}\n')
    report = Report(jsonl, skip_bad_rows=True)
    examples = read_table(jsonl, report, label_kind="multi_label", label_separator=";")
    assert [e["label"] for e in examples] == [("x", "2"), (), ("p", "q")]
    assert report.bad_rows == {"wrong type": [(jsonl, 4)], "bad label": [(jsonl, 5)]}
    rows = [{"text": "a", "label": ["x", "y"]}]
    assert next(read_rows(rows, Report("rows"), label_kind="multi_label"))["label"] == ("x", "y")
    parquet = write_table(tmp_path, "parquet", [{"text": "a", "label": ["x", "y", "x"]}])
    assert read(parquet, label_kind="multi_label")[0]["label"] == ("x", "y")


# === Bad rows: raised with file and line, or skipped and counted ===


def test_skip_bad_rows_counts_every_dropped_row(tmp_path):
    path = write(tmp_path / "train.csv",
                 "text,label\nfine,pos\n,neg\nalso fine,\nok,neg\n  ,pos\nlast,pos,x\n")
    with pytest.raises(DataError, match=r"train.csv:3: empty text"):
        read(path)
    report = Report(path, skip_bad_rows=True)
    assert [e["id"] for e in read_table(path, report)] == ["2", "5"]
    assert report.bad_rows == {"empty text": [(path, 3), (path, 6)], "empty label": [(path, 4)],
                               "wrong column count": [(path, 7)]}
    assert str(report) == ("skipped 4 bad rows in train.csv: 2 empty text (lines 3, 6), "
                           "1 empty label (line 4), 1 wrong column count (line 7)")


def test_errors_in_rows_in_memory_name_where_and_the_row():
    rows = [{"text": "a", "label": "x"}, {"text": "", "label": "x"}, "not a dict",
            {"label": "y"}]
    with pytest.raises(DataError, match=r"^train_rows: row 1: empty text: "):
        list(read_rows(rows, Report("train_rows"), where="train_rows"))
    report = Report("rows", skip_bad_rows=True)
    assert [e["id"] for e in read_rows(rows, report)] == ["0"]
    assert str(report) == ("skipped 3 bad rows in rows: 1 empty text (row 1), 1 wrong type "
                           "(row 2), 1 missing field (row 3)")


# === Formats by name and extension; remote paths ===


def test_table_format(tmp_path):
    assert [table_format(name) for name in (
        "a.csv", "a.TSV", "a.tab", "a.jsonl", "a.ndjson", "a.json", "a.parquet", "a.pq")] == [
        "csv", "tsv", "tsv", "jsonl", "jsonl", "jsonl", "parquet", "parquet"]
    assert table_format("export.txt", "tsv") == "tsv"
    assert set(FORMATS) == {"csv", "tsv", "jsonl", "parquet", "folder"}
    with pytest.raises(DataError) as error:
        table_format("data/train.csv.gz")
    assert str(error.value) == ("data/train.csv.gz: unknown format: expected a .csv, .tsv, "
                                ".jsonl or .parquet file or a folder of class folders (or "
                                "data.format), found '.gz'")
    with pytest.raises(ValueError, match="unknown data format 'xlsx'"):
        table_format("a.csv", "xlsx")
    path = write(tmp_path / "export.txt", "text\tlabel\nfine\tpos\n")
    assert read(path, format="tsv") == [{"id": "2", "sentence1": "fine", "label": "pos"}]
    with pytest.raises(ValueError, match="unknown label_kind 'multi'"):
        read(path, format="tsv", label_kind="multi")


def test_a_csv_file_on_a_remote_filesystem():
    path = f"ram://tables_{os.getpid()}/train.csv"
    files.write_text(path, delimited(ROWS, ","))
    try:
        assert table_format(path) == "csv"
        assert list(read_table(path, Report(path), id_column="id")) == EXPECTED
    finally:
        files.remove_quietly(f"ram://tables_{os.getpid()}")
