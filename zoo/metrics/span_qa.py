"""Span QA scoring: the rules of SQuAD's official evaluate-v1.1.py and evaluate-v2.0.py, for the
SQuAD v1.1 and v2.0 benchmarks and for your own SQuAD-format files (`question_answering`).

Rajpurkar et al., 2016 (section 6) and 2018 (section 5): answers are compared after
normalisation (lower case, punctuation removed, the articles a / an / the removed, whitespace
collapsed); exact match (EM) and the bag-of-tokens F1 of a prediction are the maximum over the
question's gold answers, averaged over questions on a 0-100 scale. SQuAD 2.0: an unanswerable
question's gold answer is "" (an empty prediction scores 1, anything else 0); the scores are
also given over the answerable (`HasAns_*`) and unanswerable (`NoAns_*`) questions. With
no-answer scores (`na_prob`, run_squad.py's s_null - s_best) a prediction counts as "" when
its score exceeds `na_prob_thresh` (1.0, the official default), and the search for the
threshold that maximises EM and F1 (`best_exact`, `best_f1` and their thresholds) runs as
the official `find_best_thresh`: questions sorted by score, a running total, the first
maximum kept.

The official scripts are not installable, so their rules are rewritten here (the SQuAD
website's files, https://rajpurkar.github.io/SQuAD-explorer/). One deliberate difference,
for both versions the same: a question without a prediction is scored as wrong and counted
in the total (evaluate-v1.1.py does this; evaluate-v2.0.py leaves it out of the total), and
the result says how many (`missing`, present only when some are).
"""

import collections
import json
import logging
import math
import re
import string

from zoo import files
from zoo.data import DataError
from zoo.data.readers.span_qa import squad_version

