"""Pack token ids into model inputs: BERT `[CLS] A [SEP] B [SEP]`, GPT-1 input transformations.

All functions are TF ops (tensorflow-text trimmers), so they run in tf.data and in a SavedModel.
Segments are (batch, None) ragged int tensors (a dense tensor is taken as is, padding included)
or, for one example, 1-D tensors; outputs are dense (batch, sequence_length) int32 — or
(sequence_length,) for one example — under the fixed names `token_ids`, `segment_ids` (BERT only)
and `padding_mask` (1 for real tokens).

Truncation: when segments do not fit, tokens are removed from the end of the longest segment,
one at a time (ties: the later segment) — BERT's `_truncate_seq_pair` (google-research/bert
`run_classifier.py`), generalized to any number of segments. tensorflow-text's
`RoundRobinTrimmer` keeps exactly those tokens: it hands out the budget one token per segment in
turn, which leaves the same lengths.
"""

import tensorflow as tf
import tensorflow_text as tf_text


def pack_bert(segments, sequence_length, cls_token_id, sep_token_id, pad_token_id=0):
    """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` with segment ids 0 for `[CLS] A [SEP]`, 1 after.

    Devlin et al. 2019, section 3 / figure 2.

    Args:
        segments: one segment, or a tuple of segments (two for sentence pairs).
        sequence_length: output length; segments are truncated to fit with the special tokens.
        cls_token_id, sep_token_id, pad_token_id: special token ids (the tokenizer's
            `cls_token_id`, ...).

    Returns:
        dict of int32 `token_ids`, `segment_ids`, `padding_mask`.

    Examples:
        >>> out = pack_bert((tf.ragged.constant([[5, 6, 7]]), tf.ragged.constant([[8, 9]])),
        ...                 sequence_length=8, cls_token_id=101, sep_token_id=102)
        >>> out["token_ids"].numpy().tolist(), out["segment_ids"].numpy().tolist()
        ([[101, 5, 6, 7, 102, 8, 9, 102]], [[0, 0, 0, 0, 0, 1, 1, 1]])
    """
    return _pack(segments, sequence_length, cls_token_id, sep_token_id, sep_token_id,
                 pad_token_id, with_segment_ids=True)


def pack_gpt_classification(text, sequence_length, start_token_id, extract_token_id,
                            pad_token_id=0):
    """GPT-1 classification input `[start; text; extract]` (Radford et al. 2018, section 3.3).

    Returns:
        dict of int32 `token_ids` and `padding_mask`; the classifier reads the hidden state of
        the extract token, the last real position.

    Examples:
        >>> out = pack_gpt_classification(tf.ragged.constant([[5, 6, 7]]), 6, 40478, 40480)
        >>> out["token_ids"].numpy().tolist()
        [[40478, 5, 6, 7, 40480, 0]]
    """
    return _pack(text, sequence_length, start_token_id, None, extract_token_id, pad_token_id)


def pack_gpt_entailment(premise, hypothesis, sequence_length, start_token_id, delimiter_token_id,
                        extract_token_id, pad_token_id=0):
    """GPT-1 entailment input `[start; premise; delim; hypothesis; extract]` (section 3.3).

    Examples:
        >>> out = pack_gpt_entailment(tf.ragged.constant([[5, 6]]), tf.ragged.constant([[7]]),
        ...                           6, 40478, 40479, 40480)
        >>> out["token_ids"].numpy().tolist()
        [[40478, 5, 6, 40479, 7, 40480]]
    """
    return _pack((premise, hypothesis), sequence_length, start_token_id, delimiter_token_id,
                 extract_token_id, pad_token_id)


def pack_gpt_similarity(first, second, sequence_length, start_token_id, delimiter_token_id,
                        extract_token_id, pad_token_id=0):
    """GPT-1 similarity input: both orders, `[start; A; delim; B; extract]` and `[... B ... A ...]`.

    Section 3.3: there is no inherent order between the two sentences, so both orderings are
    processed and their final representations added before the output layer.

    Returns:
        dict of int32 `token_ids` and `padding_mask`, each (batch, 2, sequence_length).

    Examples:
        >>> out = pack_gpt_similarity(tf.ragged.constant([[5]]), tf.ragged.constant([[7, 8]]),
        ...                           6, 1, 2, 3)
        >>> out["token_ids"].numpy().tolist()
        [[[1, 5, 2, 7, 8, 3], [1, 7, 8, 2, 5, 3]]]
    """
    orders = [_pack((a, b), sequence_length, start_token_id, delimiter_token_id,
                    extract_token_id, pad_token_id) for a, b in ((first, second), (second, first))]
    return _stack(orders)


