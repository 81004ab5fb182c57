"""Tokenizers: ids and offsets equal transformers', fuzzing, shapes, tf.data, SavedModel, training.

transformers (test-only) is the reference: BertTokenizer and OpenAIGPTTokenizer, both backed by
the Rust `tokenizers` library in transformers 5. Vocabularies are trained here on CORPUS with
`tokenizers` trainers, small enough that unknown pieces occur.
"""

import json
import os
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLES_BPE, sample_texts
from zoo import tokenizers
from zoo.tokenizers import unicode

# Varied on purpose: accents (composed and combining), CJK, Hangul, emoji sequences, punctuation
# runs, tabs and odd whitespace, control and format characters, words of 99/100/101 and 250
# characters (BERT's 100-character word limit), empty and blank lines, many scripts.
CORPUS = [
    "Hello, world!",
    " leading space\nthen a newline",
    "The quick brown fox jumps over the lazy dog.",
    "",
    " ",
    "\t\n\r ",
    "Héllo Wörld — Ça va? Naïve café, résumé, façade, Ångström, Øresund, Łódź, İstanbul.",
    "ÀÉÎÕÜ àéîõü ñ Ñ ß ẞ æ Æ œ Œ ø",
    "e\u0301 combining acute, a\u0308 combining diaeresis, n\u0303o",
    "中文字符测试：你好，世界！",
    "日本語のテキスト、カタカナとひらがな。",
    "한국어 텍스트 안녕하세요",
    "Mixed 中文 and English 混合 text",
    "Emoji 😀😃😄 and 👨‍👩‍👧‍👦 family, flags 🇺🇸🇫🇷, skin 👍🏽",
    "Punctuation runs!!! ??? ... --- ,,, ;;; ::: ((( ))) [[[ ]]] {{{ }}}",
    "Quotes: \"double\" 'single' «guillemets» „German“ ‘curly’ “curly”",
    "Symbols: $100 €50 £20 ¥1000 ©2024 ®™ ° ± × ÷ ≠ ≤ ≥ ∞ √ ∑ ∫ µ",
    "Math: a^2 + b^2 = c^2; x_1 < x_2 > x_3 | y & z ~ w ` @ #hash",
    "tabs\tbetween\twords\tand\t\ttwo",
    "odd\u00a0no-break\u2003em\u2009thin\u3000ideographic\u202fnarrow spaces",
    "line\u2028separator\u2029paragraph\u0085next\x0bvertical\x0cformfeed",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom",
    "control\x00nul\x01soh\x07bell\x1bescape\x7fdel\x9fapc",
    "replacement \ufffd char and private use \ue000\uf8ff",
    "a" * 99,
    "b" * 100,
    "c" * 101,
    "é" * 60 + " " + "é" * 101,
    "supercalifragilisticexpialidocious " * 3,
    "Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "x" * 250 + " short",
    "URL https://example.com/path?query=1&b=2#frag and email name@example.org",
    "Numbers 3.14159 1,000,000 1e-10 0x1F 42nd 3rd",
    "don't won't can't it's I'm you're they've we'll",
    "UPPER lower MiXeD CamelCase snake_case kebab-case",
    "Ελληνικά: ΑΒΓΔ αβγδ ΣΑΣ σας ς",
    "Русский текст: Привет, мир! Ёё",
    "العربية: مرحبا بالعالم",
    "עברית: שלום עולם",
    "हिन्दी: नमस्ते दुनिया",
    "ไทย: สวัสดีชาวโลก",
    "Tiếng Việt: Xin chào thế giới",
    "[CLS] [SEP] [MASK] [PAD] [UNK] <unk> </w> ##ing",
    "ﬁ ﬂ ligatures, ² ³ superscripts, ½ fractions, Ⅳ roman, ① circled",
    "Full-width ＡＢＣ１２３！",
    "\u0301 leading combining mark",
    "trailing combining mark e\u0301",
    "Ǆ ǅ ǆ title case, ΐ ΰ, ǰ",
    "a.b.c d-e-f g/h/i j\\k",
    "   leading and trailing spaces   ",
    "newline\nin\nthe\nmiddle",
    "CJK ext 𠀀𠀁 and compat 豈更",
    "𝐁𝐨𝐥𝐝 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 mathematical letters",
    "Ｋａｔａｋａｎａ ｶﾀｶﾅ half-width",
    "naïve coöperate reëlect",
    "¿Qué tal? ¡Muy bien!",
    "It costs 5$ or 4€ — that's ~10% off…",
    "🙂",
    ".",
    "a",
    "The end.",
]
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _train_hf(kind, lowercase, size, directory):
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE, WordPiece

    if kind == "wordpiece":
        tok = Tokenizer(WordPiece(unk_token="[UNK]"))
        trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=WORDPIECE_SPECIALS)
    elif kind == "bpe":
        tok = Tokenizer(BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
        trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=["<unk>"],
                                      end_of_word_suffix="</w>", limit_alphabet=200)
    else:  # GPT-2 byte level: no normalization, all 256 bytes in the vocabulary
        tok = Tokenizer(BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=["<|endoftext|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    if kind != "byte_level":
        tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # Train on the corpus minus a few lines, so that some words are unknown.
    tok.train_from_iterator(CORPUS[:40] * 3, trainer)
    os.makedirs(directory)
    if kind == "wordpiece":
        vocab = sorted(tok.get_vocab().items(), key=lambda item: item[1])
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as file:
            file.writelines(token + "\n" for token, _ in vocab)
    else:
        tok.model.save(directory)
    return directory


@pytest.fixture(scope="module")
def vocab_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("vocab")
    return {
        "wordpiece_uncased": _train_hf("wordpiece", True, 400, str(root / "wp_uncased")),
        "wordpiece_cased": _train_hf("wordpiece", False, 500, str(root / "wp_cased")),
        "bpe": _train_hf("bpe", True, 500, str(root / "bpe")),
        "byte_level": _train_hf("byte_level", False, 800, str(root / "byte_level")),
    }


@pytest.fixture(scope="module")
def wordpiece(vocab_dirs):
    return {lower: tokenizers.WordPieceTokenizer(
        os.path.join(vocab_dirs[f"wordpiece_{'uncased' if lower else 'cased'}"], "vocab.txt"),
        lowercase=lower) for lower in (True, False)}


@pytest.fixture(scope="module")
def hf_wordpiece(vocab_dirs):
    import transformers

    # split_special_tokens: "[MASK]" in text is text, as in ours (see test_special_token_text).
    return {lower: transformers.BertTokenizer.from_pretrained(
        vocab_dirs[f"wordpiece_{'uncased' if lower else 'cased'}"], do_lower_case=lower,
        split_special_tokens=True) for lower in (True, False)}


@pytest.fixture(scope="module")
def gpt(vocab_dirs):
    return tokenizers.from_huggingface(vocab_dirs["bpe"])


@pytest.fixture(scope="module")
def hf_gpt(vocab_dirs):
    import transformers

    return transformers.OpenAIGPTTokenizer.from_pretrained(vocab_dirs["bpe"],
                                                           split_special_tokens=True)


@pytest.fixture(scope="module")
def byte_level(vocab_dirs):
    directory = vocab_dirs["byte_level"]
    return {prefix: tokenizers.ByteLevelBPETokenizer(
        os.path.join(directory, "vocab.json"), os.path.join(directory, "merges.txt"),
        add_prefix_space=prefix) for prefix in (False, True)}


@pytest.fixture(scope="module")
def hf_byte_level(vocab_dirs):
    import transformers

    return {prefix: transformers.GPT2Tokenizer.from_pretrained(
        vocab_dirs["byte_level"], add_prefix_space=prefix, split_special_tokens=True)
        for prefix in (False, True)}


def _ours(tokenizer, texts):
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    return ids.to_list(), [list(zip(s, e)) for s, e in zip(starts.to_list(), ends.to_list())]


def _theirs(hf, texts):
    encoded = hf(texts, add_special_tokens=False, return_offsets_mapping=True)
    return encoded["input_ids"], [[tuple(o) for o in offsets]
                                  for offsets in encoded["offset_mapping"]]


def _assert_same(texts, ours, theirs):
    mismatches = [(text, o, t) for text, o, t in zip(texts, ours, theirs) if o != t]
    assert not mismatches, f"{len(mismatches)}/{len(texts)} lines differ, first: {mismatches[0]}"


def _tokenizer_json_only(vocab_dirs, kind, directory):
    """The folder transformers 5 saves for a fast tokenizer: tokenizer.json and
    tokenizer_config.json, no vocab.txt / vocab.json / merges.txt."""
    import transformers

    source = vocab_dirs[kind]
    if kind.startswith("wordpiece"):
        fast = transformers.BertTokenizerFast(os.path.join(source, "vocab.txt"),
                                              do_lower_case=kind == "wordpiece_uncased")
    elif kind == "bpe":
        fast = transformers.OpenAIGPTTokenizerFast(os.path.join(source, "vocab.json"),
                                                   os.path.join(source, "merges.txt"))
    else:
        fast = transformers.GPT2TokenizerFast(os.path.join(source, "vocab.json"),
                                              os.path.join(source, "merges.txt"))
    fast.save_pretrained(directory)
    for name in ("vocab.txt", "vocab.json", "merges.txt"):
        if os.path.exists(os.path.join(directory, name)):
            os.remove(os.path.join(directory, name))
    assert "tokenizer.json" in os.listdir(directory)
    return directory


@pytest.mark.parametrize("kind", ["wordpiece_uncased", "wordpiece_cased", "bpe", "byte_level"])
def test_a_tokenizer_json_only_folder_gives_the_ids_of_auto_tokenizer(vocab_dirs, tmp_path,
                                                                      kind):
    """tokenizer.json alone (what transformers 5 saves): the vocabulary, merges and the
    normalizer's casing read from it; ids and offsets equal AutoTokenizer's on the folder."""
    import transformers

    folder = _tokenizer_json_only(vocab_dirs, kind, str(tmp_path / kind))
    ours = tokenizers.from_huggingface(folder)
    expected = {"wordpiece_uncased": tokenizers.WordPieceTokenizer,
                "wordpiece_cased": tokenizers.WordPieceTokenizer, "bpe": tokenizers.GPTTokenizer,
                "byte_level": tokenizers.ByteLevelBPETokenizer}[kind]
    assert type(ours) is expected
    theirs = transformers.AutoTokenizer.from_pretrained(folder, split_special_tokens=True)
    ids, offsets = _ours(ours, CORPUS)
    their_ids, their_offsets = _theirs(theirs, CORPUS)
    _assert_same(CORPUS, ids, their_ids)
    _assert_same(CORPUS, offsets, their_offsets)
    assert ours.vocabulary_size() == len(theirs)


def test_tokenizer_json_that_zoo_cannot_reproduce_is_refused(tmp_path):
    import json

    spec = {"normalizer": {"type": "NFKC"}, "model": {"type": "WordPiece", "vocab": {"a": 0}}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="tokenizer.json: a NFKC normalizer: zoo reproduces "
                                         "BERT's normalizer"):
        tokenizers.from_huggingface(str(tmp_path))
    spec = {"model": {"type": "Unigram", "vocab": {"a": 0}}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="a 'Unigram' model; zoo reads WordPiece and BPE"):
        tokenizers.from_huggingface(str(tmp_path))
    spec = {"model": {"type": "WordPiece", "vocab": {"a": 0, "b": 0}}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="model.vocab ids must be 0..1, each once; 'b' has 0"):
        tokenizers.from_huggingface(str(tmp_path))


# --- Parity with transformers on the corpus ---

@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_wordpiece_ids_and_offsets_match_transformers(wordpiece, hf_wordpiece, lowercase):
    ids, offsets = _ours(wordpiece[lowercase], CORPUS)
    hf_ids, hf_offsets = _theirs(hf_wordpiece[lowercase], CORPUS)
    _assert_same(CORPUS, ids, hf_ids)
    _assert_same(CORPUS, offsets, hf_offsets)
    unk = wordpiece[lowercase].unk_token_id
    assert sum(row.count(unk) for row in ids) > 10  # the unknown-word paths are exercised


def test_gpt_ids_and_offsets_match_transformers(gpt, hf_gpt):
    ids, offsets = _ours(gpt, CORPUS)
    hf_ids, hf_offsets = _theirs(hf_gpt, CORPUS)
    _assert_same(CORPUS, ids, hf_ids)
    _assert_same(CORPUS, offsets, hf_offsets)
    assert sum(row.count(gpt.unk_token_id) for row in ids) > 10


@pytest.mark.parametrize("add_prefix_space", [False, True], ids=["plain", "prefix_space"])
def test_byte_level_ids_and_offsets_match_transformers(byte_level, hf_byte_level,
                                                       add_prefix_space):
    tokenizer, hf = byte_level[add_prefix_space], hf_byte_level[add_prefix_space]
    ids, offsets = _ours(tokenizer, CORPUS)
    hf_ids, hf_offsets = _theirs(hf, CORPUS)
    _assert_same(CORPUS, ids, hf_ids)
    _assert_same(CORPUS, offsets, hf_offsets)
    detokenized = [t.decode("utf-8") for t in tokenizer.detokenize(tokenizer(CORPUS)).numpy()]
    expected = [hf.decode(row) for row in hf_ids]
    assert detokenized == expected
    if not add_prefix_space:
        assert detokenized == CORPUS  # byte-level BPE is lossless


def test_detokenize_matches_transformers_decoders(wordpiece, hf_wordpiece, gpt, hf_gpt):
    from tokenizers import decoders

    wordpiece_decoder = decoders.WordPiece(prefix="##", cleanup=False)
    for tokenizer, hf, decode in (
            (wordpiece[True], hf_wordpiece[True],
             lambda ids, hf: wordpiece_decoder.decode(hf.convert_ids_to_tokens(ids))),
            (gpt, hf_gpt, lambda ids, hf: hf.decode(ids))):
        ids = tokenizer(CORPUS)
        ours = [text.decode("utf-8") for text in tokenizer.detokenize(ids).numpy()]
        assert ours == [decode(row, hf) for row in ids.to_list()]


def test_special_token_text_is_plain_text(wordpiece, vocab_dirs):
    """Documented difference: transformers by default turns "[MASK]" in the text into the special
    token; ours (like transformers with split_special_tokens=True) tokenizes it as text."""
    import transformers

    text = "a [MASK] b"
    default = transformers.BertTokenizer.from_pretrained(vocab_dirs["wordpiece_uncased"])
    ours = wordpiece[True]([text]).to_list()[0]
    assert default(text, add_special_tokens=False)["input_ids"][1] == wordpiece[True].mask_token_id
    assert ours == wordpiece[True](["a [ MASK ] b"]).to_list()[0]


# --- Character tables: every code point, against transformers ---

# Planes 4-13 have never had an assigned character; only the exhaustive tests visit them.
UNASSIGNED_PLANES = range(0x40000, 0xE0000)


def _check_code_points(lowercase, strip_accents, planes):
    """Each code point between two letters normalizes and splits as in transformers.

    `planes`: "assigned" (all but UNASSIGNED_PLANES), "unassigned" (those) or "all".
    """
    from tokenizers import normalizers, pre_tokenizers

    points = [cp for cp in range(unicode.MAX_CODE_POINT + 1) if not 0xD800 <= cp <= 0xDFFF
              and (planes == "all" or (cp in UNASSIGNED_PLANES) == (planes == "unassigned"))]
    step = 50_000
    texts = [" ".join("a" + chr(cp) + "b" for cp in points[i:i + step])
             for i in range(0, len(points), step)]
    normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=strip_accents)
    splitter = pre_tokenizers.BertPreTokenizer()
    theirs = [[word for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text))]
              for text in texts]
    basic = tokenizers.basic.BasicTokenizer(lowercase, strip_accents)
    ours = tf.strings.reduce_join(basic.words(tf.constant(texts)), axis=-1, separator=" ")
    for text_ours, text_theirs in zip(ours.numpy(), theirs):
        text_ours = text_ours.decode("utf-8").split(" ") if text_ours else []
        if text_ours != text_theirs:
            i = next(i for i, (a, b) in enumerate(zip(text_ours, text_theirs)) if a != b)
            pytest.fail(f"lowercase={lowercase} strip_accents={strip_accents}: words "
                        f"{text_ours[i - 1:i + 2]} != transformers {text_theirs[i - 1:i + 2]}")


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_unicode_tables_match_transformers(lowercase):
    _check_code_points(lowercase, lowercase, planes="assigned")


