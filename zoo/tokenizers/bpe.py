"""Byte-pair encoding in TF ops: GPT-1's word-final `</w>` BPE and GPT-2 style byte-level BPE.

GPT-1 (Radford et al. 2018, section 4.1: "a bytepair encoding (BPE) vocabulary with 40,000
merges", Sennrich et al. 2016) splits words like BERT's BasicTokenizer and marks the last symbol
of every word with `</w>`. transformers' `OpenAIGPTTokenizer` (used without ftfy/spaCy) is
exactly: BertNormalizer(lowercase=True) — which also strips accents — + BertPreTokenizer + BPE
with `end_of_word_suffix="</w>"`. The merge loop follows tokenizers' `Word::merge_all`: repeatedly
merge the pair with the lowest rank, leftmost first, until no pair has a rank.
"""

import json
import re

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from zoo import files
from zoo.tokenizers import base, basic

# Extra tokens GPT-1's fine-tuning code appends to the vocabulary (openai/finetune-transformer-lm
# train.py: `encoder['_start_'] = len(encoder)`, then `_delimiter_`, `_classify_`).
GPT1_SPECIAL_TOKENS = ("_start_", "_delimiter_", "_classify_")

_NO_MERGE = tf.int32.max


class _BytePairMerger(tf.Module):
    """Ranks of merge rules as a lookup table, and the merge loop over a batch of words."""

    def __init__(self, merges, source):
        super().__init__()
        ranks = {}
        for rank, merge in enumerate(merges):
            parts = merge.split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"{source}: merge {rank + 1} is {merge!r}; expected 'left right'")
            ranks[merge] = rank  # a repeated rule keeps its last rank, like tokenizers' HashMap
        self.merges = list(merges)
        # A lookup table cannot be empty; "" is never a pair (pairs are "left right").
        ranks = ranks or {"": _NO_MERGE}
        self._ranks = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(list(ranks), tf.string), tf.constant(list(ranks.values()), tf.int32)),
            default_value=_NO_MERGE)

    def __call__(self, symbols, splits):
        """Merge (N,) symbols grouped into words by (U + 1,) row splits.

        Returns the merged symbols, their row splits, and how many initial symbols each merged
        symbol covers (int64).
        """
        def step(symbols, lengths, splits, _):
            count = tf.size(symbols, out_type=tf.int64)
            num_words = tf.size(splits, out_type=tf.int64) - 1
            word = tf.ragged.row_splits_to_segment_ids(splits)
            position = tf.range(count)
            has_next = position + 1 < tf.gather(splits, word + 1)
            following = tf.concat([symbols, [""]], axis=0)[1:]
            rank = tf.where(has_next, self._ranks.lookup(
                tf.strings.join([symbols, following], separator=" ")), _NO_MERGE)
            best = tf.math.unsorted_segment_min(rank, word, num_words)  # empty word: int32 max
            merging = best < _NO_MERGE
            leftmost = tf.math.unsorted_segment_min(
                tf.where(tf.equal(rank, tf.gather(best, word)), position, count), word, num_words)
            left = tf.equal(position, tf.gather(leftmost, word)) & tf.gather(merging, word)
            right = tf.concat([[False], left], axis=0)[:-1]
            symbols = tf.where(left, tf.strings.join([symbols, following]), symbols)
            lengths = tf.where(left, lengths + tf.concat([lengths, [0]], axis=0)[1:], lengths)
            symbols = tf.boolean_mask(symbols, ~right)
            lengths = tf.boolean_mask(lengths, ~right)
            row_lengths = splits[1:] - splits[:-1] - tf.cast(merging, tf.int64)
            splits = tf.concat([[0], tf.cumsum(row_lengths)], axis=0)
            return symbols, lengths, splits, tf.reduce_any(merging)

        lengths = tf.ones_like(symbols, tf.int64)
        symbols, lengths, splits, _ = tf.while_loop(
            lambda *state: state[-1], step, [symbols, lengths, splits, tf.constant(True)],
            shape_invariants=[tf.TensorShape([None])] * 3 + [tf.TensorShape([])])
        return symbols, splits, lengths


