"""Span QA post-processing: from start and end logits to each question's best answer span.

BERT section 4.2 scores a span from position i to j as S·T_i + E·T_j, j >= i; the rules that
turn a question's windows into one answer are the released run_squad.py's: the n_best_size
highest start and end logits of each window, spans inside the context, at most
max_answer_length tokens, starting where the window gives the token its maximum context, the
text cut from the context by the tokens' character offsets, and s_null the smallest [CLS]
score over the windows. `best_spans` does it in Python for evaluation, `best_spans_graph` in
TensorFlow ops for the serving graph (tested equal); `logits_at_full_length` gives both the
logits of dynamically padded batches at full length.
"""

import numpy as np
import tensorflow as tf


def logits_at_full_length(outputs, length, padding_mask=None):
    """(start, end) float32 logits of a model's outputs, padded back to `length` positions.

    Under dynamic padding (`data.pad_to_multiple_of`) a batch is cut to its longest window.
    Padding gets no logit: -inf at the positions cut off and, when `padding_mask` is given, at
    every padding position, so the answers do not depend on where a batch was cut (serving
    cuts chunks of one question's windows, evaluation batches of many) and a padding position
    never takes one of the n_best_size candidate places (with full padding, as in
    run_squad.py, it can, though it is never an answer: it is outside the context). Works on
    NumPy arrays and TF tensors.
    """
    out = []
    for key in ("start_positions", "end_positions"):
        value = outputs[key]
        if isinstance(value, np.ndarray):
            value = value.astype("float32")
            if padding_mask is not None:
                value = np.where(np.asarray(padding_mask) > 0, value, -np.inf)
            out.append(np.pad(value, [(0, 0), (0, length - value.shape[1])],
                              constant_values=-np.inf))
        else:
            value = tf.cast(value, tf.float32)
            if padding_mask is not None:
                value = tf.where(padding_mask > 0, value, -np.inf)
            out.append(tf.reshape(tf.pad(value, [[0, 0], [0, length - tf.shape(value)[1]]],
                                         constant_values=-np.inf), [-1, length]))
    return tuple(out)


def best_spans(windows, contexts, start_logits, end_logits, n_best_size=20,
               max_answer_length=30):
    """The best answer of each question over all its windows (run_squad.py's post-processing).

    Args:
        windows: `zoo.data.span_qa.span_qa_windows` output (example_index, offsets, context_mask,
            max_context_mask), windows of one question consecutive.
        contexts: the context text of each example (indexed by `example_index`).
        start_logits, end_logits: (windows, seq) logits.
        n_best_size: start and end candidates per window (the highest logits).
        max_answer_length: longest answer, in tokens.

    Returns:
        One (text, s_best, s_null) per example: the best span's text (`context[a:b]` by its
        tokens' character offsets; "" with s_best 0.0 when no span qualifies, as run_squad.py's
        "empty" entry), its score start + end, and the smallest [CLS] score over the windows.

    Examples:
        >>> windows = {"example_index": np.array([0]),
        ...            "offsets": np.array([[[-1, -1], [0, 3], [4, 7]]]),
        ...            "context_mask": np.array([[False, True, True]]),
        ...            "max_context_mask": np.array([[False, True, True]])}
        >>> best_spans(windows, ["Ann did"], np.array([[0.0, 2.0, 1.0]]),
        ...            np.array([[0.0, 0.5, 3.0]]))
        [('Ann did', 5.0, 0.0)]
    """
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    best = [("", -np.inf, np.inf) for _ in contexts]
    for w, example in enumerate(windows["example_index"]):
        start, end = start_logits[w], end_logits[w]
        text, score, null = best[example]
        null = min(null, float(start[0] + end[0]))
        context, offsets = windows["context_mask"][w], windows["offsets"][w]
        max_context = windows["max_context_mask"][w]
        # Stable sorts: among equal logits the earlier position comes first, as in run_squad.py.
        starts = np.argsort(-start, kind="stable")[:n_best_size]
        ends = np.argsort(-end, kind="stable")[:n_best_size]
        for i in starts:
            if not (context[i] and max_context[i]):
                continue
            for j in ends:
                if not context[j] or j < i or j - i + 1 > max_answer_length:
                    continue
                candidate = float(start[i] + end[j])
                if candidate > score:
                    text = contexts[example][offsets[i, 0]:offsets[j, 1]]
                    score = candidate
        best[example] = (text, score, null)
    return [(text, score if np.isfinite(score) else 0.0, null) for text, score, null in best]