@pytest.mark.slow
@pytest.mark.parametrize("lowercase,strip_accents", [(True, True), (False, False), (True, False),
                                                     (False, True)])
def test_unicode_tables_match_transformers_exhaustive(lowercase, strip_accents):
    """Every code point for every setting: the two settings of the test above visit only the
    planes it leaves out (it checks the others), the mixed two visit all."""
    covered = lowercase == strip_accents
    _check_code_points(lowercase, strip_accents, planes="unassigned" if covered else "all")


# --- Fuzzing ---

def _nfd_reorders(text):
    """The documented exception: NFD re-orders combining marks across characters."""
    per_char = "".join(unicodedata.normalize("NFD", ch) for ch in text)
    return unicodedata.normalize("NFD", text) != per_char


FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
texts_strategy = st.lists(st.text(max_size=40), min_size=1, max_size=8)


def _assert_same_as_transformers(ours, theirs, texts):
    ids, offsets = _ours(ours, texts)
    hf_ids, hf_offsets = _theirs(theirs, texts)
    assert ids == hf_ids, texts
    assert offsets == hf_offsets, texts


@FUZZ
@given(texts=texts_strategy)
def test_fuzz_wordpiece_matches_transformers(wordpiece, hf_wordpiece, texts):
    assume(not any(_nfd_reorders(text) for text in texts))
    for lowercase in (True, False):
        _assert_same_as_transformers(wordpiece[lowercase], hf_wordpiece[lowercase], texts)