@keras.saving.register_keras_serializable(package="zoo")
class GPTTokenizer(base.Tokenizer):
    """GPT-1 BPE tokenizer layer: ids equal transformers' `OpenAIGPTTokenizer`.

    Text is normalized and split into words like BERT (lower-casing, and accent stripping, as
    transformers does); each word is split into characters, the last one suffixed `</w>`, and
    merged by rank. A symbol missing from the vocabulary becomes `unk_token`.
    `tokenize_with_offsets` gives Unicode-character spans into the original strings;
    `detokenize` joins symbols and turns every `</w>` into a space (transformers' BPEDecoder).
    The differences from transformers listed in `WordPieceTokenizer` (NFD re-ordering of
    combining marks, invalid UTF-8) apply here too.

    Args:
        vocabulary: dict token -> id (ids 0..n-1), or the path of a vocab.json.
        merges: list of "left right" rules, best first, or the path of a merges.txt (a leading
            "#version" line is skipped).
        lowercase: lower-case the text (True for GPT-1).
        strip_accents: drop accents after NFD; `None` follows `lowercase` (transformers).
        split_on_cjk: make each CJK ideograph a word.
        unk_token: token for unknown symbols.
        end_of_word_suffix: marks the last symbol of a word.
        special_tokens: tokens appended to the vocabulary if missing (in order), e.g.
            `GPT1_SPECIAL_TOKENS` for GPT-1's fine-tuning transformations.

    Examples:
        >>> vocab = {"<unk>": 0, "l": 1, "o": 2, "w</w>": 3, "lo": 4, "low</w>": 5, "e": 6,
        ...          "r</w>": 7, "w": 8, "low": 9, "er</w>": 10, "lower</w>": 11}
        >>> merges = ["l o", "lo w</w>", "e r</w>", "lo w", "low er</w>"]
        >>> tokenizer = GPTTokenizer(vocab, merges)
        >>> tokenizer(["Low lower lox"]).to_list()
        [[5, 11, 4, 0]]
        >>> tokenizer.detokenize([[5, 11]]).numpy()
        array([b'low lower'], dtype=object)
    """

    def __init__(self, vocabulary, merges, lowercase=True, strip_accents=None, split_on_cjk=True,
                 unk_token="<unk>", end_of_word_suffix="</w>", special_tokens=(), **kwargs):
        vocab_source, merges_source = "vocabulary", "merges"
        if isinstance(vocabulary, str):
            vocab_source, vocabulary = vocabulary, read_vocab_json(vocabulary)
        if isinstance(merges, str):
            merges_source, merges = merges, read_merges_txt(merges)
        tokens = vocabulary_list(vocabulary, vocab_source)
        num_base_tokens = len(tokens)
        tokens += [t for t in special_tokens if t not in vocabulary]
        super().__init__(tokens, **kwargs)
        self._num_base_tokens = num_base_tokens
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.split_on_cjk = split_on_cjk
        self.unk_token = unk_token
        self.end_of_word_suffix = end_of_word_suffix
        self.special_tokens = list(special_tokens)
        self.unk_token_id = self._special_id(unk_token, "unk_token", vocab_source)
        check_merges(merges, self._token_to_id, merges_source)
        self._basic = basic.BasicTokenizer(lowercase, strip_accents, split_on_cjk)
        self._merger = _BytePairMerger(merges, merges_source)
        self._ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.vocabulary, tf.string),
                tf.range(len(self.vocabulary), dtype=tf.int32)),
            default_value=self.unk_token_id)
        self._tokens = tf.constant(self.vocabulary, tf.string)

    @property
    def merges(self):
        return self._merger.merges

    def _tokenize(self, texts, with_offsets):
        words = self._basic.split(texts)
        # Merge each distinct word once per batch.
        unique, index = tf.unique(basic.word_strings(words), out_idx=tf.int64)
        chars = tf.strings.unicode_split(unique, "UTF-8")
        last = tf.scatter_nd(chars.row_splits[1:, tf.newaxis] - 1,
                             tf.ones([tf.size(unique)], tf.bool), tf.shape(chars.values,
                                                                           out_type=tf.int64))
        symbols = tf.where(last, tf.strings.join([chars.values, self.end_of_word_suffix]),
                           chars.values)
        symbols, splits, lengths = self._merger(symbols, chars.row_splits)
        pieces = tf.gather(tf.RaggedTensor.from_row_splits(symbols, splits, validate=False), index)
        ids = self._ids.lookup(pieces.values)
        if not with_offsets:
            return base.assemble(words, pieces.row_splits, ids, None, None)
        lengths = tf.gather(tf.RaggedTensor.from_row_splits(lengths, splits, validate=False),
                            index).values
        # Character index of each piece: its word's first character + the lengths before it.
        word = pieces.value_rowids()
        before = tf.cumsum(lengths, exclusive=True)
        before -= tf.gather(before, tf.gather(pieces.row_splits, word))
        first = tf.gather(words.char_splits, word) + before
        return base.assemble(words, pieces.row_splits, ids, first, first + lengths - 1)

    def _detokenize(self, ids):
        text = tf.strings.reduce_join(tf.gather(self._tokens, ids), axis=-1)
        suffix = re.escape(self.end_of_word_suffix)
        return tf.strings.regex_replace(tf.strings.regex_replace(text, suffix + "$", ""),
                                        suffix, " ")

    def get_config(self):
        config = super().get_config()
        vocabulary = {t: i for i, t in enumerate(self.vocabulary[:self._num_base_tokens])}
        config.update(vocabulary=vocabulary, merges=self.merges, lowercase=self.lowercase,
                      strip_accents=self.strip_accents, split_on_cjk=self.split_on_cjk,
                      unk_token=self.unk_token, end_of_word_suffix=self.end_of_word_suffix,
                      special_tokens=self.special_tokens)
        return config


