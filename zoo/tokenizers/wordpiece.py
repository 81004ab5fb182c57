"""BERT's WordPiece tokenizer: BasicTokenizer + greedy longest-match-first sub-words, in TF ops.

Devlin et al. 2019 (BERT), section A.2 / google-research/bert `tokenization.py`. The pre-
tokenization is `zoo.tokenizers.basic.BasicTokenizer`; the sub-word step is tensorflow-text's
`FastWordpieceTokenizer` (LinMaxMatch, Song et al. 2021), which gives the same pieces as BERT's
greedy `WordpieceTokenizer`.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from zoo import files
from zoo.tokenizers import base, basic


@keras.saving.register_keras_serializable(package="zoo")
class WordPieceTokenizer(base.Tokenizer):
    """BERT WordPiece tokenizer layer: ids equal transformers' `BertTokenizer` (without specials).

    `tokenizer(texts)` returns (batch, None) ragged int32 ids; `tokenize_with_offsets` adds
    Unicode-character spans into the original strings; `detokenize` joins pieces ("##" suffixes
    glued to their word, words separated by one space — transformers' WordPiece decoder with
    `cleanup=False`). Special-token strings in the text ("[MASK]") are ordinary text here, as in
    transformers with `split_special_tokens=True`; packers add special tokens by id.

    Differences from transformers, all in `zoo.tokenizers.unicode`: NFD's canonical re-ordering of
    combining marks is not applied (visible only for two adjacent spacing marks of decreasing
    combining class, e.g. U+1D16D U+1D165); invalid UTF-8 bytes are read as U+FFFD (which BERT
    deletes) and count as one character in offsets.

    Args:
        vocabulary: list of tokens (index = id) or the path of a vocab.txt, one token per line.
        lowercase: lower-case the text (uncased models).
        strip_accents: drop accents after NFD; `None` follows `lowercase`, as in BERT.
        split_on_cjk: make each CJK ideograph a word.
        suffix_indicator: prefix of word-continuation pieces.
        max_input_chars_per_word: longer words become `unk_token` (100 in BERT).
        unk_token: the unknown token; it and the four below must be in the vocabulary, their
            ids are `unk_token_id`, `cls_token_id`, ...
        cls_token: the classification token, first of every sequence.
        sep_token: the separator, after each segment.
        pad_token: the padding token.
        mask_token: the masked-LM token.

    Examples:
        >>> tokenizer = WordPieceTokenizer(
        ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick", "!"])
        >>> tokenizer(["The quick!", ""]).to_list()
        [[5, 6, 7, 8], []]
        >>> ids, starts, ends = tokenizer.tokenize_with_offsets(["The quick!"])
        >>> starts.to_list(), ends.to_list()
        ([[0, 4, 6, 9]], [[3, 6, 9, 10]])
        >>> tokenizer.detokenize([[5, 6, 7]]).numpy()
        array([b'the quick'], dtype=object)
    """

    def __init__(self, vocabulary, lowercase=True, strip_accents=None, split_on_cjk=True,
                 suffix_indicator="##", max_input_chars_per_word=100, unk_token="[UNK]",
                 cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]",
                 **kwargs):
        source = "vocabulary"
        if isinstance(vocabulary, str):
            source = vocabulary
            vocabulary = read_vocab_txt(vocabulary)
        super().__init__(vocabulary, **kwargs)
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.split_on_cjk = split_on_cjk
        self.suffix_indicator = suffix_indicator
        self.max_input_chars_per_word = max_input_chars_per_word
        self.unk_token, self.cls_token, self.sep_token = unk_token, cls_token, sep_token
        self.pad_token, self.mask_token = pad_token, mask_token
        self.unk_token_id = self._special_id(unk_token, "unk_token", source)
        self.cls_token_id = self._special_id(cls_token, "cls_token", source)
        self.sep_token_id = self._special_id(sep_token, "sep_token", source)
        self.pad_token_id = self._special_id(pad_token, "pad_token", source)
        self.mask_token_id = self._special_id(mask_token, "mask_token", source)
        self._basic = basic.BasicTokenizer(lowercase, strip_accents, split_on_cjk)
        # Words are split already; any word of <= max_input_chars_per_word characters fits in
        # 4 bytes per character. Longer words are replaced by unk_token before this step, so the
        # limit counts characters as BERT does, not bytes as tensorflow-text does.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary, suffix_indicator=suffix_indicator,
            max_bytes_per_word=4 * max_input_chars_per_word, token_out_type=tf.int32,
            unknown_token=unk_token, no_pretokenization=True, support_detokenization=True)

    def _tokenize(self, texts, with_offsets):
        words = self._basic.split(texts)
        strings = basic.word_strings(words)
        lengths = words.char_splits[1:] - words.char_splits[:-1]
        too_long = lengths > self.max_input_chars_per_word
        strings = tf.where(too_long, self.unk_token, strings)
        if not with_offsets:
            pieces = self._wordpiece.tokenize(strings)
            return base.assemble(words, pieces.row_splits, pieces.values, None, None)
        pieces, byte_starts, byte_ends = self._wordpiece.tokenize_with_offsets(strings)
        # Byte offsets within a word -> index of the normalized character: every character
        # starts at a distinct position of the concatenated words, so a sorted search finds it.
        char_bytes = tf.cumsum(basic.utf8_lengths(words.chars), exclusive=True)
        word = pieces.value_rowids()
        word_first = tf.gather(words.char_splits, word)
        word_bytes = tf.gather(tf.concat([char_bytes, [0]], axis=0), word_first)
        first = tf.searchsorted(char_bytes, word_bytes + byte_starts.values, side="left",
                                out_type=tf.int64)
        last = tf.searchsorted(char_bytes, word_bytes + byte_ends.values, side="left",
                               out_type=tf.int64) - 1
        # A too-long word is one unk piece spanning the whole word.
        long_piece = tf.gather(too_long, word)
        first = tf.where(long_piece, word_first, first)
        last = tf.where(long_piece, tf.gather(words.char_splits, word + 1) - 1, last)
        return base.assemble(words, pieces.row_splits, pieces.values, first, last)

    def _detokenize(self, ids):
        return self._wordpiece.detokenize(ids)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary=self.vocabulary, lowercase=self.lowercase,
                      strip_accents=self.strip_accents, split_on_cjk=self.split_on_cjk,
                      suffix_indicator=self.suffix_indicator,
                      max_input_chars_per_word=self.max_input_chars_per_word,
                      unk_token=self.unk_token, cls_token=self.cls_token,
                      sep_token=self.sep_token, pad_token=self.pad_token,
                      mask_token=self.mask_token)
        return config


def read_vocab_txt(path):
    """Tokens of a vocab.txt, one per line (only the newline is stripped, as transformers does)."""
    with files.open(path, encoding="utf-8") as file:
        tokens = [line.rstrip("\n") for line in file]
    if not tokens:
        raise ValueError(f"{path}: empty vocabulary")
    return tokens