@FUZZ
@given(texts=texts_strategy)
def test_fuzz_gpt_matches_transformers(gpt, hf_gpt, texts):
    assume(not any(_nfd_reorders(text) for text in texts))
    _assert_same_as_transformers(gpt, hf_gpt, texts)


def _newer_than_unicode_14(text):
    """The byte-level exception: RE2's letter/digit classes predate transformers' (Unicode 16);
    every code point involved is unassigned in Python 3.11's Unicode 14 tables."""
    return any(unicodedata.category(ch) == "Cn" for ch in text)


@FUZZ
@given(texts=texts_strategy)
def test_fuzz_byte_level_matches_transformers(byte_level, hf_byte_level, texts):
    assume(not any(_newer_than_unicode_14(text) for text in texts))
    for prefix in (False, True):
        _assert_same_as_transformers(byte_level[prefix], hf_byte_level[prefix], texts)


@pytest.mark.slow
def test_byte_level_class_differences_are_all_newer_than_unicode_14():
    """Pins the documented exception: where RE2 and transformers' Oniguruma disagree on
    `\\s`, `\\p{L}`, `\\p{N}`, the code point is unassigned in Unicode 14."""
    from tokenizers import Regex, pre_tokenizers

    chars = [chr(cp) for cp in range(unicode.MAX_CODE_POINT + 1) if not 0xD800 <= cp <= 0xDFFF]
    whitespace = "[" + tokenizers.bpe._WS_CLASS + "]"
    for theirs, ours in ((r"\s", whitespace), (r"\p{L}", r"\p{L}"), (r"\p{N}", r"\p{N}")):
        removed = pre_tokenizers.Split(Regex(theirs), behavior="removed")
        kept = set("".join(word for word, _ in removed.pre_tokenize_str("".join(chars))))
        matched = tf.strings.regex_full_match(tf.constant(chars), ours).numpy()
        differ = [ch for ch, match in zip(chars, matched) if bool(match) == (ch in kept)]
        assert all(unicodedata.category(ch) == "Cn" for ch in differ), theirs
        assert theirs != r"\s" or not differ


