"""Tagging metrics: CoNLL-2003's entity scores with the conlleval rules, and your own tagged
words' (`token_classification`) entity scores or token accuracy, with their predictions files.

CoNLL-2003 named entities: entity-level precision, recall and F1. The shared task's official
scorer, conlleval (Tjong Kim Sang and De Meulder, 2003), counts an entity as found only when
both its type and its exact span agree with the gold entity. Spans come from IOB tags, read so
that IOB1 (the original files) and IOB2 (most redistributions) give the same entities:

- `B-X` always starts an entity of type X;
- `I-X` starts one when it does not continue an entity of type X: at the start of a sentence,
  after `O`, or after a tag of another type;
- an entity ends before `O`, before `B-`, before a tag of another type, and at the end of the
  sentence (a blank line or a -DOCSTART- line).

Precision = correct / predicted entities, recall = correct / gold entities, F1 their harmonic
mean, all on conlleval's 0-100 scale, overall and per entity type (`PER_f1` ...), plus token
accuracy. Written by hand: conlleval is a Perl script, and seqeval (which the tests use as the
independent reference) is not a dependency of zoo.

`zoo score conll2003 --gold FILE --predictions FILE` reads conlleval's input: the gold file
with one more column, the predicted tag, on every token line (`write_predictions` writes it).

Your own tagged words: tags of an entity scheme (IOB1, IOB2 / BIO, IOBES:
`zoo.data.readers.tagging.tag_scheme`) are scored as conlleval scores CoNLL-2003
(`entity_scores`: entity-level precision, recall and F1, 0-100, overall and per type; token
accuracy beside them), after `to_iob2_entities` rewrites both sides as IOB2, so that an IOBES
entity counts once. Any other tag set (part-of-speech tags) is scored by token accuracy
(scikit-learn's, 0-100). Their predictions files are JSON lines, one object per sentence in the
gold file's order: {"id": the sentence's id, "tags": [predicted tag, ...]}.
"""

import collections
import json

from sklearn import metrics as sklearn_metrics

from zoo.data import DataError, read_examples
from zoo.data.readers.tagging import CONLL_2003, CONLL_TAGS, tag_scheme, to_iob2_entities
from zoo.data.readers.text import json_field, json_line, numbered_lines
from zoo.files import write_text
from zoo.storage import storage_operation


def entity_spans(tags):
    """The entities of one sentence's tags as (type, start, end) with `end` exclusive.

    Examples:
        >>> entity_spans(["I-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"])
        [('PER', 0, 2), ('LOC', 3, 4), ('LOC', 4, 5), ('ORG', 5, 6)]
    """
    spans, start, kind = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, tag_kind = tag.partition("-")
        if start is not None and (prefix != "I" or tag_kind != kind):
            spans.append((kind, start, i))
            start = None
        if prefix in ("B", "I") and start is None:
            start, kind = i, tag_kind
    return spans


def _ratio(part, whole):
    return 100.0 * part / whole if whole else 0.0


def _f1(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def entity_scores(gold, predicted):
    """Entity-level precision, recall, F1 (overall and per type) and token accuracy, 0-100.

    Args:
        gold: the gold tags, one list per sentence (IOB1 or IOB2).
        predicted: the predicted tags, the same shape.

    Returns:
        {"precision", "recall", "f1", "accuracy", "<TYPE>_precision", "<TYPE>_recall",
        "<TYPE>_f1" for every type in gold or predictions, "entities" (gold),
        "predicted_entities", "tokens"}.

    Examples:
        >>> entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "O"]])
        ... # doctest: +NORMALIZE_WHITESPACE
        {'precision': 100.0, 'recall': 50.0, 'f1': 66.66666666666667, 'accuracy': 75.0,
         'LOC_precision': 0.0, 'LOC_recall': 0.0, 'LOC_f1': 0.0, 'PER_precision': 100.0,
         'PER_recall': 100.0, 'PER_f1': 100.0, 'entities': 2, 'predicted_entities': 1,
         'tokens': 4}
    """
    if len(gold) != len(predicted):
        raise ValueError(f"expected as many predicted sentences as gold ones, found "
                         f"{len(gold)} gold and {len(predicted)} predicted")
    counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> correct, gold, predicted
    tokens = right = 0
    for i, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"sentence {i}: {len(gold_tags)} gold tags but "
                             f"{len(predicted_tags)} predicted")
        tokens += len(gold_tags)
        right += sum(g == p for g, p in zip(gold_tags, predicted_tags))
        gold_spans, predicted_spans = set(entity_spans(gold_tags)), set(
            entity_spans(predicted_tags))
        for kind, *_ in gold_spans:
            counts[kind][1] += 1
        for kind, *_ in predicted_spans:
            counts[kind][2] += 1
        for kind, *_ in gold_spans & predicted_spans:
            counts[kind][0] += 1
    correct, in_gold, in_predicted = (sum(c[k] for c in counts.values()) for k in range(3))
    precision, recall = _ratio(correct, in_predicted), _ratio(correct, in_gold)
    result = {"precision": precision, "recall": recall, "f1": _f1(precision, recall),
              "accuracy": _ratio(right, tokens)}
    for kind in sorted(counts):
        c = counts[kind]
        p, r = _ratio(c[0], c[2]), _ratio(c[0], c[1])
        result.update({f"{kind}_precision": p, f"{kind}_recall": r, f"{kind}_f1": _f1(p, r)})
    result.update(entities=in_gold, predicted_entities=in_predicted, tokens=tokens)
    return result