def pack_gpt_multiple_choice(context, choices, sequence_length, start_token_id,
                             delimiter_token_id, extract_token_id, pad_token_id=0):
    """GPT-1 multiple-choice input: `[start; context; delim; answer_k; extract]` for every k.

    Section 3.3: the context (document and question) is concatenated with each possible answer;
    each sequence is processed independently and the scores normalized with a softmax.

    Args:
        context: the context segment (document and question already concatenated).
        choices: a list of answer segments, one per choice, all with the same batch size.

    Returns:
        dict of int32 `token_ids` and `padding_mask`, each (batch, num_choices, sequence_length).

    Examples:
        >>> out = pack_gpt_multiple_choice(
        ...     tf.ragged.constant([[5, 6]]), [tf.ragged.constant([[7]]),
        ...                                    tf.ragged.constant([[8, 9]])], 6, 1, 2, 3)
        >>> out["token_ids"].numpy().tolist()
        [[[1, 5, 6, 2, 7, 3], [1, 5, 6, 2, 8, 3]]]
    """
    if not choices:
        raise ValueError("pack_gpt_multiple_choice: `choices` is empty")
    return _per_choice(context, choices, lambda c, choice: _pack(
        (c, choice), sequence_length, start_token_id, delimiter_token_id, extract_token_id,
        pad_token_id))


def pack_bert_multiple_choice(context, choices, sequence_length, cls_token_id, sep_token_id,
                              pad_token_id=0):
    """BERT multiple-choice input: `[CLS] context [SEP] choice_k [SEP]` for every k.

    BERT section 4.4 (SWAG): one sequence per choice, sentence A the context, sentence B the
    choice. The context is truncated first, from its end, so each choice is kept whole (the
    `truncation="only_first"` of transformers' tokenizers); a choice longer than the whole
    budget is cut from its end.

    Args:
        context: the context segment, (batch, None) ragged ids.
        choices: a list of choice segments (question and answer), one per choice.

    Returns:
        dict of int32 `token_ids`, `segment_ids`, `padding_mask`, each (batch, num_choices,
        sequence_length).

    Examples:
        >>> out = pack_bert_multiple_choice(
        ...     tf.ragged.constant([[5, 6, 7]]), [tf.ragged.constant([[8]]),
        ...                                       tf.ragged.constant([[8, 9]])], 7, 101, 102)
        >>> out["token_ids"].numpy().tolist()
        [[[101, 5, 6, 7, 102, 8, 102], [101, 5, 6, 102, 8, 9, 102]]]
    """
    if not choices:
        raise ValueError("pack_bert_multiple_choice: `choices` is empty")
    budget = sequence_length - 3  # [CLS], [SEP], [SEP]
    if budget < 0:
        raise ValueError(f"sequence_length={sequence_length} cannot hold the 3 special tokens")

    def pack(context, choice):
        keep = tf.maximum(budget - tf.cast(choice.row_lengths(), tf.int32), 0)  # (batch,)
        positions = tf.ragged.range(tf.cast(context.row_lengths(), tf.int32))
        kept = tf.ragged.boolean_mask(context, positions < keep[:, tf.newaxis])
        return pack_bert((kept, choice), sequence_length, cls_token_id, sep_token_id,
                         pad_token_id)

    return _per_choice(context, choices, pack)