def read_vocab_json(path):
    """token -> id of a vocab.json."""
    with files.open(path, encoding="utf-8") as file:
        vocabulary = json.load(file)
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise ValueError(f"{path}: expected a non-empty JSON object token -> id")
    return vocabulary


def read_merges_txt(path):
    """Merge rules of a merges.txt, best first, without the "#version" header."""
    with files.open(path, encoding="utf-8") as file:
        lines = [line.rstrip("\r\n") for line in file]
    return [line for i, line in enumerate(lines) if line and not (i == 0 and
                                                                  line.startswith("#version"))]


def vocabulary_list(vocabulary, source):
    """Tokens ordered by id from a dict token -> id whose ids are exactly 0..n-1."""
    tokens = sorted(vocabulary, key=vocabulary.get)
    ids = [vocabulary[t] for t in tokens]
    if ids != list(range(len(tokens))):
        missing = sorted(set(range(len(tokens))) - set(ids))[:5]
        raise ValueError(f"{source}: ids must be 0..{len(tokens) - 1} without gaps or repeats; "
                         f"missing e.g. {missing}")
    return tokens


def check_merges(merges, token_to_id, source):
    """Every merge's parts and result must be tokens (transformers refuses such files too)."""
    for rank, merge in enumerate(merges):
        parts = merge.split(" ")
        for token in (*parts, "".join(parts)):
            if token not in token_to_id:
                raise ValueError(f"{source}: merge {rank + 1} {merge!r} uses {token!r}, which is "
                                 "not in the vocabulary")


# --- Byte-level BPE (GPT-2) ---

# Whitespace as transformers' ByteLevel regex (Oniguruma `\s`) sees it: the White_Space property.
_WHITESPACE = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
_WS_CLASS = r"\t\n\x{0b}\x{0c}\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}" \
            r"\x{205f}\x{3000}"
# GPT-2's pre-tokenization regex (openai/gpt-2 src/encoder.py) without its look-ahead: the last
# alternatives there are `\s+(?!\S)|\s+`, which RE2 cannot express. `ByteLevelBPETokenizer` gets
# the same pieces by first cutting the text before the last whitespace character of every
# whitespace run that is longer than one and followed by text: that character then starts the
# next piece, as the look-ahead makes it do.
_GPT2_PATTERN = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+| ?[^{_WS_CLASS}\p{{L}}\p{{N}}]+"
                 rf"|[{_WS_CLASS}]+")


