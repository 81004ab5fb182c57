"""Character tables for BERT's BasicTokenizer, shared by the WordPiece and GPT-1 tokenizers.

BERT's pre-tokenization (google-research/bert `tokenization.py`, `BasicTokenizer`; the same in
transformers' Rust `BertNormalizer` + `BertPreTokenizer`) works one character at a time:

  1. drop NUL, U+FFFD and control/format/private-use characters; map whitespace to " ";
  2. put spaces around CJK ideographs;
  3. if stripping accents: NFD, then drop non-spacing marks (Mn); if lower-casing: lower-case;
  4. split on whitespace, and make every punctuation character a word of its own.

Because every step is per character (NFD's canonical re-ordering aside, see below), the whole
normalization is a lookup table from a code point to the code points it becomes. The tables are
built here once, in Python, from `unicodedata`; the tokenizers turn them into constant tensors
and apply them with `tf.searchsorted` / `tf.gather`, so tokenization stays pure TF ops.

Parity with transformers. transformers (tokenizers 0.23) takes its character classes from older
Unicode tables than Python 3.11's `unicodedata` (Unicode 14.0) and its lower-casing from Rust's
(newer) std. We follow transformers wherever the two disagree, because id parity with it is the
contract: the `_HF_*` tables below list every such code point, and
`tests/test_tokenizers.py::test_unicode_tables_match_transformers` checks all 1,114,112 code
points against transformers in every mode. Two differences from the original Python BERT come
with that: unassigned code points (category Cn) are kept, not deleted, and the CJK range
U+2B820..U+2B91F is not split (transformers starts that block at U+2B920).

Known exception: NFD re-orders runs of combining characters by canonical combining class; a
per-character table cannot. After accent stripping the only visible case is two adjacent
*spacing* combining marks (Mc) with decreasing class, e.g. U+1D16D U+1D165, which transformers
swaps and we keep in input order.
"""

import collections
import functools
import unicodedata

import numpy as np

# Source-character classes (before normalization).
KEEP, REMOVE, SPACE, CJK, MAPPED = range(5)
# Classes of normalized characters (what the word splitter sees).
OTHER, WHITESPACE, PUNCTUATION = range(3)

MAX_CODE_POINT = 0x10FFFF
_CONTROL_CATEGORIES = ("Cc", "Cf", "Co", "Cs")
# Hangul syllables decompose algorithmically (NFD gives their jamo); `unicodedata.decomposition`
# does not list them.
_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3

# transformers `BertNormalizer::is_chinese_char` (tokenizers/src/normalizers/bert.rs). The original
# BERT code has 0x2B820 as the start of the fifth range.
_CJK_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF),
               (0x2A700, 0x2B81F), (0x2B920, 0x2CEAF), (0x2F800, 0x2FA1F))

# Rust `char::is_whitespace` (the Unicode White_Space property) minus the control characters that
# step 1 deletes first (U+000B, U+000C, U+0085).
_WHITESPACE = frozenset([0x09, 0x0A, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028,
                         0x2029, 0x202F, 0x205F, 0x3000])

