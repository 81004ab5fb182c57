"""Span question answering for BERT: doc-stride windows of SQuAD-format questions and their
answer spans in tokens.

Devlin et al. 2019, section 4.2 (SQuAD v1.1) and 4.3 (v2.0): the input is
`[CLS] question [SEP] context [SEP]`; for v2.0 an unanswerable question has its start and end
at [CLS]. Contexts longer than the window are cut as in the original `run_squad.py`
(google-research/bert, `convert_examples_to_features`): windows of at most
`max_sequence_length - len(question) - 3` context tokens, each starting `doc_stride` tokens
after the previous one, the last one ending at the end of the context. A window that does not
contain the whole answer is labelled like an unanswerable one (start = end = 0), also for
answerable questions, as in `run_squad.py`.

Answers are mapped through the tokenizer's character offsets (the tokens overlapping the
answer's characters) instead of `run_squad.py`'s whitespace words + `_improve_answer_span`;
both give the smallest token span covering the answer.
"""

import numpy as np
import tensorflow as tf

from zoo.data.pipeline import prefetched

_CHUNK = 1024  # texts per tokenizer call


def _tokenize(tokenizer, texts, with_offsets=False):
    """Token ids (and character offsets) of each text as numpy arrays, in chunks of texts."""
    out = []
    for k in range(0, len(texts), _CHUNK):
        batch = tf.constant(texts[k:k + _CHUNK])
        if with_offsets:
            parts = tokenizer.tokenize_with_offsets(batch)
        else:
            parts = (tokenizer(batch),)
        splits = parts[0].row_splits.numpy()
        values = [p.flat_values.numpy() for p in parts]
        for i in range(len(splits) - 1):
            row = tuple(v[splits[i]:splits[i + 1]] for v in values)
            out.append(row if with_offsets else row[0])
    return out


def _answer_chars(example, where):
    """[start, end) characters of the first answer in the context, or None if unanswerable."""
    if example.get("is_impossible") or not example["answers"]:
        return None
    answer = example["answers"][0]
    start = int(answer["answer_start"])
    end = start + len(answer["text"])
    if end > len(example["context"]):
        raise ValueError(f"{where}: answer {answer['text']!r} at character {start} runs past the "
                         f"end of its context ({len(example['context'])} characters)")
    return start, end


def _window_starts(num_tokens, window, doc_stride):
    # run_squad.py: advance by `doc_stride` until a window reaches the end of the context.
    starts = [0]
    while starts[-1] + window < num_tokens:
        starts.append(starts[-1] + min(window, doc_stride))
    return starts


