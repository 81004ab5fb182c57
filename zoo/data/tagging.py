"""Tagging for BERT (CoNLL-2003 NER, your own tagged words): word tags aligned to WordPiece
tokens.

Devlin et al. 2019, section 5.3: "we use the representation of the first sub-token as the input
to the token-level classifier over the NER label set". The tag goes on a word's first
sub-token; the other sub-tokens, [CLS], [SEP] and padding get sample weight 0, so they do not
count in a Keras loss or weighted metric (label 0 there is a placeholder). This is the Keras
form of transformers' label -100 (`ignore_index` of torch's cross-entropy).

A word gets no sub-token when it tokenizes to nothing (a lone soft hyphen, as transformers
also drops it) or when `max_sequence_length` cuts it off; such words have no position in the
labels. `tagging_dataset` counts both, logs a warning on the "zoo.data" logger and keeps the counts
in the dataset's `report`; `word_ids` (opt-in with `with_word_ids=True`) maps each token
position back to its word for evaluation.
"""

import dataclasses
import logging

import numpy as np
import tensorflow as tf

from zoo.data.packing import pack_bert
from zoo.data.pipeline import prefetched

logger = logging.getLogger("zoo.data")


def align_tokens(words, tokenizer, max_sequence_length):
    """WordPiece-tokenize a batch of pre-split sentences and pack `[CLS] tokens [SEP]`.

    Args:
        words: `tf.RaggedTensor` of strings (batch, words).
        tokenizer: WordPiece tokenizer with `cls_token_id`, `sep_token_id`, `pad_token_id`.
        max_sequence_length: packed length; longer sentences are cut (their last words get no
            token).

    Returns:
        dict of (batch, max_sequence_length) int32 `token_ids`, `segment_ids` (zeros),
        `padding_mask` (`zoo.data.packing.pack_bert`'s) and `word_ids` (the index of the word
        each token comes from, -1 for [CLS], [SEP] and padding; transformers' `word_ids()` with
        None as -1), and bool `first_token` (True on each word's first sub-token).

    Examples:
        >>> from zoo.tokenizers import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(
        ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "eu", "rej", "##ects", "call"])
        >>> out = align_tokens(tf.ragged.constant([["EU", "rejects", "call"]]), tokenizer, 8)
        >>> out["token_ids"].numpy().tolist(), out["word_ids"].numpy().tolist()
        ([[2, 5, 6, 7, 8, 3, 0, 0]], [[-1, 0, 1, 1, 2, -1, -1, -1]])
    """
    pieces = tokenizer(words.flat_values)  # (total words, pieces)
    word_in_sentence = tf.ragged.range(words.row_lengths()).flat_values  # (total words,)
    # (total words, pieces) -> (batch, tokens): the pieces of a sentence's words, in order.
    sentence_splits = tf.gather(pieces.row_splits, words.row_splits)

    def per_token(values):
        return tf.RaggedTensor.from_row_splits(values, sentence_splits)

    out = pack_bert(per_token(pieces.flat_values), max_sequence_length, tokenizer.cls_token_id,
                    tokenizer.sep_token_id, tokenizer.pad_token_id)
    # Packed the same way, so they line up with token_ids; [CLS]/[SEP]/padding get -1 and 0.
    word_ids = per_token(tf.gather(word_in_sentence, pieces.value_rowids()))
    out["word_ids"] = pack_bert(word_ids, max_sequence_length, -1, -1, -1)["token_ids"]
    first = per_token(tf.cast(tf.ragged.range(pieces.row_lengths()).flat_values == 0, tf.int32))
    out["first_token"] = pack_bert(first, max_sequence_length, 0, 0, 0)["token_ids"] > 0
    return out


@dataclasses.dataclass
class AlignmentReport:
    """Words of a `tagging_dataset` that got no labelled position (so are absent from `y`)."""

    sentences: int = 0
    words: int = 0
    words_without_tokens: int = 0  # tokenize to nothing (e.g. a lone soft hyphen)
    words_truncated: int = 0  # cut off by max_sequence_length

    @property
    def words_unlabelled(self):
        return self.words_without_tokens + self.words_truncated

    def __str__(self):
        return (f"{self.words_unlabelled} of {self.words} words in {self.sentences} sentences "
                f"have no labelled token: {self.words_without_tokens} tokenize to nothing, "
                f"{self.words_truncated} cut off by max_sequence_length")


def _alignment_report(words, tokenizer, max_sequence_length, chunk=8192):
    flat = [word for sentence in words for word in sentence]
    counts = [tokenizer(tf.constant(flat[k:k + chunk])).row_lengths().numpy()
              for k in range(0, len(flat), chunk)]
    counts = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    report = AlignmentReport(sentences=len(words), words=len(flat))
    room, offset = max_sequence_length - 2, 0  # [CLS] and [SEP]
    for sentence in words:
        pieces = counts[offset:offset + len(sentence)]
        offset += len(sentence)
        before = np.cumsum(pieces) - pieces  # tokens ahead of each word
        report.words_without_tokens += int((pieces == 0).sum())
        report.words_truncated += int(((pieces > 0) & (before >= room)).sum())
    return report