# --- Where transformers' tables differ from Unicode 14.0 (inclusive ranges) ---
# Format characters added in Unicode 14.0: transformers does not know them and keeps them.
_HF_NOT_CONTROL = ((0x0890, 0x0891), (0x08E2, 0x08E2), (0x110CD, 0x110CD), (0x13430, 0x13438))
# Non-spacing marks (Mn) that transformers does not strip (added after its tables).
_HF_NOT_NONSPACING_MARK = (
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08E1), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0D00, 0x0D00), (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x180F, 0x180F), (0x1885, 0x1886), (0x1ABF, 0x1ACE),
    (0x1DF6, 0x1DFB), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5), (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85),
    (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2), (0x111C9, 0x111C9),
    (0x111CF, 0x111CF), (0x1123E, 0x1123E), (0x1133B, 0x1133B), (0x11438, 0x1143F),
    (0x11442, 0x11444), (0x11446, 0x11446), (0x1145E, 0x1145E), (0x1182F, 0x11837),
    (0x11839, 0x1183A), (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11943),
    (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38), (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56),
    (0x11A59, 0x11A5B), (0x11A8A, 0x11A96), (0x11A98, 0x11A99), (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91),
    (0x11D95, 0x11D95), (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x16F4F, 0x16F4F),
    (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006),
    (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A),
    (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E944, 0x1E94A),
)
# Was Mn in transformers' tables, Mc since Unicode 14.0: transformers strips it.
_HF_NONSPACING_MARK = ((0x1734, 0x1734),)
# Canonical decomposition added in Unicode 13.0 that transformers' NFD does not apply.
_HF_NO_DECOMPOSITION = ((0x11938, 0x11938),)
# Lower-case mappings of characters unassigned in Unicode 14.0 that Rust's std knows:
# (first, last, offset to add).
_HF_LOWERCASE = ((0x1C89, 0x1C89, 1), (0xA7CB, 0xA7CB, 0x264 - 0xA7CB), (0xA7CC, 0xA7CC, 1),
                 (0xA7CE, 0xA7CE, 1), (0xA7D2, 0xA7D2, 1), (0xA7D4, 0xA7D4, 1),
                 (0xA7DA, 0xA7DA, 1), (0xA7DC, 0xA7DC, 0x19B - 0xA7DC),
                 (0x10D50, 0x10D65, 0x20), (0x16EA0, 0x16EB8, 0x1B))
# Punctuation in transformers' tables but not in Unicode 14.0 (re-categorized), and the reverse
# (punctuation added after transformers' tables).
_HF_PUNCTUATION = ((0x166D, 0x166D), (0x111C9, 0x111C9))
_HF_NOT_PUNCTUATION = (
    (0x061D, 0x061D), (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0C77, 0x0C77), (0x0C84, 0x0C84),
    (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD),
    (0x10F55, 0x10F59), (0x10F86, 0x10F89), (0x1144B, 0x1144F), (0x1145A, 0x1145B),
    (0x1145D, 0x1145D), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1183B, 0x1183B),
    (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C),
    (0x11A9E, 0x11AA2), (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8),
    (0x11FFF, 0x11FFF), (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2),
    (0x1E95E, 0x1E95F),
)


def _in(ranges):
    points = set()
    for first, last, *_ in ranges:
        points.update(range(first, last + 1))
    return frozenset(points)


_Overrides = collections.namedtuple(
    "_Overrides", "not_control not_mark mark no_decomposition lowercase punctuation "
                  "not_punctuation")


@functools.lru_cache(maxsize=None)
def _overrides():
    lower = {}
    for first, last, offset in _HF_LOWERCASE:
        lower.update({c: chr(c + offset) for c in range(first, last + 1)})
    return _Overrides(_in(_HF_NOT_CONTROL), _in(_HF_NOT_NONSPACING_MARK), _in(_HF_NONSPACING_MARK),
                      _in(_HF_NO_DECOMPOSITION), lower, _in(_HF_PUNCTUATION),
                      _in(_HF_NOT_PUNCTUATION))


def is_removed(cp):
    """Step 1 deletes NUL, U+FFFD and categories Cc, Cf, Co, Cs except tab, newline, return."""
    if cp in (0, 0xFFFD):
        return True
    if cp in (0x09, 0x0A, 0x0D) or cp in _overrides().not_control:
        return False
    return unicodedata.category(chr(cp)) in _CONTROL_CATEGORIES


def is_punctuation(cp):
    """ASCII non-alphanumeric symbols count as punctuation too (BERT `_is_punctuation`)."""
    overrides = _overrides()
    if cp in overrides.punctuation:
        return True
    if cp in overrides.not_punctuation:
        return False
    return (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
            or unicodedata.category(chr(cp)).startswith("P"))


