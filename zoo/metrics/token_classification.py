"""The metrics of your own tagged words (`token_classification`) and its predictions files.

Tags of an entity scheme (IOB1, IOB2 / BIO, IOBES: `zoo.data.readers.tags.tag_scheme`) are
scored as conlleval scores CoNLL-2003 (`zoo.metrics.conll.entity_scores`: entity-level
precision, recall and F1, 0-100, overall and per type; token accuracy beside them), after
`to_iob2_entities` rewrites both sides as IOB2, so that an IOBES entity counts once. Any other
tag set (part-of-speech tags) is scored by token accuracy (scikit-learn's, 0-100).

Predictions files are JSON lines, one object per sentence in the gold file's order:
{"id": the sentence's id, "tags": [predicted tag, ...]}.
"""

import json

from sklearn import metrics as sklearn_metrics

from zoo.data import DataError, read_examples
from zoo.data.readers.tags import tag_scheme, to_iob2_entities
from zoo.data.readers.text import json_field, json_line, numbered_lines
from zoo.files import write_text
from zoo.metrics.conll import entity_scores
from zoo.storage import storage_operation


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


__all__ = ["main_metric", "read_tag_predictions", "score_token_classification", "tag_scores",
           "write_tag_predictions"]