# === Files ===


def _check_tag(path, number, tag):
    if tag not in CONLL_TAGS:
        raise DataError(path, number, "unknown tag", CONLL_2003.unknown_tag, repr(tag))
    return tag


def _is_boundary(fields):
    return not fields or fields[0] == "-DOCSTART-"


def _read_lines(path):
    lines = list(numbered_lines(path))
    while lines and not lines[-1][1].strip():  # trailing blank lines do not count
        lines.pop()
    return lines


def read_conlleval(gold_path, predictions_path):
    """Gold and predicted tags per sentence from a gold file and its conlleval file.

    Every line of the predictions file must be the gold line (same fields) plus the predicted
    tag; blank and -DOCSTART- lines must stand where the gold file has them. A mismatch is a
    `DataError` naming the predictions file and line.

    Returns:
        (gold sentences, predicted sentences): lists of tag lists.
    """
    gold_lines, predicted_lines = _read_lines(gold_path), _read_lines(predictions_path)
    gold, predicted, gold_sentence, predicted_sentence = [], [], [], []
    for (number, gold_text), (_, text) in zip(gold_lines, predicted_lines):
        gold_fields, fields = gold_text.split(), text.split()
        if _is_boundary(gold_fields):
            if _is_boundary(fields) and bool(fields) == bool(gold_fields):
                if gold_sentence:
                    gold.append(gold_sentence)
                    predicted.append(predicted_sentence)
                gold_sentence, predicted_sentence = [], []
                continue
            raise DataError(predictions_path, number, "misaligned line",
                            f"the gold file's line {gold_text!r}", repr(text[:80]))
        if len(gold_fields) < 2:
            raise DataError(gold_path, number, "wrong column count",
                            "a word and its tag (2 or 4 columns)", len(gold_fields))
        if len(fields) != len(gold_fields) + 1 or fields[:-1] != gold_fields:
            raise DataError(predictions_path, number, "misaligned line",
                            f"the gold line {gold_text!r} plus one column, the predicted tag",
                            repr(text[:80]))
        gold_sentence.append(_check_tag(gold_path, number, gold_fields[-1]))
        predicted_sentence.append(_check_tag(predictions_path, number, fields[-1]))
    if len(gold_lines) != len(predicted_lines):
        number = min(len(gold_lines), len(predicted_lines)) + 1
        raise DataError(predictions_path, number, "wrong line count",
                        f"{len(gold_lines)} lines, one per gold line",
                        f"{len(predicted_lines)} lines")
    if gold_sentence:
        gold.append(gold_sentence)
        predicted.append(predicted_sentence)
    return gold, predicted


def write_predictions(gold_path, predicted, out_path):
    """Write conlleval's input: the gold file with the predicted tag added to each token line.

    Args:
        gold_path: the CoNLL file the predictions are for (any layout the reader takes).
        predicted: one tag list per sentence, in the order `read_examples("conll2003",
            gold_path)` yields the sentences.
        out_path: where to write (atomically); the separator of each line (tab or space) is
            kept.

    Examples:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "valid.txt").write_text("EU\\tB-ORG\\nrejects\\tO\\n\\n")
        >>> write_predictions(folder / "valid.txt", [["B-ORG", "B-PER"]], folder / "pred.txt")
        >>> (folder / "pred.txt").read_text()
        'EU\\tB-ORG\\tB-ORG\\nrejects\\tO\\tB-PER\\n\\n'
        >>> scores = score_conll("conll2003", folder / "valid.txt", folder / "pred.txt")
        >>> scores["precision"], scores["recall"]  # B-PER on "rejects" is a wrong entity
        (50.0, 100.0)
    """
    out, sentence, tags = [], 0, None
    for number, text in numbered_lines(gold_path):
        fields = text.split()
        if _is_boundary(fields):
            if tags is not None:
                _done(gold_path, predicted, sentence, tags)
                sentence, tags = sentence + 1, None
            out.append(text)
            continue
        if tags is None:
            if sentence >= len(predicted):
                raise ValueError(f"{gold_path}:{number}: sentence {sentence} has no "
                                 f"predictions (only {len(predicted)} predicted sentences)")
            tags = iter(predicted[sentence])
        tag = next(tags, None)
        if tag is None:
            raise ValueError(f"{gold_path}:{number}: sentence {sentence} has more words than "
                             f"its {len(predicted[sentence])} predicted tags")
        separator = "\t" if "\t" in text else " "
        out.append(text + separator + tag)
    if tags is not None:
        _done(gold_path, predicted, sentence, tags)
        sentence += 1
    if sentence != len(predicted):
        raise ValueError(f"{gold_path}: {sentence} sentences but {len(predicted)} predicted")
    write_text(out_path, "".join(line + "\n" for line in out))