def normalize_char(cp, lowercase, strip_accents):
    """The string one character becomes in steps 1 and 3 (CJK spacing is left to the caller)."""
    overrides = _overrides()
    if is_removed(cp):
        return ""
    if cp in _WHITESPACE:
        return " "
    text = chr(cp)
    if strip_accents:
        if cp not in overrides.no_decomposition:
            text = unicodedata.normalize("NFD", text)
        text = "".join(ch for ch in text if ord(ch) not in overrides.mark and (
            ord(ch) in overrides.not_mark or unicodedata.category(ch) != "Mn"))
    if lowercase:
        text = "".join(overrides.lowercase.get(ord(ch)) or ch.lower() for ch in text)
    return text


def _ranges(classes):
    """Run-length encode a per-code-point class array: (starts, classes) for tf.searchsorted."""
    change = np.flatnonzero(np.diff(classes)) + 1
    starts = np.concatenate([[0], change]).astype(np.int32)
    return starts, classes[starts].astype(np.int32)


@functools.lru_cache(maxsize=None)
def _categories():
    return [unicodedata.category(chr(cp)) for cp in range(MAX_CODE_POINT + 1)]


@functools.lru_cache(maxsize=None)
def split_table():
    """Classes of normalized characters for word splitting, as (range starts, classes)."""
    categories = _categories()
    classes = np.zeros(MAX_CODE_POINT + 1, np.int8)
    candidates = [cp for cp in range(MAX_CODE_POINT + 1) if cp < 128 or categories[cp][0] == "P"]
    for cp in candidates + [first for first, _ in _HF_PUNCTUATION]:
        if is_punctuation(cp):
            classes[cp] = PUNCTUATION
    for cp in _WHITESPACE:
        classes[cp] = WHITESPACE
    return _ranges(classes)


@functools.lru_cache(maxsize=None)
def normalization_table(lowercase, strip_accents, split_on_cjk):
    """Per-source-character classes and the mapping of MAPPED characters.

    Returns:
        (range starts, classes) for the source classes KEEP/REMOVE/SPACE/CJK/MAPPED, and
        (keys, row_splits, values): MAPPED code point `keys[i]` becomes
        `values[row_splits[i]:row_splits[i + 1]]`; characters that become nothing are REMOVE
        instead. A CJK character that normalization changes is CJK in the classes and listed
        in the mapping too.
    """
    categories = _categories()
    overrides = _overrides()
    classes = np.zeros(MAX_CODE_POINT + 1, np.int8)
    removed = [cp for cp, category in enumerate(categories) if category in _CONTROL_CATEGORIES]
    for cp in removed + [0, 0xFFFD]:
        classes[cp] = REMOVE if is_removed(cp) else KEEP
    for cp in _WHITESPACE:
        classes[cp] = SPACE
    if split_on_cjk:
        for first, last in _CJK_RANGES:
            classes[first:last + 1] = CJK
    # Only characters with a decomposition, a non-spacing mark or a lower-case form can change.
    candidates = set(overrides.lowercase) if lowercase else set()
    for cp in range(MAX_CODE_POINT + 1):
        if classes[cp] in (REMOVE, SPACE) or categories[cp] == "Cn":
            continue
        ch = chr(cp)
        if (strip_accents and (categories[cp] == "Mn" or cp in overrides.mark
                               or unicodedata.decomposition(ch)
                               or _HANGUL_FIRST <= cp <= _HANGUL_LAST)
                or lowercase and ch.lower() != ch):
            candidates.add(cp)
    keys, lengths, values = [], [], []
    for cp in sorted(candidates):
        out = normalize_char(cp, lowercase, strip_accents)
        if out == chr(cp):
            continue
        if out == "":
            classes[cp] = REMOVE
            continue
        if classes[cp] != CJK:
            classes[cp] = MAPPED
        keys.append(cp)
        lengths.append(len(out))
        values.extend(ord(ch) for ch in out)
    row_splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return (_ranges(classes),
            (np.asarray(keys, np.int32), row_splits, np.asarray(values, np.int32)))