@FUZZ
@given(data=st.lists(st.binary(max_size=60), min_size=1, max_size=8))
def test_fuzz_bytes_do_not_crash(wordpiece, gpt, byte_level, data):
    """Arbitrary bytes (invalid UTF-8 included): ids within the vocabulary, offsets in range."""
    lengths = [len(tf.strings.unicode_decode(d, "UTF-8", errors="replace")) for d in data]
    for tokenizer in (wordpiece[True], wordpiece[False], gpt, byte_level[False]):
        ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(data))
        values = ids.flat_values.numpy()
        assert ((values >= 0) & (values < tokenizer.vocabulary_size())).all()
        for row_starts, row_ends, length in zip(starts.to_list(), ends.to_list(), lengths):
            assert all(0 <= s < e <= length for s, e in zip(row_starts, row_ends))
        tokenizer.detokenize(ids)


# --- Shapes, graph mode, serialization ---

def test_input_shapes(wordpiece):
    tokenizer = wordpiece[True]
    batch = tokenizer(["hello world", "the end."])
    assert isinstance(batch, tf.RaggedTensor) and batch.dtype == tf.int32
    assert tokenizer("hello world").numpy().tolist() == batch[0].numpy().tolist()
    dense = tokenizer(tf.constant([["hello world", "the end."], ["", "a"]]))
    assert dense.shape[:2] == [2, 2] and dense[0, 1].numpy().tolist() == batch[1].numpy().tolist()
    ragged = tokenizer(tf.ragged.constant([["hello world", "the end."], ["a"]]))
    assert ragged.to_list()[0] == batch.to_list()
    assert tokenizer(tf.constant([], tf.string)).shape[0] == 0
    with pytest.raises(TypeError, match="expects strings"):
        tokenizer(tf.constant([1, 2]))