def span_qa_windows(examples, tokenizer, max_sequence_length=384, doc_stride=128,
                    max_query_length=64):
    """Cut SQuAD examples into doc-stride windows with token-level answer spans.

    Args:
        examples: dicts `{"id", "question", "context", "answers": [{"text", "answer_start"}],
            "is_impossible" (optional)}`; `answer_start` counts characters of `context`. Only
            the first answer is used for labels (the training convention); no answers or
            `is_impossible` means unanswerable. Raises ValueError (naming the example id) for a
            context with no tokens or an answer that overlaps no context token.
        tokenizer: WordPiece tokenizer with `tokenize_with_offsets` (character offsets into
            the original strings) and `cls_token_id`, `sep_token_id`, `pad_token_id`.
        max_sequence_length: window length in tokens (384 in `run_squad.py`'s README).
        doc_stride: tokens between the starts of consecutive windows (128, `run_squad.py`).
        max_query_length: questions are cut to this many tokens (64, `run_squad.py`).

    Returns:
        dict of numpy arrays, one row per window, in example order:
        `token_ids`, `segment_ids`, `padding_mask` (windows, max_sequence_length) int32;
        `start_positions`, `end_positions` (windows,) int32, 0 = [CLS] = no answer here;
        `example_index` (windows,) int32 into `examples`; `example_id` (windows,) object;
        `offsets` (windows, max_sequence_length, 2) int32, each context token's [start, end)
        characters in its context, -1 elsewhere; `context_mask` (windows, max_sequence_length)
        bool, True on context tokens; `max_context_mask`, True where this window gives the token
        its most context (`run_squad.py` `_check_is_max_context`; post-processing takes answer
        starts only there).

    Examples:
        >>> from zoo.tokenizers import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(
        ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "?", "ann", "did", "."])
        >>> example = {"id": "q1", "question": "Who?", "context": "Ann did.",
        ...            "answers": [{"text": "Ann", "answer_start": 0}]}
        >>> windows = span_qa_windows([example], tokenizer, 16)
        >>> windows["token_ids"][0, :7].tolist(), windows["start_positions"].tolist()
        ([2, 5, 6, 3, 7, 8, 9], [4])
    """
    examples = list(examples)
    length = max_sequence_length
    cls, sep, pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    questions = _tokenize(tokenizer, [e["question"] for e in examples])
    # Many questions share a context: tokenize each distinct context once.
    unique = {c: k for k, c in enumerate(dict.fromkeys(e["context"] for e in examples))}
    contexts = _tokenize(tokenizer, list(unique), with_offsets=True)

    rows = {key: [] for key in ("token_ids", "segment_ids", "start_positions", "end_positions",
                                "example_index", "offsets", "max_context_mask")}
    for index, example in enumerate(examples):
        where = f"example {index} (id {example.get('id')!r})"
        question = questions[index][:max_query_length]
        ids, starts, ends = contexts[unique[example["context"]]]
        window = length - len(question) - 3
        if window < 1:
            raise ValueError(f"{where}: max_sequence_length={length} leaves no room for context "
                             f"after a {len(question)}-token question")
        if not len(ids):
            # run_squad.py makes no feature for such a context; do not invent a window.
            raise ValueError(f"{where}: the context tokenizes to no tokens")
        answer = _answer_chars(example, where)
        if answer is not None:
            inside = np.flatnonzero((ends > answer[0]) & (starts < answer[1]))
            if not len(inside):
                # run_squad.py logs "Could not find answer" and skips the example; relabelling
                # it as unanswerable would be silently wrong.
                raise ValueError(f"{where}: answer {example['answers'][0]['text']!r} at "
                                 f"character {answer[0]} overlaps no context token")
            answer = (inside[0], inside[-1])

        window_starts = _window_starts(len(ids), window, doc_stride)
        spans = [(s, min(window, len(ids) - s)) for s in window_starts]
        # A token's best window maximises min(left, right context) + 0.01 * window length;
        # the first such window wins (`_check_is_max_context`).
        position = np.arange(len(ids))[:, None]
        span_start = np.array([s for s, _ in spans])[None, :]
        span_length = np.array([n for _, n in spans])[None, :]
        left, right = position - span_start, span_start + span_length - 1 - position
        score = np.where((left >= 0) & (right >= 0),
                         np.minimum(left, right) + 0.01 * span_length, -np.inf)
        best_window = score.argmax(axis=1)

        prefix = len(question) + 2  # [CLS] question [SEP]
        for w, (s, n) in enumerate(spans):
            rows["token_ids"].append([cls, *question, sep, *ids[s:s + n], sep])
            rows["segment_ids"].append([0] * prefix + [1] * (n + 1))
            offsets = np.full((length, 2), -1, np.int32)
            offsets[prefix:prefix + n] = np.stack([starts[s:s + n], ends[s:s + n]], axis=1)
            rows["offsets"].append(offsets)
            max_context = np.zeros(length, bool)
            max_context[prefix:prefix + n] = best_window[s:s + n] == w
            rows["max_context_mask"].append(max_context)
            if answer is not None and s <= answer[0] and answer[1] < s + n:
                rows["start_positions"].append(answer[0] - s + prefix)
                rows["end_positions"].append(answer[1] - s + prefix)
            else:
                rows["start_positions"].append(0)
                rows["end_positions"].append(0)
            rows["example_index"].append(index)

    def padded(sequences, value):
        out = np.full((len(sequences), length), value, np.int32)
        for i, seq in enumerate(sequences):
            out[i, :len(seq)] = seq
        return out

    token_ids = padded(rows["token_ids"], pad)
    offsets = np.stack(rows["offsets"]) if rows["offsets"] else np.zeros((0, length, 2), np.int32)
    example_index = np.array(rows["example_index"], np.int32)
    return {
        "token_ids": token_ids,
        "segment_ids": padded(rows["segment_ids"], 0),
        "padding_mask": padded([[1] * len(t) for t in rows["token_ids"]], 0),
        "start_positions": np.array(rows["start_positions"], np.int32),
        "end_positions": np.array(rows["end_positions"], np.int32),
        "example_index": example_index,
        "example_id": np.array([examples[i].get("id") for i in example_index], object),
        "offsets": offsets,
        "context_mask": offsets[..., 0] >= 0,
        "max_context_mask": np.array(rows["max_context_mask"], bool).reshape(-1, length),
    }