logger = logging.getLogger("zoo.metrics")

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """Lower case, punctuation and the articles a / an / the removed, whitespace collapsed.

    Examples:
        >>> normalize_answer("The  Eiffel-Tower, (Paris)!")
        'eiffeltower paris'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _f1(prediction_tokens, gold_tokens):
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(prediction_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _scores_v1(prediction, golds):
    """(EM, F1) of evaluate-v1.1.py: maximum over the gold answers; "" against "" has F1 0."""
    predicted = normalize_answer(prediction)
    exact = max(float(predicted == normalize_answer(g)) for g in golds)
    f1 = max(_f1(predicted.split(), normalize_answer(g).split()) for g in golds)
    return exact, f1


def _scores_v2(prediction, golds):
    """(EM, F1) of evaluate-v2.0.py: gold answers that normalise to "" are dropped, [""] if none
    is left; F1 is 1 when both sides have no tokens, 0 when only one has none."""
    golds = [g for g in golds if normalize_answer(g)] or [""]
    predicted = normalize_answer(prediction)
    exact = max(float(predicted == normalize_answer(g)) for g in golds)
    f1s = []
    for gold in golds:
        gold_tokens, predicted_tokens = normalize_answer(gold).split(), predicted.split()
        if not gold_tokens or not predicted_tokens:
            f1s.append(float(gold_tokens == predicted_tokens))
        else:
            f1s.append(_f1(predicted_tokens, gold_tokens))
    return exact, max(f1s)


def _check_ids(gold, predictions, predictions_path, what="predictions"):
    unknown = [qid for qid in predictions if qid not in gold]
    if unknown:
        listed = ", ".join(map(repr, unknown[:10])) + (", ..." if len(unknown) > 10 else "")
        raise DataError(predictions_path, None, "unknown question ids",
                        f"{what} for question ids of the gold file",
                        f"{len(unknown)} ids not in it: {listed}")
    missing = sum(1 for qid in gold if qid not in predictions)
    if missing:
        logger.warning("%s: no prediction for %d of %d questions; they are scored as wrong",
                       predictions_path, missing, len(gold))
    return missing


def squad_v1(gold, predictions, predictions_path="predictions"):
    """evaluate-v1.1.py: `exact_match` and `f1` (0-100) of {id: answer} against {id: [answers]}.

    Examples:
        >>> squad_v1({"q1": ["the cat"], "q2": ["dog", "a big dog"]}, {"q1": "Cat.", "q2": "big"})
        {'exact_match': 50.0, 'f1': 83.33333333333333}
    """
    missing = _check_ids(gold, predictions, predictions_path)
    exact = f1 = 0.0
    for qid, golds in gold.items():
        if qid in predictions:
            e, f = _scores_v1(predictions[qid], golds)
            exact, f1 = exact + e, f1 + f
    out = {"exact_match": 100.0 * exact / len(gold), "f1": 100.0 * f1 / len(gold)}
    return {**out, "missing": missing} if missing else out


def _best_threshold(predictions, scores, na_probs, has_answer, answered_no_answer):
    """find_best_thresh of evaluate-v2.0.py: (100 * best total / questions, threshold)."""
    current = best = answered_no_answer  # every question predicted unanswerable
    threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if has_answer[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions[qid] else 0
        current += diff
        if current > best:
            best, threshold = current, na_probs[qid]
    return 100.0 * best / len(scores), threshold


def squad_v2(gold, predictions, na_probs=None, na_prob_thresh=1.0,
             predictions_path="predictions", na_prob_path="na_prob"):
    """evaluate-v2.0.py on {id: [answers]} (empty list: unanswerable) and {id: answer}.

    Args:
        gold: question id -> gold answer texts, in the gold file's order; [] if unanswerable.
        predictions: question id -> predicted text ("" for no answer).
        na_probs: question id -> no-answer score, or None; with it the output has the best
            threshold search (`best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`).
        na_prob_thresh: a prediction whose no-answer score exceeds this counts as "".

    Examples:
        >>> squad_v2({"q1": ["Paris"], "q2": []}, {"q1": "paris", "q2": ""})["f1"]
        100.0
    """
    missing = _check_ids(gold, predictions, predictions_path)
    if na_probs is not None:
        _check_ids({q: 0 for q in gold if q in predictions}, na_probs, na_prob_path,
                   "no-answer scores")
        absent = [q for q in predictions if q not in na_probs]
        if absent:
            raise DataError(na_prob_path, None, "missing no-answer scores",
                            "a score for every predicted question",
                            f"none for {len(absent)} ids, e.g. {absent[0]!r}")
    has_answer = {qid: bool(golds) for qid, golds in gold.items()}
    exact_raw, f1_raw = {}, {}
    for qid, golds in gold.items():
        exact_raw[qid], f1_raw[qid] = (_scores_v2(predictions[qid], golds)
                                       if qid in predictions else (0.0, 0.0))
    probs = na_probs or {}

    def thresholded(scores):
        return {qid: float(not has_answer[qid]) if probs.get(qid, 0.0) > na_prob_thresh else s
                for qid, s in scores.items()}

    exact, f1 = thresholded(exact_raw), thresholded(f1_raw)

    def block(qids):
        return (100.0 * sum(exact[q] for q in qids) / len(qids),
                100.0 * sum(f1[q] for q in qids) / len(qids), len(qids))

    out = dict(zip(("exact", "f1", "total"), block(list(gold))))
    for prefix, qids in (("HasAns", [q for q in gold if has_answer[q]]),
                         ("NoAns", [q for q in gold if not has_answer[q]])):
        if qids:
            out.update(zip((f"{prefix}_exact", f"{prefix}_f1", f"{prefix}_total"), block(qids)))
    if na_probs is not None:
        # A question without a prediction is wrong at every threshold, also when unanswerable.
        answered_no_answer = sum(1 for q in gold if not has_answer[q] and q in predictions)
        for name, raw in (("exact", exact_raw), ("f1", f1_raw)):
            best, threshold = _best_threshold(predictions, raw, na_probs, has_answer,
                                              answered_no_answer)
            out[f"best_{name}"], out[f"best_{name}_thresh"] = best, threshold
    return {**out, "missing": missing} if missing else out


def _load(path, what):
    try:
        with files.open(path, encoding="utf-8-sig") as file:
            return json.load(file)
    except json.JSONDecodeError as error:
        raise DataError(path, error.lineno, "malformed JSON", what,
                        f"{error.msg} at column {error.colno}") from None
    except UnicodeDecodeError as error:
        raise DataError(path, None, "undecodable bytes", "UTF-8 JSON", str(error)) from None


def read_gold(path):
    """{question id: [gold answer texts]} of an official SQuAD JSON file, in file order."""
    document = _load(path, "a SQuAD JSON document")
    gold = {}
    try:
        for article in document["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    gold[qa["id"]] = [answer["text"] for answer in qa["answers"]]
    except (KeyError, TypeError, IndexError) as error:
        raise DataError(path, None, "not a SQuAD file",
                        "data[].paragraphs[].qas[] with id and answers[].text",
                        f"{type(error).__name__}: {error}") from None
    return gold


def _read_mapping(path, what, kind):
    mapping = _load(path, f"a JSON object {{question id: {what}}}")
    if not isinstance(mapping, dict):
        raise DataError(path, None, "not a JSON object", f"{{question id: {what}}}",
                        type(mapping).__name__)
    for qid, value in mapping.items():
        ok = isinstance(value, str) if kind is str else (
            isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
        if not ok:
            raise DataError(path, f"id {qid!r}", f"bad {what}", what, repr(value))
    return mapping


def score(task, gold_path, predictions_path, na_prob=None, **_):
    """`zoo score squad_v1|squad_v2`: the official JSON files in, the official metrics out.

    Args:
        task: "squad_v1" or "squad_v2".
        gold_path: the official dev JSON.
        predictions_path: {question id: answer text} JSON ("" for no answer).
        na_prob: (squad_v2) {question id: no-answer score} JSON, for the threshold search.

    Examples:
        >>> score("squad_v2", "dev-v2.0.json", "predictions/dev.json",
        ...       na_prob="predictions/dev_na_prob.json")  # doctest: +SKIP
        {'exact': 71.2, 'f1': 74.5, 'total': 11873, ..., 'best_f1_thresh': -2.1}
    """
    gold = read_gold(gold_path)
    predictions = _read_mapping(predictions_path, "an answer text", str)
    if task == "squad_v1":
        if na_prob is not None:
            raise ValueError("--na-prob is for squad_v2 (SQuAD 1.1 questions all have answers)")
        return squad_v1(gold, predictions, predictions_path)
    na_probs = None if na_prob is None else _read_mapping(na_prob, "a no-answer score", float)
    return squad_v2(gold, predictions, na_probs, predictions_path=predictions_path,
                    na_prob_path=na_prob)


def score_question_answering(task, gold_path, predictions_path, na_prob=None, data=None, **_):
    """`zoo score question_answering`: your own SQuAD-format file, scored as squad_v2 or
    squad_v1, as `data.version_2` says or, unset, as the gold file is (`squad_version`)."""
    version_2 = data.version_2 if data is not None else None
    if version_2 is None:
        version_2 = squad_version(gold_path) == 2
    return score("squad_v2" if version_2 else "squad_v1", gold_path, predictions_path,
                 na_prob=na_prob)


__all__ = ["normalize_answer", "read_gold", "score", "score_question_answering", "squad_v1",
           "squad_v2"]
