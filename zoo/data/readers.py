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
"""

import csv
import dataclasses
import functools
import itertools
import json
import logging
import os
import re
from typing import Callable

logger = logging.getLogger("zoo.data")


# === Errors and reports ===


class DataError(ValueError):
    """A malformed input, reported as `path:line: reason: expected ..., found ...`.

    Args:
        path: the file (or directory) at fault.
        where: 1-based line number; a location inside a JSON document such as
            "data[0].paragraphs[2].qas[1]"; or None for the whole file.
        reason: a short category, used to count skipped rows ("wrong column count").
        expected: what the format requires there.
        found: what the file has instead.
    """

    def __init__(self, path, where, reason, expected, found):
        self.path, self.where, self.reason = os.fspath(path), where, reason
        self.expected, self.found = expected, found
        if where is None:
            place = self.path
        elif isinstance(where, int):
            place = f"{self.path}:{where}"
        else:
            place = f"{self.path}: {where}"
        super().__init__(f"{place}: {reason}: expected {expected}, found {found}")

    def __reduce__(self):  # picklable across processes despite the multi-argument constructor
        return DataError, (self.path, self.where, self.reason, self.expected, self.found)


class Report:
    """What one pass of a reader skipped, by reason; `str(report)` is the summary to print.

    Bad rows are skipped only with `skip_bad_rows`; rows the format itself marks as unusable
    (SNLI's "-" gold label: the annotators did not agree) are always skipped and counted.
    """

    def __init__(self, path, skip_bad_rows=False):
        self.path = os.fspath(path)
        self.skip_bad_rows = skip_bad_rows
        self.examples = 0
        self.bad_rows = {}  # reason -> [(path, where)] in reading order
        self.rule_skips = {}  # reason -> [(path, where)]
        self.first_errors = {}  # reason -> the first DataError, for its full message
        self.layout = None  # what a reader that detects its layout found (CoNLL-2003)

    def bad_row(self, error):
        """Raise `error`, or count it when skipping bad rows."""
        if not self.skip_bad_rows:
            raise error
        self.bad_rows.setdefault(error.reason, []).append((error.path, error.where))
        self.first_errors.setdefault(error.reason, error)

    def skip(self, path, where, reason):
        """Count a row that the format says to leave out."""
        self.rule_skips.setdefault(reason, []).append((os.fspath(path), where))

    @property
    def skipped(self):
        return sum(map(len, self.bad_rows.values())) + sum(map(len, self.rule_skips.values()))

    def __str__(self):
        name = os.path.basename(os.path.normpath(self.path))
        parts = []
        for noun, groups in (("bad row", self.bad_rows), ("row by rule", self.rule_skips)):
            total = sum(map(len, groups.values()))
            if total:
                noun = noun if total == 1 else noun.replace("row", "rows")
                reasons = ", ".join(f"{len(locations)} {reason} ({self._locations(locations)})"
                                    for reason, locations in groups.items())
                parts.append(f"skipped {total} {noun} in {name}: {reasons}")
        return "; ".join(parts) or f"read {self.examples} examples from {name}, skipped none"

    def _locations(self, locations, limit=10):
        if all(path == self.path and isinstance(where, int) for path, where in locations):
            lines = ", ".join(str(where) for _, where in locations[:limit])
            text = ("line " if len(locations) == 1 else "lines ") + lines
        else:
            text = ", ".join(self._place(path, where) for path, where in locations[:limit])
        if len(locations) > limit:
            text += f", ... {len(locations) - limit} more"
        return text

    def _place(self, path, where):
        place = os.path.relpath(path, self.path) if path != self.path else ""
        if where is None:
            return place or os.path.basename(path)
        return f"{place}:{where}" if place else str(where)


# === Reading text ===


def _undecodable(path, line, raw, error, offset):
    return DataError(path, line, "undecodable bytes", "UTF-8 text",
                     f"byte 0x{raw[error.start]:02x} at byte offset {offset + error.start}")


def _lines(path, report, keep_ends=False):
    """(line number, text) for each line of a UTF-8 file, streamed.

    Lines split on "\\n" only, so a stray "\\r", form feed or U+2028 inside a field stays in it
    (str.splitlines would cut the row there). "\\r\\n" endings are accepted and a leading
    byte-order mark is dropped: GLUE's MRPC files start with one. An undecodable line is a
    bad row; when it is skipped its text is None, so callers can drop what it belonged to.
    """
    offset = 0
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                report.bad_row(_undecodable(path, number, raw, error, offset))
                text = None
            else:
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                if not keep_ends:
                    text = text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
            offset += len(raw)
            yield number, text
    if offset == 0:
        raise DataError(path, None, "empty file", "at least one line", "0 bytes")


def _load_json(path):
    """One JSON document (SQuAD, a RACE file); errors carry the line of the problem."""
    if os.path.getsize(path) == 0:
        raise DataError(path, None, "empty file", "a JSON document", "0 bytes")
    try:
        with open(path, encoding="utf-8-sig") as file:
            return json.load(file)
    except UnicodeDecodeError:
        # The text stream's error position is relative to a buffer; find the real one.
        offset = 0
        with open(path, "rb") as file:
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


def _json_line(path, number, text):
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


def _get(record, key, kind, path, where):
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


def _checked(rows, build, report):
    """build(*row) for each row; a DataError is raised, or counted and the row skipped."""
    for row in rows:
        try:
            example = build(*row)
        except DataError as error:
            report.bad_row(error)
            continue
        if example is not None:
            yield example


def _label(path, number, text, labels):
    if text not in labels:
        raise DataError(path, number, "unknown label", "one of " + ", ".join(labels),
                        repr(text))
    return text


def _columns(path, header, required, optional=()):
    """Column index by name for a header line; every required name must be there."""
    missing = [name for name in required if name not in header]
    if missing:
        raise DataError(path, 1, "unexpected header", "columns " + ", ".join(required),
                        "header " + repr("\t".join(header))[:200])
    return {name: header.index(name) for name in (*required, *optional) if name in header}


# === GLUE and other tab-separated files ===


@dataclasses.dataclass(frozen=True)
class _Tsv:
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


def _read_tsv(layout, path, report):
    # Never CSV quoting: GLUE sentences contain unbalanced quotes (MRPC's `" the witness "`),
    # and a quote-aware parser silently merges rows. A tab is the only separator.
    lines = _lines(path, report)
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
    index = _columns(path, header, [layout.columns[key] for key in text_keys],
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
                example["label"] = _label(path, number, value, layout.labels)
            elif _SCORE.fullmatch(value) and float(value) <= 5:
                example["label"] = float(value)
            else:
                raise DataError(path, number, "unknown label", "a score from 0 to 5", repr(value))
        return example

    yield from _checked(lines, build, report)


# === NLI in JSON lines (SNLI) ===


def _read_nli_jsonl(labels, path, report):
    def build(number, text):
        if text is None:
            return None
        record = _json_line(path, number, text)
        fields = {key: _get(record, key, str, path, number)
                  for key in ("pairID", "sentence1", "sentence2", "gold_label")}
        if fields["gold_label"] == "-":  # no majority among the annotators (SNLI paper, 2.2)
            report.skip(path, number, "no gold label")
            return None
        return {"id": fields["pairID"], "sentence1": fields["sentence1"],
                "sentence2": fields["sentence2"],
                "label": _label(path, number, fields["gold_label"], labels)}

    yield from _checked(_lines(path, report), build, report)


# === SQuAD ===


def _read_squad(version, path, report):
    document = _load_json(path)
    articles = _get(document, "data", list, path, "the top level")

    def paragraphs():
        """(location, context, qa) for every question; malformed containers are bad rows."""
        for a, article in enumerate(articles):
            try:
                items = _get(article, "paragraphs", list, path, f"data[{a}]")
            except DataError as error:
                report.bad_row(error)
                continue
            for p, paragraph in enumerate(items):
                where = f"data[{a}].paragraphs[{p}]"
                try:
                    context = _get(paragraph, "context", str, path, where)
                    qas = _get(paragraph, "qas", list, path, where)
                except DataError as error:
                    report.bad_row(error)
                    continue
                for q, qa in enumerate(qas):
                    yield f"{where}.qas[{q}]", context, qa

    def build(where, context, qa):
        qa_id = _get(qa, "id", str, path, where)
        where = f"{where} (id {qa_id!r})"
        question = _get(qa, "question", str, path, where)
        answers = _get(qa, "answers", list, path, where)
        if version == 2:
            impossible = _get(qa, "is_impossible", bool, path, where)
        elif qa.get("is_impossible", False) is not False:
            raise DataError(path, where, "unanswerable question", "SQuAD 1.1 questions",
                            "is_impossible: true (a SQuAD 2.0 file? use task squad_v2)")
        else:
            impossible = False
        if impossible and answers:
            raise DataError(path, where, "answers to an unanswerable question",
                            "no answers when is_impossible is true", f"{len(answers)} answers")
        if not impossible and not answers:
            raise DataError(path, where, "no answers", "at least one answer", "none")
        checked = []
        for answer in answers:
            text = _get(answer, "text", str, path, where)
            start = _get(answer, "answer_start", int, path, where)
            # Offsets count characters, not bytes: "24–10" is 5 characters.
            if not text or start < 0 or context[start:start + len(text)] != text:
                raise DataError(path, where, "answer_start does not match the answer text",
                                f"{text!r} at context[{start}:{start + len(text)}]",
                                repr(context[max(start, 0):max(start, 0) + len(text)]))
            checked.append({"text": text, "answer_start": start})
        return {"id": qa_id, "question": question, "context": context, "answers": checked,
                "is_impossible": impossible}

    yield from _checked(paragraphs(), build, report)


# === Multiple choice: SWAG, RACE, Story Cloze ===


def _csv_records(path, report):
    """(first line number, fields) for each record of a quoted CSV file (fields may span lines)."""
    state = {"first": None}

    def texts():
        for number, text in _lines(path, report, keep_ends=True):
            if text is not None:
                if state["first"] is None:
                    state["first"] = number
                yield text

    records = csv.reader(texts(), strict=True)
    while True:
        try:
            fields = next(records)
        except StopIteration:
            return
        except csv.Error as error:
            report.bad_row(DataError(path, state["first"], "malformed CSV",
                                     "comma-separated fields with double-quote quoting", error))
            fields = None
        yield state["first"], fields
        state["first"] = None


def _csv_table(path, report, required, optional):
    """(line, fields, column index) per data row of a CSV file with a header."""
    records = _csv_records(path, report)
    number, header = next(records, (1, None))  # nothing at all: every line undecodable
    if header is None:
        raise DataError(path, number, "unexpected header", "a CSV header line",
                        "malformed CSV or undecodable bytes")
    index = _columns(path, header, required, optional)
    for number, fields in records:
        if fields is not None and len(fields) != len(header):
            report.bad_row(DataError(path, number, "wrong column count",
                                     f"{len(header)} comma-separated columns", len(fields)))
        elif fields is not None:
            yield number, fields, index


_SWAG_ENDINGS = ("ending0", "ending1", "ending2", "ending3")


def _read_swag(path, report):
    def build(number, fields, index):
        label = None
        if "label" in index:
            label = int(_label(path, number, fields[index["label"]], ("0", "1", "2", "3")))
        # sent2 is the start of the second sentence that every ending completes.
        start = fields[index["sent2"]]
        return {"id": fields[index["fold-ind"]] if "fold-ind" in index else str(number),
                "context": fields[index["sent1"]],
                "choices": [f"{start} {fields[index[e]]}" for e in _SWAG_ENDINGS],
                "label": label}

    rows = _csv_table(path, report, ("sent1", "sent2", *_SWAG_ENDINGS), ("fold-ind", "label"))
    yield from _checked(rows, build, report)


_STORY = ("InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3",
          "InputSentence4", "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2")


def _read_story_cloze(path, report):
    def build(number, fields, index):
        label = None
        if "AnswerRightEnding" in index:
            label = int(_label(path, number, fields[index["AnswerRightEnding"]], ("1", "2"))) - 1
        return {"id": fields[index["InputStoryid"]],
                "context": " ".join(fields[index[f"InputSentence{i}"]] for i in range(1, 5)),
                "choices": [fields[index["RandomFifthSentenceQuiz1"]],
                            fields[index["RandomFifthSentenceQuiz2"]]],
                "label": label}

    yield from _checked(_csv_table(path, report, _STORY, ("AnswerRightEnding",)), build, report)


def _read_race(path, report):
    if os.path.isdir(path):
        # Hidden names are skipped, as for image folders: macOS writes AppleDouble `._1.txt`.
        files = []
        for root, folders, names in os.walk(path):
            folders[:] = [f for f in folders if not f.startswith(".")]
            files.extend(os.path.join(root, name) for name in names
                         if name.endswith(".txt") and not name.startswith("."))
        files.sort()
        if not files:
            raise DataError(path, None, "no RACE files",
                            ".txt files holding one JSON object each", "none")
    else:
        files = [path]

    def questions():
        for file in files:
            try:
                record = _load_json(file)
                article = _get(record, "article", str, file, None)
                lists = [_get(record, key, list, file, None)
                         for key in ("questions", "options", "answers")]
                file_id = _get(record, "id", str, file, None)
                if len({len(items) for items in lists}) != 1:
                    raise DataError(file, None, "mismatched lists",
                                    "as many options and answers as questions",
                                    "{} questions, {} options, {} answers".format(*map(len, lists)))
            except DataError as error:
                report.bad_row(error)
                continue
            for i, (question, options, answer) in enumerate(zip(*lists)):
                yield file, f"questions[{i}]", file_id, i, article, question, options, answer

    def build(file, where, file_id, i, article, question, options, answer):
        if not isinstance(question, str):
            raise DataError(file, where, "wrong type", "a question string", json.dumps(question))
        if (not isinstance(options, list) or len(options) != 4
                or not all(isinstance(option, str) for option in options)):
            raise DataError(file, where, "wrong options", "a list of 4 strings",
                            json.dumps(options)[:80])
        if answer not in ("A", "B", "C", "D"):
            raise DataError(file, where, "unknown label", "one of A, B, C, D", json.dumps(answer))
        return {"id": f"{file_id}-{i}", "context": article, "question": question,
                "choices": list(options), "label": "ABCD".index(answer)}

    yield from _checked(questions(), build, report)


# === CoNLL-2003 named entities ===

ENTITY_TYPES = ("PER", "ORG", "LOC", "MISC")
# The order of the tag ids: HF `conll2003`, which converted models' heads use.
CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


def to_iob2(tags):
    """IOB1 or IOB2 tags as IOB2: every entity starts with B-.

    In IOB1 (the original CoNLL-2003 files) an entity starts with I- unless it directly
    follows one of the same type; IOB2 (most re-distributions) always starts with B-. The
    conversion leaves IOB2 unchanged.

    Example:
        >>> to_iob2(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"])
        ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC']
    """
    return [f"B-{tag[2:]}" if tag.startswith("I-") and (i == 0 or tags[i - 1][2:] != tag[2:])
            else tag for i, tag in enumerate(tags)]


def starts_with_inside(tags):
    """Whether an I- tag starts an entity somewhere (IOB1: after O, another type, or first).

    Example:
        >>> starts_with_inside(["B-PER", "I-PER", "O"]), starts_with_inside(["O", "I-LOC"])
        (False, True)
    """
    return any(tag.startswith("I-") and (i == 0 or tags[i - 1][2:] != tag[2:])
               for i, tag in enumerate(tags))


# Column count -> (name, index of the word, index of the NER tag). The original CoNLL-2003
# files have 4 columns; many public copies keep only `word tag`.
CONLL_LAYOUTS = {4: ("token POS chunk NER", 0, 3), 2: ("word tag", 0, 1)}


def conll_layout(path, number, text):
    """(column count, separator name) of the first data line of a CoNLL file."""
    fields = text.split()
    if len(fields) not in CONLL_LAYOUTS:
        raise DataError(path, number, "unknown layout", "4 columns (token POS chunk NER) or 2 "
                        "columns (word tag), space- or tab-separated", f"{len(fields)} columns")
    return len(fields), "tab-separated" if "\t" in text else "space-separated"


def _read_conll2003(path, report, convert_to_iob2=False):
    """Sentences of a CoNLL-2003 file; a bad line skips its whole sentence.

    The layout (4 columns `token POS chunk NER`, or 2 columns `word tag`; space- or
    tab-separated) is taken from the first data line and every line must follow it. When the
    file is read, `report.layout` says what was read ("2 columns (word tag), tab-separated,
    IOB1"): IOB1 when an I- tag starts an entity anywhere, else IOB2.
    """
    words, tags, bad, layout, iob1 = [], [], False, None, False

    def sentence():
        nonlocal iob1
        iob1 = iob1 or starts_with_inside(tags)
        return {"words": words, "tags": to_iob2(tags) if convert_to_iob2 else tags}

    for number, text in _lines(path, report):
        if text is None:
            bad = True
            continue
        fields = text.split()
        if not fields or fields[0] == "-DOCSTART-":
            if words and not bad:
                yield sentence()
            words, tags, bad = [], [], False
            continue
        if layout is None:
            layout = conll_layout(path, number, text) + (number,)
        columns, separator, first = layout
        found_separator = "tab-separated" if "\t" in text else "space-separated"
        if len(fields) != columns or found_separator != separator:
            error = DataError(path, number, "wrong column count",
                              f"{columns} {separator} columns ({CONLL_LAYOUTS[columns][0]}) as "
                              f"on line {first}", len(fields) if found_separator == separator
                              else f"{len(fields)} {found_separator} columns")
        elif fields[CONLL_LAYOUTS[columns][2]] not in CONLL_TAGS:
            error = DataError(path, number, "unknown tag", "O, B-TYPE or I-TYPE with TYPE one of "
                              + ", ".join(ENTITY_TYPES), repr(fields[CONLL_LAYOUTS[columns][2]]))
        else:
            words.append(fields[0])
            tags.append(fields[CONLL_LAYOUTS[columns][2]])
            continue
        if not bad:  # one count per sentence
            report.bad_row(error)
        bad = True
    if words and not bad:
        yield sentence()
    if layout is not None:
        report.layout = (f"{layout[0]} columns ({CONLL_LAYOUTS[layout[0]][0]}), {layout[1]}, "
                         + ("IOB1" if iob1 else "IOB2"))
        logger.info("conll2003 %s: %s", os.path.basename(path), report.layout)


# === Image folders ===

# What tf.io.decode_image reads, by extension and by the file's first bytes.
IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_IMAGE_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")


def image_classes(path):
    """The class names of an image folder: its sub-folders, sorted; label i is classes[i].

    Example:
        >>> image_classes("samples/images/train")  # doctest: +SKIP
        ['circle', 'square', 'triangle']
    """
    if not os.path.isdir(path):
        raise DataError(path, None, "not a directory", "a directory with one folder per class",
                        "a file")
    classes = sorted(entry.name for entry in os.scandir(path)
                     if entry.is_dir() and not entry.name.startswith("."))
    if not classes:
        raise DataError(path, None, "no class folders", "one sub-folder per class", "none")
    return classes


def _read_image_folder(path, report):
    classes = image_classes(path)
    # Hidden files (.DS_Store, ._x.jpg from macOS) are not rows; any other stray file is.
    for entry in sorted(os.scandir(path), key=lambda entry: entry.name):
        if entry.is_file() and not entry.name.startswith("."):
            report.bad_row(DataError(entry.path, None, "file outside a class folder",
                                     "images inside the class sub-folders", "a file"))
    for label, name in enumerate(classes):
        count = 0
        for root, folders, files in os.walk(os.path.join(path, name)):
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            for file in sorted(f for f in files if not f.startswith(".")):
                file = os.path.join(root, file)
                try:
                    _check_image(file)
                except DataError as error:
                    report.bad_row(error)
                    continue
                count += 1
                yield {"path": file, "label": label}
        if not count:
            report.bad_row(DataError(os.path.join(path, name), None, "empty class folder",
                                     "at least one image", "none"))


def _check_image(file):
    if not file.lower().endswith(IMAGE_EXTENSIONS):
        raise DataError(file, None, "not an image", "a file ending in "
                        + ", ".join(IMAGE_EXTENSIONS), repr(os.path.splitext(file)[1]))
    with open(file, "rb") as handle:
        head = handle.read(8)
    if not head.startswith(_IMAGE_SIGNATURES):
        raise DataError(file, None, "not an image", "PNG, JPEG, GIF or BMP bytes",
                        f"a file starting with {head!r}")


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
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory (task {task})")
    if os.path.isdir(path) and "directory" not in spec.reads:
        raise IsADirectoryError(f"{path}: task {task} reads a file, found a directory")
    return Examples(spec, path, skip_bad_rows, **options)