def best_spans_graph(windows, start_logits, end_logits, num_examples, n_best_size=20,
                     max_answer_length=30):
    """`best_spans` as TensorFlow ops, for serving: the best span of each example.

    Candidates are taken in `best_spans`' order (windows in order, the n_best_size start
    positions by descending logit then position, the same for ends) and the first one of the
    highest score wins, as `best_spans`' strict `>` update keeps it.

    Args:
        windows: `zoo.data.span_qa.span_qa_windows_graph` output.
        start_logits, end_logits: (windows, length) float32.
        num_examples: scalar, the batch size (examples may have no window).
        n_best_size, max_answer_length: as in `best_spans`.

    Returns:
        dict of (num_examples,) tensors: `found` bool (some span qualifies), `score` float32
        (s_best; 0.0 when none), `null` float32 (s_null, the smallest [CLS] score; +inf
        without windows), `start_char`, `end_char` int64 (-1 when none).
    """
    length = tf.shape(start_logits)[1]
    k = tf.minimum(n_best_size, length)
    start_values, starts = tf.math.top_k(start_logits, k)  # ties: lower index first
    end_values, ends = tf.math.top_k(end_logits, k)
    context, max_context = windows["context_mask"], windows["max_context_mask"]
    ok_start = tf.gather(context & max_context, starts, batch_dims=1)  # (windows, k)
    ok_end = tf.gather(context, ends, batch_dims=1)
    i, j = starts[:, :, None], ends[:, None, :]
    valid = ok_start[:, :, None] & ok_end[:, None, :] & (j >= i) & (j - i + 1 <= max_answer_length)
    score = start_values[:, :, None] + end_values[:, None, :]
    valid &= ~tf.math.is_nan(score)
    flat_valid = tf.reshape(valid, [tf.shape(valid)[0], -1])  # (windows, k * k)
    flat_score = tf.where(flat_valid, tf.reshape(score, tf.shape(flat_valid)), -np.inf)
    example = windows["example_index"]
    best = tf.math.unsorted_segment_max(tf.reduce_max(flat_score, axis=1), example, num_examples)
    found = tf.math.unsorted_segment_max(tf.cast(tf.reduce_any(flat_valid, axis=1), tf.int32),
                                         example, num_examples) > 0
    # The first candidate (window, start rank, end rank) reaching the example's best score.
    width = tf.cast(tf.shape(flat_valid)[1], tf.int64)
    key = (tf.range(tf.cast(tf.shape(flat_valid)[0], tf.int64))[:, None] * width
           + tf.range(width)[None, :])
    hit = flat_valid & (flat_score == tf.gather(best, example)[:, None])
    key = tf.math.unsorted_segment_min(tf.reduce_min(tf.where(hit, key, tf.int64.max), axis=1),
                                       example, num_examples)
    key = tf.where(found, key, 0)
    window, rank = key // width, key % width
    k64 = tf.cast(k, tf.int64)
    offsets = windows["offsets"]
    # Examples without a span (or batches without windows) read a padding element.
    at = lambda positions, rank: tf.gather(  # noqa: E731
        tf.concat([tf.reshape(positions, [-1]), [0]], 0),
        tf.where(found, window * k64 + rank, tf.size(positions, out_type=tf.int64)))
    start_pos = tf.cast(at(starts, rank // k64), tf.int64)
    end_pos = tf.cast(at(ends, rank % k64), tf.int64)
    safe = tf.where(found, window, 0)
    windows_n = tf.shape(offsets, out_type=tf.int64)[0]
    char = lambda pos, side: tf.gather_nd(  # noqa: E731
        tf.concat([offsets, -tf.ones([1, tf.shape(offsets)[1], 2], tf.int64)], 0),
        tf.stack([tf.where(found, safe, windows_n), tf.where(found, pos, 0),
                  tf.fill(tf.shape(pos), tf.cast(side, tf.int64))], axis=1))
    null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example,
                                        num_examples)
    has_window = tf.math.unsorted_segment_max(tf.ones_like(example), example, num_examples) > 0
    return {"found": found, "score": tf.where(found, best, 0.0),
            "null": tf.where(has_window, null, np.inf),
            "start_char": tf.where(found, char(start_pos, 0), -1),
            "end_char": tf.where(found, char(end_pos, 1), -1)}


__all__ = ["best_spans", "best_spans_graph", "logits_at_full_length"]
