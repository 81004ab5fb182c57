"""Entity-level scoring of CoNLL-2003 named entities, with the rules of the conlleval script.

The CoNLL-2003 shared task (Tjong Kim Sang and De Meulder, 2003, section 4) scores entities,
not tokens: "precision is the percentage of named entities found by the learning system that
are correct. Recall is the percentage of named entities present in the corpus that are found
by the system. A named entity is correct only if it is an exact match of the corresponding
entity in the data file." Its conlleval script reads chunks from IOB tags:

- a B- tag always starts a chunk;
- an I- tag starts a chunk when it follows O, a tag of another type, or the sentence start
  (so IOB1 input, where entities start with I-, is read as written);
- a chunk ends before O, before a B- tag, before a tag of another type, and at the end of the
  sentence (a blank or -DOCSTART- line).

Adjacent chunks of the same type stay separate when the second starts with B-. Precision,
recall and F1 are on conlleval's 0-100 scale; a type with no predicted (or no gold) chunk has
precision (or recall) 0, as conlleval prints. Per-type results are nested:
`{"PER": {"precision", "recall", "f1", "support"}}`, support being the number of gold chunks.

The conlleval input format (predictions file): the gold file's lines, each with one more
column, the predicted tag; blank and -DOCSTART- lines as they are.

Written by hand rather than calling seqeval so that zoo does not depend on it; the tests check
it against seqeval's default (conlleval-compatible) mode.
"""

from zoo.data import DataError
from zoo.data.readers import CONLL_LAYOUTS, CONLL_TAGS, ENTITY_TYPES, conll_layout


def chunks(tags):
    """(type, start, end) of every chunk in one sentence's IOB1 or IOB2 tags, end exclusive.

    Example:
        >>> chunks(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"])
        [('PER', 0, 2), ('PER', 2, 3), ('LOC', 4, 5), ('ORG', 5, 6)]
    """
    found, start, kind = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, tag_type = (tag[:1], tag[2:]) if tag != "O" else ("O", None)
        if start is not None and (prefix != "I" or tag_type != kind):
            found.append((kind, start, i))
            start = None
        if prefix == "B" or (prefix == "I" and start is None):
            start, kind = i, tag_type
    return found


def prf(correct, predicted, gold):
    """Precision, recall and F1 (0-100) from chunk counts, 0 where undefined (conlleval)."""
    precision = 100.0 * correct / predicted if predicted else 0.0
    recall = 100.0 * correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def evaluate_tags(gold_sentences, predicted_sentences):
    """Entity precision, recall and F1 (0-100) overall and per type, and the token count.

    Args:
        gold_sentences: one list of IOB tags per sentence.
        predicted_sentences: the predicted tags, same shape.

    Example:
        >>> result = evaluate_tags([["B-PER", "I-PER", "O", "B-LOC"]],
        ...                        [["B-PER", "I-PER", "O", "B-ORG"]])
        >>> result["f1"], result["PER"]["f1"], result["LOC"]["recall"], result["tokens"]
        (50.0, 100.0, 0.0, 4)
    """
    counts = {}  # type -> [correct, predicted, gold]
    tokens = 0
    for gold, predicted in zip(gold_sentences, predicted_sentences, strict=True):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence of {len(gold)} gold tags and {len(predicted)} predicted")
        tokens += len(gold)
        gold_chunks, predicted_chunks = set(chunks(gold)), set(chunks(predicted))
        for chunk in gold_chunks:
            counts.setdefault(chunk[0], [0, 0, 0])[2] += 1
        for chunk in predicted_chunks:
            counts.setdefault(chunk[0], [0, 0, 0])[1] += 1
            counts[chunk[0]][0] += chunk in gold_chunks
    total = [sum(values) for values in zip(*counts.values())] or [0, 0, 0]
    result = {**prf(*total), "tokens": tokens}
    for kind in sorted(counts):
        result[kind] = {**prf(*counts[kind]), "support": counts[kind][2]}
    return result