def _pick(name, wordpiece, gpt, byte_level):
    return {"wordpiece": wordpiece[True], "gpt": gpt, "byte_level": byte_level[True]}[name]


@pytest.mark.parametrize("name", ["wordpiece", "gpt", "byte_level"])
def test_tf_data_matches_eager(name, wordpiece, gpt, byte_level):
    tokenizer = _pick(name, wordpiece, gpt, byte_level)
    dataset = tf.data.Dataset.from_tensor_slices(CORPUS).batch(7).map(
        lambda texts: tokenizer.tokenize_with_offsets(texts))
    graph = [[part.to_list() for part in batch] for batch in dataset]
    eager = [[part.to_list() for part in tokenizer.tokenize_with_offsets(CORPUS[i:i + 7])]
             for i in range(0, len(CORPUS), 7)]
    assert graph == eager


@pytest.fixture(scope="module")
def served_ids(wordpiece, gpt, byte_level, tmp_path_factory):
    """{name: ids of CORPUS} from each tokenizer saved as a SavedModel and loaded as TF Serving
    would: in a fresh process with only tensorflow and tensorflow_text's ops (one process, one
    TensorFlow start-up, for the three)."""
    tmp = tmp_path_factory.mktemp("saved_tokenizers")
    names = ("wordpiece", "gpt", "byte_level")

    def servable(tokenizer):
        module = tf.Module()
        module.tokenizer = tokenizer
        module.serve = tf.function(lambda texts: tokenizer(texts).to_tensor(-1),
                                   input_signature=[tf.TensorSpec([None], tf.string)])
        return module

    for name in names:
        tf.saved_model.save(servable(_pick(name, wordpiece, gpt, byte_level)), str(tmp / name))
    script = (
        "import json, sys\n"
        "import numpy as np, tensorflow as tf, tensorflow_text  # noqa: F401 (registers ops)\n"
        "for name in sys.argv[2:]:\n"
        "    loaded = tf.saved_model.load(name)\n"
        "    np.save(name + '.npy', loaded.serve(tf.constant(json.loads(sys.argv[1]))).numpy())\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('zoo', 'keras_hub')]\n"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(CORPUS), *names],
                          cwd=str(tmp), env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {name: np.load(tmp / f"{name}.npy") for name in names}


