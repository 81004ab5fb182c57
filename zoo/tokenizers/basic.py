"""BERT's BasicTokenizer as TF ops: normalize and split text into words, keeping character offsets.

The character tables come from `zoo.tokenizers.unicode`; here they become constant tensors and
are applied with `tf.searchsorted` (class ranges) and `tf.gather` (multi-character mappings), so
the whole thing runs in tf.data and in a SavedModel.
"""

import collections

import numpy as np
import tensorflow as tf

from zoo.tokenizers import unicode

# Flat description of the words of a batch of texts (W words, C normalized characters):
#   text_splits (B + 1,) int64: words of text b are words[text_splits[b]:text_splits[b + 1]]
#   char_splits (W + 1,) int64: characters of word w are chars[char_splits[w]:char_splits[w + 1]]
#   chars       (C,) int32: normalized code points
#   sources     (C,) int64: index of the original character (within its text) each came from
Words = collections.namedtuple("Words", "text_splits char_splits chars sources")

# A code point beyond Unicode terminates the mapping keys so that tf.searchsorted never runs off
# the end (real code points are always smaller).
_SENTINEL = unicode.MAX_CODE_POINT + 1


def _lookup(starts, classes, code_points):
    """Class of each code point from run-length encoded (starts, classes) tables."""
    return tf.gather(classes, tf.searchsorted(starts, code_points, side="right") - 1)


def _shift_right(x, fill):
    return tf.concat([tf.fill([1], fill), x], axis=0)[:-1]


def utf8_lengths(code_points):
    """Bytes of each code point in UTF-8, int64."""
    return tf.cast(1 + tf.cast(code_points >= 0x80, tf.int32) + tf.cast(code_points >= 0x800,
                   tf.int32) + tf.cast(code_points >= 0x10000, tf.int32), tf.int64)


class BasicTokenizer:
    """Normalizes and splits a batch of texts into words exactly as transformers' BertTokenizer.

    Args:
        lowercase: lower-case the text.
        strip_accents: NFD-decompose and drop non-spacing marks; `None` follows `lowercase`
            (as BERT and transformers do).
        split_on_cjk: make every CJK ideograph a word of its own.
    """

    def __init__(self, lowercase=True, strip_accents=None, split_on_cjk=True):
        self.lowercase = bool(lowercase)
        self.strip_accents = self.lowercase if strip_accents is None else bool(strip_accents)
        self.split_on_cjk = bool(split_on_cjk)
        (starts, classes), (keys, row_splits, values) = unicode.normalization_table(
            self.lowercase, self.strip_accents, self.split_on_cjk)
        split_starts, split_classes = unicode.split_table()
        self._starts = tf.constant(starts)
        self._classes = tf.constant(classes)
        self._keys = tf.constant(np.append(keys, _SENTINEL).astype(np.int32))
        self._lengths = tf.constant(np.append(np.diff(row_splits), 0).astype(np.int32))
        self._row_starts = tf.constant(row_splits)
        self._values = tf.constant(np.append(values, 0).astype(np.int32))
        self._split_starts = tf.constant(split_starts)
        self._split_classes = tf.constant(split_classes)

    def split(self, texts):
        """Words of a 1-D string tensor, as a `Words` tuple of flat tensors."""
        decoded = tf.strings.unicode_decode(texts, "UTF-8", errors="replace")
        num_texts = tf.shape(texts, out_type=tf.int64)[0]
        source = decoded.values  # (N,) original code points of all texts
        source_text = decoded.value_rowids()
        source_index = tf.range(tf.size(source, out_type=tf.int64)) - tf.gather(
            decoded.row_splits, source_text)

        # Step 1-3: every source character becomes 0..k normalized characters.
        kind = _lookup(self._starts, self._classes, source)
        key = tf.searchsorted(self._keys, source, side="left")
        mapped = tf.gather(self._keys, key) == source
        count = tf.where(kind == unicode.REMOVE, 0,
                         tf.where(mapped, tf.gather(self._lengths, key), 1))
        owner = tf.repeat(tf.range(tf.size(source)), count)  # (C,) source char of each output
        first = tf.cumsum(count, exclusive=True)
        within = tf.range(tf.size(owner)) - tf.gather(first, owner)
        owner_kind = tf.gather(kind, owner)
        owner_mapped = tf.gather(mapped, owner)
        mapped_value = tf.gather(self._values, tf.where(
            owner_mapped, tf.gather(self._row_starts, tf.gather(key, owner)) + within, 0))
        chars = tf.where(owner_mapped, mapped_value,
                         tf.where(owner_kind == unicode.SPACE, 32, tf.gather(source, owner)))
        text = tf.gather(source_text, owner)
        sources = tf.gather(source_index, owner)

        # Step 4: a word starts after whitespace, at and after punctuation, at and after each
        # CJK character (transformers puts spaces around those), and at the start of a text.
        split_kind = _lookup(self._split_starts, self._split_classes, chars)
        space = split_kind == unicode.WHITESPACE
        punctuation = split_kind == unicode.PUNCTUATION
        cjk = owner_kind == unicode.CJK
        cjk_first = cjk & tf.equal(within, 0)
        cjk_last = cjk & tf.equal(within, tf.gather(count, owner) - 1)
        starts = ~space & (
            tf.not_equal(text, _shift_right(text, tf.constant(-1, tf.int64)))
            | _shift_right(space, True) | punctuation | _shift_right(punctuation, False)
            | cjk_first | _shift_right(cjk_last, False))
        keep = ~space
        starts = tf.boolean_mask(starts, keep)
        text = tf.boolean_mask(text, keep)
        chars = tf.boolean_mask(chars, keep)
        sources = tf.boolean_mask(sources, keep)

        word_starts = tf.where(starts)[:, 0]
        char_splits = tf.concat([word_starts, tf.shape(chars, out_type=tf.int64)], axis=0)
        words_per_text = tf.math.unsorted_segment_sum(tf.cast(starts, tf.int64), text, num_texts)
        text_splits = tf.concat([[0], tf.cumsum(words_per_text)], axis=0)
        return Words(text_splits, char_splits, chars, sources)

    def words(self, texts):
        """The words of each text: tf.RaggedTensor (batch, (words)) of UTF-8 strings."""
        words = self.split(texts)
        strings = word_strings(words)
        return tf.RaggedTensor.from_row_splits(strings, words.text_splits, validate=False)


def word_strings(words):
    """UTF-8 string of every word, (W,)."""
    return tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_splits(words.chars, words.char_splits, validate=False), "UTF-8")
