"""Multiple choice: SWAG and Story Cloze (CSV), RACE (one JSON document per .txt file)."""

import csv
import json
import os

from zoo import files
from zoo.data.readers.errors import DataError
from zoo.data.readers.text import (
    checked_label,
    checked_rows,
    column_index,
    json_field,
    load_json,
    numbered_lines,
    walk_visible,
)


def _csv_records(path, report):
    """(first line number, fields) for each record of a quoted CSV file (fields may span lines)."""
    state = {"first": None}

    def texts():
        for number, text in numbered_lines(path, report, keep_ends=True):
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
    index = column_index(path, header, required, optional)
    for number, fields in records:
        if fields is not None and len(fields) != len(header):
            report.bad_row(DataError(path, number, "wrong column count",
                                     f"{len(header)} comma-separated columns", len(fields)))
        elif fields is not None:
            yield number, fields, index


_SWAG_ENDINGS = ("ending0", "ending1", "ending2", "ending3")


def read_swag(path, report):
    """SWAG's CSV (train, val, test): the context and four endings per row."""
    def build(number, fields, index):
        label = None
        if "label" in index:
            label = int(checked_label(path, number, fields[index["label"]], ("0", "1", "2", "3")))
        # sent2 is the start of the second sentence that every ending completes.
        start = fields[index["sent2"]]
        return {"id": fields[index["fold-ind"]] if "fold-ind" in index else str(number),
                "context": fields[index["sent1"]],
                "choices": [f"{start} {fields[index[e]]}" for e in _SWAG_ENDINGS],
                "label": label}

    rows = _csv_table(path, report, ("sent1", "sent2", *_SWAG_ENDINGS), ("fold-ind", "label"))
    yield from checked_rows(rows, build, report)


_STORY = ("InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3",
          "InputSentence4", "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2")


def read_story_cloze(path, report):
    """Story Cloze's CSV: four sentences of a story and its two candidate endings."""
    def build(number, fields, index):
        label = None
        if "AnswerRightEnding" in index:
            answer = fields[index["AnswerRightEnding"]]
            label = int(checked_label(path, number, answer, ("1", "2"))) - 1
        return {"id": fields[index["InputStoryid"]],
                "context": " ".join(fields[index[f"InputSentence{i}"]] for i in range(1, 5)),
                "choices": [fields[index["RandomFifthSentenceQuiz1"]],
                            fields[index["RandomFifthSentenceQuiz2"]]],
                "label": label}

    yield from checked_rows(_csv_table(path, report, _STORY, ("AnswerRightEnding",)), build, report)


def read_race(path, report):
    """RACE: a directory of .txt files (searched recursively) or one file, each one JSON
    document of an article and its questions; one example per question."""
    if files.isdir(path):
        # Hidden names are skipped, as for image folders: macOS writes AppleDouble `._1.txt`.
        paths = sorted(os.path.join(root, name) for root, names in walk_visible(path)
                       for name in names if name.endswith(".txt"))
        if not paths:
            raise DataError(path, None, "no RACE files",
                            ".txt files holding one JSON object each", "none")
    else:
        paths = [path]

    def questions():
        for file in paths:
            try:
                record = load_json(file)
                article = json_field(record, "article", str, file, None)
                lists = [json_field(record, key, list, file, None)
                         for key in ("questions", "options", "answers")]
                file_id = json_field(record, "id", str, file, None)
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

    yield from checked_rows(questions(), build, report)