@pytest.mark.parametrize("name", ["wordpiece", "gpt", "byte_level"])
def test_saved_model_round_trip(name, wordpiece, gpt, byte_level, served_ids):
    tokenizer = _pick(name, wordpiece, gpt, byte_level)
    expected = tokenizer(CORPUS).to_tensor(-1).numpy()  # equal to transformers: parity tests
    np.testing.assert_array_equal(served_ids[name], expected)


@pytest.mark.parametrize("name", ["wordpiece", "gpt", "byte_level"])
def test_keras_config_round_trip(name, wordpiece, gpt, byte_level):
    import keras

    tokenizer = {"wordpiece": wordpiece[False], "byte_level": byte_level[True],
                 "gpt": tokenizers.GPTTokenizer(
                     dict(zip(gpt.get_vocabulary(), range(gpt.vocabulary_size()))), gpt.merges,
                     special_tokens=tokenizers.GPT1_SPECIAL_TOKENS)}[name]
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(
        tokenizer))
    assert type(restored) is type(tokenizer)
    assert restored.get_vocabulary() == tokenizer.get_vocabulary()
    assert restored(CORPUS).to_list() == tokenizer(CORPUS).to_list()


def test_vocabulary_lookups_and_special_tokens(wordpiece, gpt):
    tokenizer = wordpiece[True]
    assert [tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id,
            tokenizer.sep_token_id, tokenizer.mask_token_id] == [0, 1, 2, 3, 4]
    assert tokenizer.id_to_token(tokenizer.token_to_id("[CLS]")) == "[CLS]"
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tokenizer.token_to_id("no-such-token")
    with pytest.raises(ValueError, match="mask_token='<mask>'"):
        tokenizers.WordPieceTokenizer(tokenizer.get_vocabulary(), mask_token="<mask>")
    extended = tokenizers.GPTTokenizer(
        dict(zip(gpt.get_vocabulary(), range(gpt.vocabulary_size()))), gpt.merges,
        special_tokens=tokenizers.GPT1_SPECIAL_TOKENS)
    assert [extended.token_to_id(t) for t in tokenizers.GPT1_SPECIAL_TOKENS] == [
        gpt.vocabulary_size(), gpt.vocabulary_size() + 1, gpt.vocabulary_size() + 2]
    assert extended(CORPUS).to_list() == gpt(CORPUS).to_list()


# --- Loading ---

