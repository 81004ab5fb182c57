"""Packing: BERT `[CLS] A [SEP] B [SEP]` and GPT-1 input transformations, against plain-Python
references, including BERT's `_truncate_seq_pair` rule re-implemented here independently."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zoo.data import packing

CLS, SEP, PAD = 101, 102, 0
START, DELIM, EXTRACT = 40478, 40479, 40480


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """google-research/bert run_classifier.py: pop from the longer list until the pair fits."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b)
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()
    return tokens_a, tokens_b


def reference(a, b, length, start, separator, end, segment_ids=False):
    """[start] a [separator] b [end] (or [start] a [end]), truncated and padded."""
    if b is None:
        tokens, ids = [start] + list(a[:length - 2]) + [end], None
        ids = [0] * len(tokens)
    else:
        a, b = truncate_seq_pair(a, b, length - 3)
        tokens = [start] + a + [separator] + b + [end]
        ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    pad = length - len(tokens)
    out = {"token_ids": tokens + [PAD] * pad, "padding_mask": [1] * len(tokens) + [0] * pad}
    if segment_ids:
        out["segment_ids"] = ids + [0] * pad
    return out


def as_lists(outputs):
    return {key: value.numpy().tolist() for key, value in outputs.items()}


def ragged(rows):
    return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1) if rows else \
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64))


segments = st.lists(st.integers(1, 30000), max_size=25)
batches = st.lists(st.tuples(segments, segments), min_size=1, max_size=6)
PACKING = settings(max_examples=60, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow])


@PACKING
@given(batch=batches, length=st.integers(3, 40))
def test_bert_pair_matches_truncate_seq_pair(batch, length):
    out = as_lists(packing.pack_bert((ragged([a for a, _ in batch]), ragged([b for _, b in batch])),
                                     length, CLS, SEP, PAD))
    expected = [reference(a, b, length, CLS, SEP, SEP, segment_ids=True) for a, b in batch]
    assert out == {key: [e[key] for e in expected] for key in out}


@PACKING
@given(batch=batches, length=st.integers(2, 40))
def test_bert_single_segment(batch, length):
    out = as_lists(packing.pack_bert(ragged([a for a, _ in batch]), length, CLS, SEP, PAD))
    expected = [reference(a, None, length, CLS, SEP, SEP, segment_ids=True) for a, _ in batch]
    assert out == {key: [e[key] for e in expected] for key in out}


@settings(PACKING, max_examples=20)
@given(batch=batches, length=st.integers(3, 40))
def test_gpt_transformations(batch, length):
    first, second = ragged([a for a, _ in batch]), ragged([b for _, b in batch])
    ids = (START, DELIM, EXTRACT)

    def expect(pairs, **kw):
        refs = [reference(a, b, length, START, DELIM, EXTRACT, **kw) for a, b in pairs]
        return {key: [r[key] for r in refs] for key in refs[0]}

    assert as_lists(packing.pack_gpt_classification(first, length, START, EXTRACT)) == expect(
        [(a, None) for a, _ in batch])
    assert as_lists(packing.pack_gpt_entailment(first, second, length, *ids)) == expect(batch)
    similarity = as_lists(packing.pack_gpt_similarity(first, second, length, *ids))
    forward, backward = expect(batch), expect([(b, a) for a, b in batch])
    assert similarity == {key: [list(pair) for pair in zip(forward[key], backward[key])]
                          for key in forward}
    choices = as_lists(packing.pack_gpt_multiple_choice(first, [second, first], length, *ids))
    with_second, with_first = expect(batch), expect([(a, a) for a, _ in batch])
    assert choices == {key: [list(pair) for pair in zip(with_second[key], with_first[key])]
                       for key in with_second}


def test_truncation_ties_shorten_the_second_segment():
    """Equal lengths over budget: BERT pops from B first, so A keeps the odd token."""
    a, b = list(range(1, 11)), list(range(11, 21))
    out = as_lists(packing.pack_bert((tf.constant(a), tf.constant(b)), 8, CLS, SEP))
    assert out["token_ids"] == [CLS, 1, 2, 3, SEP, 11, 12, SEP]
    assert reference(a, b, 8, CLS, SEP, SEP)["token_ids"] == out["token_ids"]


def test_unbatched_dense_and_tf_data():
    one = as_lists(packing.pack_bert((tf.constant([5, 6, 7]), tf.constant([8])), 6, CLS, SEP))
    assert one == {"token_ids": [CLS, 5, 6, SEP, 8, SEP], "segment_ids": [0, 0, 0, 0, 1, 1],
                   "padding_mask": [1] * 6}
    dense = as_lists(packing.pack_bert(tf.constant([[5, 6], [7, 8]]), 5, CLS, SEP))
    assert dense["token_ids"] == [[CLS, 5, 6, SEP, PAD], [CLS, 7, 8, SEP, PAD]]
    rows = tf.ragged.constant([[1, 2, 3], [4], []])
    dataset = tf.data.Dataset.from_tensor_slices((rows, rows)).map(
        lambda a, b: packing.pack_gpt_entailment(a, b, 6, START, DELIM, EXTRACT))
    batched = tf.data.Dataset.from_tensor_slices((rows, rows)).batch(3).map(
        lambda a, b: packing.pack_gpt_entailment(a, b, 6, START, DELIM, EXTRACT))
    per_example = [as_lists(x) for x in dataset]
    whole = as_lists(next(iter(batched)))
    assert [x["token_ids"] for x in per_example] == whole["token_ids"]
    assert whole["token_ids"][0] == [START, 1, 2, DELIM, 1, EXTRACT]
    np.testing.assert_array_equal(whole["padding_mask"][2], [1, 1, 1, 0, 0, 0])


def test_tokenizer_to_packer_in_graph():
    from zoo.tokenizers import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    def preprocess(first, second):
        return packing.pack_bert((tokenizer(first), tokenizer(second)), 8,
                                 tokenizer.cls_token_id, tokenizer.sep_token_id,
                                 tokenizer.pad_token_id)

    out = as_lists(preprocess(tf.constant(["a b c a b c"]), tf.constant(["C"])))
    assert out["token_ids"] == [[2, 5, 6, 7, 5, 3, 7, 3]]
    assert out["segment_ids"] == [[0, 0, 0, 0, 0, 0, 1, 1]]


def test_errors():
    with pytest.raises(ValueError, match="sequence_length=2 cannot hold the 3 special tokens"):
        packing.pack_bert((tf.constant([1]), tf.constant([2])), 2, CLS, SEP)
    with pytest.raises(ValueError, match="choices"):
        packing.pack_gpt_multiple_choice(tf.constant([1]), [], 5, START, DELIM, EXTRACT)
    with pytest.raises(ValueError, match="ragged tensor of rank 3"):
        packing.pack_bert(tf.ragged.constant([[[1]]]), 5, CLS, SEP)