def bytes_to_unicode():
    """GPT-2's reversible map from the 256 byte values to printable characters (encoder.py)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    characters = printable + [256 + i for i in range(len(others))]
    return {byte: chr(character) for byte, character in zip(printable + others, characters)}


@keras.saving.register_keras_serializable(package="zoo")
class ByteLevelBPETokenizer(base.Tokenizer):
    """GPT-2 style byte-level BPE layer: ids equal transformers' `GPT2Tokenizer`.

    Text is split with GPT-2's regex (contractions, letter runs, digit runs, other symbols,
    whitespace), each piece's UTF-8 bytes are mapped to printable characters and merged by rank.
    No normalization; every string has ids (bytes missing from the vocabulary are dropped, as in
    transformers). Offsets are Unicode-character spans; a piece that ends inside a multi-byte
    character covers that whole character. Special-token strings ("<|endoftext|>") in the text
    are ordinary text, as in transformers with `split_special_tokens=True`.

    Difference from transformers: the regex classes `\\p{L}` and `\\p{N}` come from RE2's Unicode
    tables in TensorFlow, which predate Unicode 16; the letters and digits added there (scripts
    such as Garay and Todhri) count as "other" symbols, so text in those scripts is split
    differently.

    Args:
        vocabulary: dict token -> id (ids 0..n-1), or the path of a vocab.json.
        merges: list of "left right" rules, best first, or the path of a merges.txt.
        add_prefix_space: prepend a space to text that does not start with one, so the first
            word is tokenized like the others.

    Examples:
        >>> table = bytes_to_unicode()
        >>> vocab = {table[b]: b for b in range(256)}
        >>> vocab.update({"he": 256, "ll": 257, "hell": 258, "Ġw": 259})
        >>> tokenizer = ByteLevelBPETokenizer(vocab, ["h e", "l l", "he ll", "Ġ w"])
        >>> tokenizer(["hello world"]).to_list()
        [[258, 111, 259, 111, 114, 108, 100]]
        >>> tokenizer.detokenize([[258, 111, 259]]).numpy()
        array([b'hello w'], dtype=object)
    """

    def __init__(self, vocabulary, merges, add_prefix_space=False, **kwargs):
        vocab_source, merges_source = "vocabulary", "merges"
        if isinstance(vocabulary, str):
            vocab_source, vocabulary = vocabulary, read_vocab_json(vocabulary)
        if isinstance(merges, str):
            merges_source, merges = merges, read_merges_txt(merges)
        super().__init__(vocabulary_list(vocabulary, vocab_source), **kwargs)
        self.add_prefix_space = add_prefix_space
        check_merges(merges, self._token_to_id, merges_source)
        self._merger = _BytePairMerger(merges, merges_source)
        table = bytes_to_unicode()
        self._byte_to_symbol = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([bytes([b]) for b in table]), tf.constant(list(table.values()))), "")
        self._symbol_to_byte = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(table.values())), tf.constant([bytes([b]) for b in table])), "")
        self._ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.vocabulary, tf.string),
                tf.range(len(self.vocabulary), dtype=tf.int32)), default_value=-1)
        self._tokens = tf.constant(self.vocabulary, tf.string)
        self._whitespace = tf.constant(sorted(_WHITESPACE), tf.int32)

    @property
    def merges(self):
        return self._merger.merges

    def _segments(self, texts, chars, char_bytes):
        """Cut texts before the last character of each whitespace run longer than one that is
        followed by text (see _GPT2_PATTERN). Returns the segments, the text of each, and
        their byte offsets in it."""
        text = chars.value_rowids()
        values = chars.values
        space = tf.equal(tf.gather(self._whitespace, tf.searchsorted(
            self._whitespace, values, side="left") % tf.size(self._whitespace)), values)
        same_before = tf.equal(text, tf.concat([[-1], text], axis=0)[:-1])
        same_after = tf.equal(text, tf.concat([text, [-1]], axis=0)[1:])
        space_before = tf.concat([[False], space], axis=0)[:-1]
        text_after = ~tf.concat([space, [True]], axis=0)[1:]
        cut = ~same_before | (space & space_before & same_before & same_after & text_after)
        starts = tf.where(cut)[:, 0]  # (S,) flat character index of each segment's start
        segment_text = tf.gather(text, starts)
        begin = tf.gather(char_bytes.values, starts)
        last = tf.not_equal(segment_text, tf.concat([segment_text, [-1]], axis=0)[1:])
        end = tf.where(last, tf.gather(tf.cast(tf.strings.length(texts), tf.int64), segment_text),
                       tf.concat([begin, [0]], axis=0)[1:])
        segments = tf.strings.substr(tf.gather(texts, segment_text), begin, end - begin)
        return segments, segment_text, begin

    def _tokenize(self, texts, with_offsets):
        if self.add_prefix_space:
            # Not a regex: RE2's "." stops at a newline, which would prefix " a\nb" twice.
            prefixed = (tf.strings.length(texts) > 0) & (tf.strings.substr(texts, 0, 1) != " ")
            texts = tf.where(prefixed, tf.strings.join([" ", texts]), texts)
        chars, char_bytes = tf.strings.unicode_decode_with_offsets(texts, "UTF-8",
                                                                   errors="replace")
        segments, segment_text, begin = self._segments(texts, chars, char_bytes)
        # tensorflow-text's regex_split stops at a NUL byte; split a copy with NUL replaced by
        # U+0001 (the same "other symbol" class) and cut the pieces from the original.
        _, piece_starts, piece_ends = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(segments, r"\x00", "\x01"), _GPT2_PATTERN, _GPT2_PATTERN)
        pieces = piece_starts.with_flat_values(tf.strings.substr(
            tf.gather(segments, piece_starts.value_rowids()), piece_starts.values,
            piece_ends.values - piece_starts.values))
        # Merge each distinct piece once per batch.
        unique, index = tf.unique(pieces.values, out_idx=tf.int64)
        symbols = tf.strings.bytes_split(unique)
        merged, splits, lengths = self._merger(self._byte_to_symbol.lookup(symbols.values),
                                               symbols.row_splits)
        tokens = tf.gather(tf.RaggedTensor.from_row_splits(merged, splits, validate=False), index)
        ids = self._ids.lookup(tokens.values)
        known = ids >= 0
        piece_splits = tf.gather(tokens.row_splits, pieces.row_splits)  # tokens per segment
        text_splits = tf.gather(piece_splits, tf.concat(
            [tf.searchsorted(segment_text, tf.range(tf.size(texts, out_type=tf.int64)),
                             side="left", out_type=tf.int64),
             tf.size(segment_text, out_type=tf.int64)[tf.newaxis]], axis=0))
        token_text = tf.ragged.row_splits_to_segment_ids(text_splits)
        out_splits = tf.concat([[0], tf.cumsum(tf.math.unsorted_segment_sum(
            tf.cast(known, tf.int64), token_text, tf.size(texts, out_type=tf.int64)))], axis=0)

        def ragged(values):
            return tf.RaggedTensor.from_row_splits(tf.boolean_mask(values, known), out_splits,
                                                   validate=False)
        if not with_offsets:
            return ragged(ids)
        lengths = tf.gather(tf.RaggedTensor.from_row_splits(lengths, splits, validate=False),
                            index).values
        # Byte offset of each token in its text: segment start + piece start + bytes before it.
        token_piece = tokens.value_rowids()
        before = tf.cumsum(lengths, exclusive=True)
        before -= tf.gather(before, tf.gather(tokens.row_splits, token_piece))
        piece_segment = pieces.value_rowids()
        first_byte = (tf.gather(tf.gather(begin, piece_segment), token_piece)
                      + tf.gather(piece_starts.values, token_piece) + before)
        # Character of a byte: search the flat (text, byte) positions of all characters.
        stride = tf.cast(tf.reduce_max(tf.strings.length(texts)), tf.int64) + 1
        key = lambda t, b: tf.cast(t, tf.int64) * stride + b  # noqa: E731
        char_keys = key(chars.value_rowids(), char_bytes.values)
        text_char_start = tf.gather(chars.row_splits, token_text)
        first = tf.searchsorted(char_keys, key(token_text, first_byte), side="right",
                                out_type=tf.int64) - 1
        last = tf.searchsorted(char_keys, key(token_text, first_byte + lengths - 1),
                               side="right", out_type=tf.int64) - 1
        start, stop = first - text_char_start, last - text_char_start + 1
        if self.add_prefix_space:
            # The added space belongs to the first character, as in transformers.
            shift = tf.cast(tf.gather(prefixed, token_text), tf.int64)
            start, stop = tf.maximum(start - shift, 0), tf.maximum(stop - shift, shift)
        return ragged(ids), ragged(start), ragged(stop)

    def _detokenize(self, ids):
        symbols = tf.strings.unicode_split(tf.gather(self._tokens, ids).flat_values, "UTF-8")
        raw = tf.strings.reduce_join(self._symbol_to_byte.lookup(symbols), axis=-1)
        text = tf.strings.reduce_join(ids.with_flat_values(raw), axis=-1)
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary={t: i for i, t in enumerate(self.vocabulary)},
                      merges=self.merges, add_prefix_space=self.add_prefix_space)
        return config