def _done(path, predicted, sentence, rest):
    extra = sum(1 for _ in rest)
    if extra:
        raise ValueError(f"{path}: sentence {sentence} has {len(predicted[sentence]) - extra} "
                         f"words but {len(predicted[sentence])} predicted tags")


def score_conll(task, gold_path, predictions_path, **_):
    """`zoo score conll2003`: entity scores of a conlleval file against the gold file."""
    gold, predicted = read_conlleval(gold_path, predictions_path)
    if not gold:
        raise DataError(gold_path, None, "no sentences", "at least one tagged word", "none")
    return {**entity_scores(gold, predicted), "sentences": len(gold)}


# === Your own tagged words ===


def main_metric(scheme):
    """The metric that picks the best checkpoint: entity F1, or token accuracy."""
    return "accuracy" if scheme == "none" else "f1"


def tag_scores(gold, predicted, scheme):
    """Entity scores (an entity scheme) or {"accuracy", "tokens"} (0-100) of tag lists."""
    if len(gold) != len(predicted):
        raise ValueError(f"expected as many predicted sentences as gold ones, found "
                         f"{len(gold)} gold and {len(predicted)} predicted")
    if scheme != "none":
        return entity_scores([to_iob2_entities(tags, scheme) for tags in gold],
                             [to_iob2_entities(tags, scheme) for tags in predicted])
    flat_gold = [tag for tags in gold for tag in tags]
    flat_predicted = [tag for tags in predicted for tag in tags]
    if len(flat_gold) != len(flat_predicted):
        raise ValueError("a sentence has another number of predicted tags than gold ones")
    return {"accuracy": 100.0 * sklearn_metrics.accuracy_score(flat_gold, flat_predicted),
            "tokens": len(flat_gold)}


def write_tag_predictions(path, ids, predicted):
    """The predictions file: {"id", "tags"} per sentence (JSON lines), written atomically."""
    lines = [json.dumps({"id": i, "tags": list(tags)}, ensure_ascii=False) + "\n"
             for i, tags in zip(ids, predicted)]
    with storage_operation("writing the predictions", path):
        write_text(path, "".join(lines))


def read_tag_predictions(path, ids):
    """The predicted tag lists of a predictions file, one per id of `ids` (the gold file's
    sentences), each id once."""
    found = {}
    for number, text in numbered_lines(path):
        if not text.strip():
            continue
        record = json_line(path, number, text)
        sentence = str(json_field(record, "id", str, path, number))
        tags = json_field(record, "tags", list, path, number)
        if sentence in found:
            raise DataError(path, number, "duplicate id", "each sentence once", repr(sentence))
        found[sentence] = tags
    missing = [i for i in ids if i not in found]
    if missing:
        raise DataError(path, None, "missing sentences", f"{len(ids)} sentences, one a gold "
                        "sentence", f"none for ids {', '.join(missing[:10])}")
    return [found[i] for i in ids]


def score_token_classification(task, gold_path, predictions_path, data=None, **_):
    """`zoo score token_classification`: a predictions file against a CoNLL or JSON-lines
    file of your own (read with `data`'s format and fields, `--set data.KEY=...`)."""
    options = {} if data is None else dict(format=data.format, tokens_column=data.tokens_column,
                                           tags_column=data.tags_column)
    sentences = list(read_examples(task, gold_path, **options))
    gold = [s["tags"] for s in sentences]
    predicted = read_tag_predictions(predictions_path, [s["id"] for s in sentences])
    for sentence, tags in zip(sentences, predicted):
        if len(tags) != len(sentence["words"]):
            raise DataError(predictions_path, f"id {sentence['id']!r}", "length mismatch",
                            f"{len(sentence['words'])} tags, one a word", len(tags))
    return {**tag_scores(gold, predicted, tag_scheme(gold)), "sentences": len(gold)}


__all__ = ["entity_scores", "entity_spans", "main_metric", "read_conlleval",
           "read_tag_predictions", "score_conll", "score_token_classification", "tag_scores",
           "write_predictions", "write_tag_predictions"]