def tagging_dataset(examples, tokenizer, label_names, batch_size, max_sequence_length=128,
                    shuffle_buffer=0, seed=None, drop_remainder=False, with_word_ids=False):
    """A tf.data pipeline of `(x, y, sample_weight)` batches for token classification.

    `x` holds `token_ids`, `segment_ids` (zeros) and `padding_mask`; `y` is (batch, length)
    int32 tag ids on first sub-tokens and 0 elsewhere; `sample_weight` is (batch, length)
    float32, 1 on first sub-tokens, 0 elsewhere. Use
    `SparseCategoricalCrossentropy(reduction="mean_with_sample_weight")` to average over words.
    Predictions of a word are read at its first sub-token, the positions where `sample_weight`
    is 1. Words with no token (they tokenize to nothing, or `max_sequence_length` cuts them off)
    have no such position, so map predictions back to words through `word_ids`
    (`with_word_ids=True`), not by counting positions. Those words are counted in the returned
    dataset's `report` (an `AlignmentReport`) and logged as a warning on the "zoo.data" logger.

    Args:
        examples: dicts `{"words": [...], "tags": [...]}` (CoNLL-2003, one per sentence).
        tokenizer: WordPiece tokenizer (see `align_tokens`).
        label_names: the tag set, index = label id (e.g. `["O", "B-PER", "I-PER", ...]`).
        batch_size: sentences per batch.
        max_sequence_length: packed length (longer sentences are cut).
        shuffle_buffer: sentences in the shuffle buffer (0: keep order, for evaluation).
        seed: shuffle seed.
        drop_remainder: drop a last partial batch.
        with_word_ids: also put `word_ids` in `x` ((batch, length) int32, the word index of
            each token, -1 for [CLS], [SEP] and padding; see `align_tokens`). Off by default,
            as a model's inputs do not include it.

    Examples:
        >>> from zoo.tokenizers import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(
        ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "eu", "rej", "##ects"])
        >>> ds = tagging_dataset([{"words": ["EU", "rejects"], "tags": ["B-ORG", "O"]}],
        ...                      tokenizer, ["O", "B-ORG"], batch_size=8, max_sequence_length=6)
        >>> x, y, sample_weight = next(iter(ds))
        >>> y.numpy().tolist(), sample_weight.numpy().tolist()
        ([[0, 1, 0, 0, 0, 0]], [[0.0, 1.0, 1.0, 0.0, 0.0, 0.0]])
    """
    label_ids = {name: i for i, name in enumerate(label_names)}
    words, tags = [], []
    for index, example in enumerate(examples):
        if len(example["words"]) != len(example["tags"]):
            raise ValueError(f"example {index}: {len(example['words'])} words but "
                             f"{len(example['tags'])} tags")
        unknown = sorted(set(example["tags"]) - set(label_ids))
        if unknown:
            raise ValueError(f"example {index}: tags {unknown} not in label_names {label_names}")
        words.append(list(example["words"]))
        tags.append([label_ids[t] for t in example["tags"]])
    report = _alignment_report(words, tokenizer, max_sequence_length)
    if report.words_unlabelled:
        logger.warning("tagging_dataset: %s", report)
    ds = tf.data.Dataset.from_tensor_slices((
        tf.ragged.constant(words, dtype=tf.string, row_splits_dtype=tf.int64),
        tf.ragged.constant(tags, dtype=tf.int32, row_splits_dtype=tf.int64)))
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)

    @tf.autograph.experimental.do_not_convert  # TF ops only: AutoGraph would only add tracing time
    def prepare(words, tags):
        aligned = align_tokens(words, tokenizer, max_sequence_length)
        word_ids = aligned["word_ids"]
        # Tag of each token's word; word id -1 ([CLS]/[SEP]/padding) reads column 0 (a tag, or
        # the padding column added for a batch of empty sentences) and gets weight 0.
        tags = tf.pad(tags.to_tensor(), [[0, 0], [0, 1]])
        token_tags = tf.gather(tags, tf.maximum(word_ids, 0), batch_dims=1)
        weights = tf.cast(aligned["first_token"], tf.float32)
        keys = ("token_ids", "segment_ids", "padding_mask") + (("word_ids",) * with_word_ids)
        x = {key: aligned[key] for key in keys}
        return x, token_tags * tf.cast(aligned["first_token"], tf.int32), weights

    ds = ds.ragged_batch(batch_size, drop_remainder=drop_remainder)
    ds = prefetched(ds.map(prepare, num_parallel_calls=tf.data.AUTOTUNE))
    ds.report = report
    return ds


# Deprecated: the former name of `tagging_dataset` (CHANGELOG).
ner_dataset = tagging_dataset