def span_qa_dataset(windows, batch_size, shuffle_buffer=0, seed=None, drop_remainder=False):
    """A tf.data pipeline of `(x, y)` batches from `span_qa_windows` output, for `fit`/`predict`.

    `x` holds `token_ids`, `segment_ids`, `padding_mask`; `y` holds `start_positions` and
    `end_positions` (token indices in the window, 0 = [CLS]). Without shuffling, batches keep
    window order, so predictions line up with `windows["example_index"]` and `offsets`.

    Args:
        windows: the dict returned by `span_qa_windows`.
        batch_size: windows per batch.
        shuffle_buffer: windows in the shuffle buffer (0: keep order, for evaluation).
        seed: shuffle seed.
        drop_remainder: drop a last partial batch.

    Examples:
        >>> ds = span_qa_dataset(windows, batch_size=32, shuffle_buffer=10_000)  # doctest: +SKIP
    """
    x = {key: windows[key] for key in ("token_ids", "segment_ids", "padding_mask")}
    y = {key: windows[key] for key in ("start_positions", "end_positions")}
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    return prefetched(ds.batch(batch_size, drop_remainder=drop_remainder))


def span_qa_windows_graph(question_ids, context_ids, context_starts, context_ends,
                          max_sequence_length, doc_stride, max_query_length, cls_id, sep_id,
                          pad_id):
    """`span_qa_windows` as TensorFlow ops, for serving: the same windows from tokenized text.

    The windows, their packing and the max-context rule are those of `span_qa_windows`; there
    are no labels. An example whose context has no tokens, or whose (cut) question leaves no
    room for context, gets no window (`span_qa_windows` raises for both).

    Args:
        question_ids: (batch, None) ragged token ids of the questions.
        context_ids, context_starts, context_ends: (batch, None) ragged token ids and
            [start, end) character offsets of the contexts.
        max_sequence_length, doc_stride, max_query_length: Python ints, as in `span_qa_windows`.
        cls_id, sep_id, pad_id: the special token ids.

    Returns:
        dict of tensors, one row per window, windows of one example consecutive and in order:
        `token_ids`, `segment_ids`, `padding_mask` (windows, length) int32; `example_index`
        (windows,) int32; `offsets` (windows, length, 2) int64 (-1 outside the context);
        `context_mask`, `max_context_mask` (windows, length) bool.
    """
    length = max_sequence_length
    question_ids = question_ids[:, :max_query_length]
    q = tf.cast(question_ids.row_lengths(), tf.int64)  # (batch,)
    n = tf.cast(context_ids.row_lengths(), tf.int64)
    window = length - q - 3
    step = tf.maximum(tf.minimum(window, doc_stride), 1)
    # _window_starts: windows at 0, step, 2 step, ... until one reaches the end of the context.
    count = tf.where(n <= window, tf.ones_like(n), (n - window + step - 1) // step + 1)
    count = tf.where((n > 0) & (window >= 1), count, tf.zeros_like(n))
    example = tf.repeat(tf.range(tf.size(n, out_type=tf.int64)), count)  # (windows,)
    first_window = tf.cumsum(count, exclusive=True)
    k = tf.range(tf.size(example, out_type=tf.int64)) - tf.gather(first_window, example)
    q_w, n_w, window_w = (tf.gather(t, example)[:, None] for t in (q, n, window))
    s = k[:, None] * tf.gather(step, example)[:, None]  # (windows, 1) first context token
    m = tf.minimum(window_w, n_w - s)  # context tokens in the window

    j = tf.range(length, dtype=tf.int64)[None, :]  # position in the window
    in_question = (j >= 1) & (j <= q_w)
    in_context = (j >= q_w + 2) & (j < q_w + 2 + m)
    used = j <= q_w + 2 + m  # up to the final [SEP]
    p = s + j - q_w - 2  # context token index within the example, where in_context

    def take(ragged, index, mask, fill):
        # Gather ragged values of each window's example at `index` where `mask` (clipped
        # elsewhere, so empty inputs never index out of range).
        values = tf.concat([ragged.flat_values, tf.zeros([1], ragged.flat_values.dtype)], 0)
        flat = tf.gather(tf.cast(ragged.row_splits, tf.int64), example)[:, None] + index
        flat = tf.where(mask, flat, tf.cast(tf.size(values) - 1, tf.int64))
        return tf.where(mask, tf.gather(values, flat), tf.cast(fill, values.dtype))

    token_ids = tf.where(j == 0, cls_id, tf.where(
        (j == q_w + 1) | (j == q_w + 2 + m), sep_id, pad_id))
    token_ids = tf.where(in_question, take(question_ids, j - 1, in_question, 0),
                         tf.cast(token_ids, question_ids.dtype))
    token_ids = tf.where(in_context, take(context_ids, p, in_context, 0),
                         tf.cast(token_ids, question_ids.dtype))
    starts = take(context_starts, p, in_context, -1)
    ends = take(context_ends, p, in_context, -1)
    offsets = tf.cast(tf.stack([starts, ends], axis=-1), tf.int64)

    # _check_is_max_context: a token's best window maximises min(left, right) + 0.01 * window
    # length (float64, as numpy computes it); the first such window wins.
    score = (tf.cast(tf.minimum(p - s, s + m - 1 - p), tf.float64)
             + 0.01 * tf.cast(m, tf.float64))
    token = tf.gather(tf.cast(context_ids.row_splits, tf.int64), example)[:, None] + p
    tokens = tf.cast(tf.size(context_ids.flat_values), tf.int64) + 1  # + 1: a dump segment
    token = tf.where(in_context, token, tokens - 1)
    best = tf.math.unsorted_segment_max(tf.reshape(score, [-1]), tf.reshape(token, [-1]),
                                        tokens)
    is_best = in_context & (score == tf.gather(best, token))
    rows = tf.broadcast_to(tf.range(tf.size(example, out_type=tf.int64))[:, None],
                           tf.shape(token))
    first = tf.math.unsorted_segment_min(
        tf.reshape(tf.where(is_best, rows, tf.int64.max), [-1]), tf.reshape(token, [-1]),
        tokens)
    max_context = in_context & (tf.gather(first, token) == rows)
    return {
        "token_ids": tf.cast(token_ids, tf.int32),
        "segment_ids": tf.cast(in_context | (j == q_w + 2 + m), tf.int32),
        "padding_mask": tf.cast(used, tf.int32),
        "example_index": tf.cast(example, tf.int32),
        "offsets": offsets,
        "context_mask": in_context,
        "max_context_mask": max_context,
    }


# Deprecated: the former names of `span_qa_windows`, `span_qa_dataset` and
# `span_qa_windows_graph` (CHANGELOG).
squad_windows = span_qa_windows
squad_dataset = span_qa_dataset
squad_windows_graph = span_qa_windows_graph