def _sentences(path, columns=None):
    """(line number, fields, column count or None on blank and -DOCSTART- lines) per line."""
    layout = None
    with open(path, encoding="utf-8-sig") as file:  # a leading BOM dropped
        for number, text in enumerate(file, 1):
            fields = text.split()
            if not fields or fields[0] == "-DOCSTART-":
                yield number, fields, None
                continue
            if layout is None:
                # The gold file's layout from its first data line; the predictions' is given.
                layout = columns or conll_layout(path, number, text)[0]
            if len(fields) != layout:
                where = "the gold file's columns and the predicted tag" if columns else \
                    "on the file's first data line"
                raise DataError(path, number, "wrong column count", f"{layout} columns as "
                                f"{where}", len(fields))
            yield number, fields, layout


def _tag(path, number, tag):
    if tag not in CONLL_TAGS:
        raise DataError(path, number, "unknown tag", "O, B-TYPE or I-TYPE with TYPE one of "
                        + ", ".join(ENTITY_TYPES), repr(tag))
    return tag


def score_conll(task, gold_path, predictions_path, **_):
    """Score a conlleval-format predictions file against the gold CoNLL-2003 file.

    The predictions file must have the gold file's lines in order, each data line with one more
    column (the predicted tag); anything else is a `DataError` naming the file and line.

    Returns:
        {"precision", "recall", "f1", "tokens", TYPE: {"precision", "recall", "f1",
        "support"}, ...}, scores on the 0-100 scale.

    Example:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "test.txt").write_text("Peter B-PER\\nParis I-LOC\\n\\n")
        >>> _ = (folder / "predictions.txt").write_text("Peter B-PER B-PER\\nParis I-LOC O\\n\\n")
        >>> result = score_conll("conll2003", folder / "test.txt", folder / "predictions.txt")
        >>> result["precision"], result["recall"], result["PER"]["f1"]
        (100.0, 50.0, 100.0)
    """
    gold_lines = list(_sentences(gold_path))
    columns = next((layout for _, _, layout in gold_lines if layout), 0)
    predicted_lines = list(_sentences(predictions_path, columns + 1))
    gold_sentences, predicted_sentences, gold_tags, predicted_tags = [], [], [], []
    for i, (number, fields, layout) in enumerate(gold_lines):
        if i >= len(predicted_lines):
            raise DataError(predictions_path, i + 1, "missing line",
                            f"{len(gold_lines)} lines as in {gold_path}", f"{i} lines")
        _, predicted_fields, _ = predicted_lines[i]
        if layout is None:
            if predicted_fields != fields:
                raise DataError(predictions_path, i + 1, "misaligned line",
                                f"{' '.join(fields) or 'a blank line'} as on line {number} of "
                                f"{gold_path}", " ".join(predicted_fields) or "a blank line")
            if gold_tags:
                gold_sentences.append(gold_tags)
                predicted_sentences.append(predicted_tags)
            gold_tags, predicted_tags = [], []
            continue
        if len(predicted_fields) != len(fields) + 1 or predicted_fields[0] != fields[0]:
            raise DataError(predictions_path, i + 1, "misaligned line",
                            f"{len(fields) + 1} columns starting with the word {fields[0]!r} as "
                            f"on line {number} of {gold_path} plus the predicted tag",
                            " ".join(predicted_fields) or "a blank line")
        gold_tags.append(_tag(gold_path, number, fields[CONLL_LAYOUTS[layout][2]]))
        predicted_tags.append(_tag(predictions_path, i + 1, predicted_fields[-1]))
    if len(predicted_lines) > len(gold_lines):
        raise DataError(predictions_path, len(gold_lines) + 1, "extra line",
                        f"{len(gold_lines)} lines as in {gold_path}", f"{len(predicted_lines)}")
    if gold_tags:
        gold_sentences.append(gold_tags)
        predicted_sentences.append(predicted_tags)
    return evaluate_tags(gold_sentences, predicted_sentences)