def trim_padding(inputs, multiple):
    """Cut packed inputs to the batch's longest sequence, rounded up to `multiple` tokens.

    Dynamic padding: a batch of short sentences need not carry `sequence_length` positions.
    Rounding to a bucket boundary bounds the number of distinct shapes (and so of traced or
    XLA-compiled functions) by `sequence_length / multiple`. Real tokens are a prefix of each
    row (as every packer here writes them), so the cut removes padding only, and a model with
    a padding mask gives the same outputs on the real positions.

    Args:
        inputs: dict of packed tensors (..., sequence_length) with a `padding_mask`.
        multiple: the bucket width in tokens; 0 or None returns `inputs` unchanged.

    Examples:
        >>> x = pack_bert(tf.ragged.constant([[5, 6, 7]]), 16, 101, 102)
        >>> {k: v.shape.as_list() for k, v in trim_padding(x, 4).items()}
        {'token_ids': [1, 8], 'segment_ids': [1, 8], 'padding_mask': [1, 8]}
    """
    if not multiple:
        return inputs
    mask = inputs["padding_mask"]
    full = tf.shape(mask)[-1]
    longest = tf.reduce_max(tf.concat([tf.reshape(tf.reduce_sum(tf.cast(mask, tf.int32), -1),
                                                  [-1]), [1]], axis=0))
    length = tf.minimum(full, (longest + multiple - 1) // multiple * multiple)
    return {key: value[..., :length] for key, value in inputs.items()}


def _pack(segments, sequence_length, start_id, separator_id, end_id, pad_id,
          with_segment_ids=False):
    """start + segment_0 + separator + segment_1 ... + end, truncated, padded to the length."""
    if not isinstance(segments, tuple):
        segments = (segments,)
    segments = [tf.RaggedTensor.from_tensor(s) if not isinstance(s, tf.RaggedTensor)
                and s.shape.rank == 2 else s for s in map(_as_ids, segments)]
    unbatched = segments[0].shape.rank == 1
    if unbatched:
        segments = [tf.RaggedTensor.from_tensor(s[tf.newaxis]) for s in segments]
    budget = sequence_length - len(segments) - 1  # start, separators, end
    if budget < 0:
        raise ValueError(f"sequence_length={sequence_length} cannot hold the {len(segments) + 1} "
                         "special tokens")
    segments = tf_text.RoundRobinTrimmer(budget).trim(segments)
    batch = segments[0].nrows()

    def column(value):
        return tf.RaggedTensor.from_tensor(tf.fill(tf.stack([batch, 1]),
                                                   tf.constant(value, tf.int32)))

    pieces, ids = [column(start_id)], [column(0)]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        pieces += [segment, column(end_id if last else separator_id)]
        ids += [tf.zeros_like(segment) + i, column(i)]
    token_ids = tf.concat(pieces, axis=1)
    shape = [None, sequence_length]
    out = {"token_ids": token_ids.to_tensor(pad_id, shape=shape)}
    if with_segment_ids:
        out["segment_ids"] = tf.concat(ids, axis=1).to_tensor(0, shape=shape)
    out["padding_mask"] = tf.ones_like(token_ids).to_tensor(0, shape=shape)
    if unbatched:
        out = {key: value[0] for key, value in out.items()}
    return out


def _as_ids(segment):
    if isinstance(segment, tf.RaggedTensor):
        if segment.shape.rank != 2:
            raise ValueError(f"segments must be (batch, None) ids, got a ragged tensor of rank "
                             f"{segment.shape.rank}")
        return tf.cast(segment, tf.int32)
    segment = tf.convert_to_tensor(segment)
    if segment.shape.rank not in (1, 2):
        raise ValueError(f"segments must be (batch, None) or (None,) ids, got shape "
                         f"{segment.shape}")
    return tf.cast(segment, tf.int32)


def _ragged(segment):
    """(batch, None) ragged int32 ids of a ragged or dense (batch, n) segment."""
    segment = _as_ids(segment)
    if isinstance(segment, tf.RaggedTensor):
        return segment
    if segment.shape.rank != 2:
        raise ValueError(f"segments must be batched, (batch, None) ids; got {segment.shape}")
    return tf.RaggedTensor.from_tensor(segment)


def _per_choice(context, choices, pack):
    """`pack(context, choice_k)` for every choice k, as (batch, k, ...) tensors.

    One call on the k copies of the batch, one after the other (rows k * batch ... of choice
    k): the packing graph is built once, not k times (less tracing time), and runs as one
    larger batch. Unbatched
    (1-D) segments are packed as a batch of one.
    """
    unbatched = _as_ids(context).shape.rank == 1
    if unbatched:
        context, choices = context[tf.newaxis], [choice[tf.newaxis] for choice in choices]
    context, choices = _ragged(context), [_ragged(choice) for choice in choices]
    k, batch = len(choices), context.nrows(out_type=tf.int32)
    packed = pack(tf.concat([context] * k, axis=0), tf.concat(choices, axis=0))
    out = {}
    for key, value in packed.items():  # (k * batch, length) -> (batch, k, length)
        value = tf.reshape(value, tf.concat([[k, batch], tf.shape(value)[1:]], axis=0))
        value = tf.transpose(value, [1, 0, 2])
        out[key] = value[0] if unbatched else value
    return out


def _stack(outputs):
    """Stack per-sequence outputs on a new axis after the batch axis."""
    axis = 1 if outputs[0]["token_ids"].shape.rank == 2 else 0
    return {key: tf.stack([out[key] for out in outputs], axis=axis) for key in outputs[0]}