def test_from_huggingface_reads_config(vocab_dirs, tmp_path):
    directory = tmp_path / "cased"
    directory.mkdir()
    (directory / "vocab.txt").write_text(
        open(os.path.join(vocab_dirs["wordpiece_cased"], "vocab.txt"), encoding="utf-8").read(),
        encoding="utf-8")
    assert tokenizers.from_huggingface(str(directory)).lowercase is True  # transformers' default
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": False, "unk_token": {"content": "[UNK]"}}))
    assert tokenizers.from_huggingface(str(directory)).lowercase is False
    assert isinstance(tokenizers.from_huggingface(vocab_dirs["bpe"]), tokenizers.GPTTokenizer)
    with open(os.path.join(vocab_dirs["byte_level"], "tokenizer_config.json"), "w") as file:
        json.dump({"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True}, file)
    byte_level = tokenizers.from_huggingface(vocab_dirs["byte_level"])
    assert isinstance(byte_level, tokenizers.ByteLevelBPETokenizer) and byte_level.add_prefix_space
    os.remove(os.path.join(vocab_dirs["byte_level"], "tokenizer_config.json"))
    with pytest.raises(FileNotFoundError, match="tokenizer_config.json"):
        tokenizers.from_directory(vocab_dirs["bpe"])
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        tokenizers.from_huggingface(str(tmp_path))


def test_bad_merges_name_the_file(vocab_dirs, tmp_path):
    merges = tmp_path / "merges.txt"
    merges.write_text("#version: 0.2\nq z\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges.txt: merge 1 'q z'"):
        tokenizers.GPTTokenizer(os.path.join(vocab_dirs["bpe"], "vocab.json"), str(merges))


# --- Vocabulary training ---

@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    lines = [line.replace("\n", " ").replace("\r", " ").replace("\x0b", " ").replace(
        "\x0c", " ").replace("\u2028", " ").replace("\u2029", " ").replace("\x85", " ")
        for line in CORPUS]
    path.write_text("\n".join(lines * 4) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("kind,lowercase", [("wordpiece", True), ("wordpiece", False),
                                            ("bpe", True)])
def test_train_vocabulary_cli_round_trip(kind, lowercase, corpus_file, tmp_path):
    import transformers

    from zoo_cli.main import main

    out = tmp_path / "vocab"
    # Cased, the corpus's characters and their "##" forms alone make 657 WordPiece tokens.
    size = 600 if lowercase else 700
    args = ["data", "vocab", "--corpus", corpus_file, "--size", str(size), "--kind", kind,
            "--out", str(out)] + ([] if lowercase else ["--no-lowercase"])
    assert main(args) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["vocab"]  # no staging directory left
    tokenizer = tokenizers.from_directory(str(out))
    lines = open(corpus_file, encoding="utf-8").read().split("\n")[:-1]
    ids = tokenizer(lines)
    if kind == "wordpiece":
        assert 500 <= tokenizer.vocabulary_size() <= 1200
        assert tokenizer.vocabulary_size() == size
        hf = transformers.BertTokenizer.from_pretrained(str(out), split_special_tokens=True)
        # Every word of the training corpus is covered: detokenizing gives the words back.
        words = tokenizer._basic.words(tf.constant(lines)).to_list()
        expected = [" ".join(w.decode("utf-8") for w in row) for row in words]
        long_words = [i for i, row in enumerate(words) if any(len(w.decode()) > 100
                                                              for w in row)]
        detokenized = [t.decode("utf-8") for t in tokenizer.detokenize(ids).numpy()]
        assert [d for i, d in enumerate(detokenized) if i not in long_words] == [
            e for i, e in enumerate(expected) if i not in long_words]
    else:
        assert tokenizer.vocabulary_size() == 600
        hf = transformers.OpenAIGPTTokenizer.from_pretrained(str(out), split_special_tokens=True)
        assert tokenizer.unk_token_id not in ids.flat_values.numpy()
    assert ids.to_list() == hf(lines, add_special_tokens=False)["input_ids"]
    assert tokenizer.lowercase is lowercase


def _vocabulary_file_tokens(out, kind):
    """The tokens in the files `zoo data vocab` wrote, read as transformers reads them."""
    if kind == "wordpiece":
        return (out / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    return list(json.loads((out / "vocab.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
@pytest.mark.parametrize("size", [550, 650])
def test_zoo_data_vocab_gives_the_size_asked(kind, size, corpus_file, tmp_path, capsys):
    """`--size N` is N tokens, special tokens included (tensorflow-text's own threshold search
    gave 8,311 for 2,000 on the samples). On this corpus WordPiece has 517 to 707 tokens: its
    characters in both forms, and every word of it a token."""
    from zoo_cli.main import main

    out = tmp_path / "vocab"
    assert main(["data", "vocab", "--corpus", corpus_file, "--size", str(size), "--kind", kind,
                 "--out", str(out)]) == 0
    tokens = _vocabulary_file_tokens(out, kind)
    assert len(tokens) == len(set(tokens)) == size
    assert f"vocabulary of {size} tokens" in capsys.readouterr().out


def test_a_wordpiece_vocabulary_is_the_same_on_every_run(corpus_file, tmp_path):
    """The same corpus and size give the same vocab.txt, byte for byte (Hugging Face's
    WordPieceTrainer, tried for the size, broke its ties differently from run to run)."""
    written = []
    for run in range(2):
        out = tmp_path / f"vocab{run}"
        tokenizers.train_vocabulary([corpus_file], size=700, kind="wordpiece", out=str(out))
        written.append((out / "vocab.txt").read_bytes())
    assert written[0] == written[1]
    assert len(written[0].decode("utf-8").split("\n")[:-1]) == 700


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_zoo_data_vocab_is_smaller_only_when_the_corpus_runs_out(kind, tmp_path, capsys):
    from zoo_cli.main import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    out = tmp_path / "vocab"
    assert main(["data", "vocab", "--corpus", str(corpus), "--size", "1000", "--kind", kind,
                 "--out", str(out)]) == 0
    tokens = _vocabulary_file_tokens(out, kind)
    assert len(tokens) < 1000
    suffix = "" if kind == "wordpiece" else "</w>"
    assert {word + suffix for word in ("the", "cat", "sat", "on", "mat")} <= set(tokens)
    assert "fewer than --size 1000" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_zoo_data_vocab_below_the_alphabet_is_an_error(kind, tmp_path, capsys):
    from zoo_cli.main import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("abcdefghij klmnopqrst\n", encoding="utf-8")
    out = tmp_path / "vocab"
    assert main(["data", "vocab", "--corpus", str(corpus), "--size", "10", "--kind", kind,
                 "--out", str(out)]) == 1
    error = capsys.readouterr().err
    # The 20 letters; wordpiece adds the "##" form of each (tensorflow-text's learner keeps
    # every character in both forms), bpe the "</w>" forms of the 2 ending a word; then the
    # special tokens ([PAD] [UNK] [CLS] [SEP] [MASK]; <unk>).
    least = {"wordpiece": 20 + 20 + 5, "bpe": 20 + 2 + 1}[kind]
    assert "size 10 is too small for the corpus" in error
    assert f"ask for at least {least}" in error, error
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["corpus.txt"]  # no staging left over


def test_train_vocabulary_errors(corpus_file, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        tokenizers.train_vocabulary([str(tmp_path / "missing.txt")], size=10, kind="bpe",
                                    out=str(tmp_path / "out"))
    with pytest.raises(ValueError, match="kind"):
        tokenizers.train_vocabulary([corpus_file], size=10, kind="unigram",
                                    out=str(tmp_path / "out"))


def test_retraining_into_the_same_directory_swaps_it_whole(corpus_file, tmp_path):
    """A BPE vocabulary trained over a WordPiece one leaves no WordPiece file behind."""
    # 600 tokens: the characters of CORPUS alone (and their "##" / "</w>" forms) make over 400.
    out = str(tmp_path / "vocab")
    tokenizers.train_vocabulary([corpus_file], size=600, kind="wordpiece", out=out)
    tokenizers.train_vocabulary([corpus_file], size=600, kind="bpe", out=out)
    assert sorted(os.listdir(out)) == ["merges.txt", "tokenizer_config.json", "vocab.json"]
    assert isinstance(tokenizers.from_directory(out), tokenizers.GPTTokenizer)
    assert [p for p in os.listdir(tmp_path) if p != "vocab"] == []  # no staging left over
    unrelated = tmp_path / "notes"
    unrelated.mkdir()
    (unrelated / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a vocabulary directory"):
        tokenizers.train_vocabulary([corpus_file], size=600, kind="bpe", out=str(unrelated))
    assert os.listdir(unrelated) == ["keep.txt"]


def test_the_suites_bpe_vocabulary_is_the_one_learnt_from_the_samples(sample_data, tmp_path):
    """tests/data/samples_bpe (the suite's GPT-1 vocabulary, tests/conftest.py) against
    `train_vocabulary` on the same samples now: the same tokens and the same merges. Their ids
    and the merges' order may differ (the trainer's ties fall in its per-process hash order)."""
    tokenizers.train_vocabulary(sample_texts(sample_data["root"]), size=1500, kind="bpe",
                                out=str(tmp_path / "bpe"))
    learnt, kept = str(tmp_path / "bpe"), SAMPLES_BPE
    for name in ("vocab.json", "merges.txt"):
        with open(os.path.join(learnt, name)) as a, open(os.path.join(kept, name)) as b:
            if name == "vocab.json":
                assert set(json.load(a)) == set(json.load(b))
            else:
                assert set(a.read().splitlines()) == set(b.read().splitlines())
