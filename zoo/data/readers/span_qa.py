"""Span question answering: SQuAD 1.1 and 2.0 JSON documents (the benchmarks' and your own),
one example per question."""

from zoo.data.readers.errors import DataError
from zoo.data.readers.text import checked_rows, json_field, load_json


def squad_version(path):
    """2 when a question of the SQuAD JSON document at `path` has an "is_impossible" field
    (SQuAD 2.0 writes one on every question, 1.1 on none), else 1.

    Examples:
        >>> import json, pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "mine.json"
        >>> question = {"id": "q1", "question": "Snow?", "answers": [], "is_impossible": True}
        >>> paragraph = {"context": "It rained.", "qas": [question]}
        >>> _ = path.write_text(json.dumps({"data": [{"paragraphs": [paragraph]}]}))
        >>> squad_version(path)
        2
    """
    document = load_json(path)
    articles = document.get("data") if isinstance(document, dict) else None
    for article in articles if isinstance(articles, list) else ():
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        for paragraph in paragraphs if isinstance(paragraphs, list) else ():
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if any(isinstance(qa, dict) and "is_impossible" in qa
                   for qa in (qas if isinstance(qas, list) else ())):
                return 2
    return 1  # (a malformed document is the reader's to name)


def read_squad_file(path, report, version=None):
    """`read_squad` of a SQuAD JSON document of any name, its `version` (1 or 2) detected by
    `squad_version` when None: your own question-answering data."""
    yield from read_squad(version or squad_version(path), path, report)


def read_squad(version, path, report):
    """One example per question of a SQuAD `version` (1 or 2) JSON document, answers checked
    against their context."""
    document = load_json(path)
    articles = json_field(document, "data", list, path, "the top level")

    def paragraphs():
        """(location, context, qa) for every question; malformed containers are bad rows."""
        for a, article in enumerate(articles):
            try:
                items = json_field(article, "paragraphs", list, path, f"data[{a}]")
            except DataError as error:
                report.bad_row(error)
                continue
            for p, paragraph in enumerate(items):
                where = f"data[{a}].paragraphs[{p}]"
                try:
                    context = json_field(paragraph, "context", str, path, where)
                    qas = json_field(paragraph, "qas", list, path, where)
                except DataError as error:
                    report.bad_row(error)
                    continue
                for q, qa in enumerate(qas):
                    yield f"{where}.qas[{q}]", context, qa

    def build(where, context, qa):
        qa_id = json_field(qa, "id", str, path, where)
        where = f"{where} (id {qa_id!r})"
        question = json_field(qa, "question", str, path, where)
        answers = json_field(qa, "answers", list, path, where)
        if not context.strip():
            raise DataError(path, where, "empty context", "a paragraph with text",
                            repr(context))
        if version == 2:
            impossible = json_field(qa, "is_impossible", bool, path, where)
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
            text = json_field(answer, "text", str, path, where)
            start = json_field(answer, "answer_start", int, path, where)
            # Offsets count characters, not bytes: "24–10" is 5 characters.
            if not text or start < 0 or context[start:start + len(text)] != text:
                raise DataError(path, where, "answer_start does not match the answer text",
                                f"{text!r} at context[{start}:{start + len(text)}]",
                                repr(context[max(start, 0):max(start, 0) + len(text)]))
            checked.append({"text": text, "answer_start": start})
        return {"id": qa_id, "question": question, "context": context, "answers": checked,
                "is_impossible": impossible}

    yield from checked_rows(paragraphs(), build, report)
