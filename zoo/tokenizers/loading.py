"""Build tokenizers from vocabulary files: Hugging Face directories and `zoo data vocab` output."""

import json
import os

from zoo import files, hub
from zoo.tokenizers.bpe import ByteLevelBPETokenizer, GPTTokenizer
from zoo.tokenizers.wordpiece import WordPieceTokenizer

CONFIG_FILE = "tokenizer_config.json"  # transformers' name, so both libraries read our output
TOKENIZER_JSON = "tokenizer.json"  # the `tokenizers` library's whole-pipeline file

# transformers tokenizer classes whose BPE is byte-level (GPT-2 style), not GPT-1's `</w>` BPE.
_BYTE_LEVEL_CLASSES = ("GPT2Tokenizer", "GPT2TokenizerFast", "RobertaTokenizer",
                       "RobertaTokenizerFast")


def from_huggingface(path, **overrides):
    """Our tokenizer for a Hugging Face model directory, from its vocabulary files.

    vocab.txt gives a `WordPieceTokenizer`; vocab.json + merges.txt a `GPTTokenizer` (or a
    `ByteLevelBPETokenizer` when tokenizer_config.json names a GPT-2/RoBERTa tokenizer class);
    without those, tokenizer.json (its WordPiece or BPE model and BertNormalizer settings).
    tokenizer_config.json, when present, sets lower-casing, accent stripping, CJK splitting and
    special tokens as transformers reads them; missing keys take transformers' defaults.

    Args:
        path: the directory, or a checkpoint's name (`hf://ORG/NAME[@REVISION]`, a pretrained
            preset) that `zoo.hub` downloads.
        **overrides: constructor arguments that win over the config (e.g. `lowercase=False`).

    Examples:
        >>> import os, tempfile
        >>> path = tempfile.mkdtemp()
        >>> with open(os.path.join(path, "vocab.txt"), "w") as f:
        ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"]))
        >>> from_huggingface(path)(["Hi!"]).to_list()
        [[5, 1]]
    """
    return _load(hub.resolve(path), require_config=False, overrides=overrides)


def from_directory(path, **overrides):
    """Our tokenizer for a directory written by `train_vocabulary` (`zoo data vocab`).

    Same files as a Hugging Face directory (see `from_huggingface`), but tokenizer_config.json
    is required, so a trained vocabulary always loads with the settings it was trained with.

    Examples:
        >>> tokenizer = from_directory("runs/vocab")  # doctest: +SKIP
    """
    return _load(path, require_config=True, overrides=overrides)


def _load(path, require_config, overrides):
    if not files.isdir(path):
        raise FileNotFoundError(f"{path}: not a directory")
    names = set(files.listdir(path))
    config = {}
    if CONFIG_FILE in names:
        with files.open(os.path.join(path, CONFIG_FILE), encoding="utf-8") as file:
            config = json.load(file)
    elif require_config:
        raise FileNotFoundError(f"{os.path.join(path, CONFIG_FILE)}: missing; expected a "
                                "directory written by `zoo data vocab`")
    if "vocab.txt" in names:
        arguments = dict(lowercase=config.get("do_lower_case", True),
                         strip_accents=config.get("strip_accents"),
                         split_on_cjk=config.get("tokenize_chinese_chars", True))
        for name, default in (("unk_token", "[UNK]"), ("cls_token", "[CLS]"),
                              ("sep_token", "[SEP]"), ("pad_token", "[PAD]"),
                              ("mask_token", "[MASK]")):
            arguments[name] = _token(config.get(name, default), os.path.join(path, CONFIG_FILE),
                                     name)
        arguments.update(overrides)
        return WordPieceTokenizer(os.path.join(path, "vocab.txt"), **arguments)
    if {"vocab.json", "merges.txt"} <= names:
        vocabulary, merges = os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")
        if config.get("tokenizer_class") in _BYTE_LEVEL_CLASSES:
            arguments = dict(add_prefix_space=config.get("add_prefix_space", False))
            arguments.update(overrides)
            return ByteLevelBPETokenizer(vocabulary, merges, **arguments)
        # transformers' OpenAIGPTTokenizer always lower-cases; a cased vocabulary trained by
        # `zoo data vocab --no-lowercase` says so in its config.
        arguments = dict(lowercase=config.get("do_lower_case", True),
                         unk_token=_token(config.get("unk_token", "<unk>"),
                                          os.path.join(path, CONFIG_FILE), "unk_token"))
        arguments.update(overrides)
        return GPTTokenizer(vocabulary, merges, **arguments)
    if TOKENIZER_JSON in names:
        return _from_tokenizer_json(os.path.join(path, TOKENIZER_JSON), config,
                                    os.path.join(path, CONFIG_FILE), overrides)
    raise FileNotFoundError(f"{path}: no vocabulary files; expected vocab.txt (WordPiece), "
                            f"vocab.json + merges.txt (BPE) or tokenizer.json, found "
                            f"{sorted(names)}")


def _from_tokenizer_json(where, config, config_path, overrides):
    """Our tokenizer for a `tokenizers` library tokenizer.json (what transformers 5 saves, often
    alone): its model's vocabulary (and merges), its normalizer's casing, accents and CJK
    splitting; other special tokens from tokenizer_config.json, as transformers reads them.

    Read by hand: the `tokenizers` library runs the pipeline in Rust, not in a TF graph, and
    exposes no parsed normalizer settings; the file is plain JSON with a documented layout.
    """
    with files.open(where, encoding="utf-8") as file:
        spec = json.load(file)
    model = spec.get("model") or {}
    kind = model.get("type")
    normalizer = _bert_normalizer(spec.get("normalizer"), where)
    vocabulary = model.get("vocab")
    if not isinstance(vocabulary, dict):
        raise ValueError(f"{where}: model.vocab must map tokens to ids, got "
                         f"{type(vocabulary).__name__}")
    if kind == "WordPiece":
        tokens = [None] * len(vocabulary)
        for token, index in vocabulary.items():
            if not isinstance(index, int) or not 0 <= index < len(tokens) or tokens[index]:
                raise ValueError(f"{where}: model.vocab ids must be 0..{len(tokens) - 1}, each "
                                 f"once; {token!r} has {index!r}")
            tokens[index] = token
        arguments = dict(lowercase=normalizer.get("lowercase", True),
                         strip_accents=normalizer.get("strip_accents"),
                         split_on_cjk=normalizer.get("handle_chinese_chars", True),
                         suffix_indicator=model.get("continuing_subword_prefix") or "##",
                         max_input_chars_per_word=model.get("max_input_chars_per_word", 100),
                         unk_token=model.get("unk_token") or "[UNK]")
        for name, default in (("cls_token", "[CLS]"), ("sep_token", "[SEP]"),
                              ("pad_token", "[PAD]"), ("mask_token", "[MASK]")):
            arguments[name] = _token(config.get(name, default), config_path, name)
        arguments.update(overrides)
        return WordPieceTokenizer(tokens, **arguments)
    if kind == "BPE":
        merges = [rule if isinstance(rule, str) else " ".join(rule)
                  for rule in model.get("merges", [])]
        pre_tokenizer = spec.get("pre_tokenizer") or {}
        if pre_tokenizer.get("type") == "ByteLevel":
            arguments = dict(add_prefix_space=pre_tokenizer.get("add_prefix_space", False))
            arguments.update(overrides)
            return ByteLevelBPETokenizer(vocabulary, merges, **arguments)
        if model.get("end_of_word_suffix") != "</w>":
            raise ValueError(f"{where}: a BPE model with end_of_word_suffix "
                             f"{model.get('end_of_word_suffix')!r}: zoo reads GPT-1's `</w>` "
                             "BPE and byte-level BPE")
        arguments = dict(lowercase=normalizer.get("lowercase", True),
                         strip_accents=normalizer.get("strip_accents"),
                         split_on_cjk=normalizer.get("handle_chinese_chars", True),
                         unk_token=model.get("unk_token") or "<unk>")
        arguments.update(overrides)
        return GPTTokenizer(vocabulary, merges, **arguments)
    raise ValueError(f"{where}: a {kind!r} model; zoo reads WordPiece and BPE tokenizers")


def _bert_normalizer(normalizer, where):
    """The settings of a BertNormalizer (alone or in a Sequence); {} for none."""
    if not normalizer:
        return {}
    if normalizer.get("type") == "Sequence":
        found = [n for n in normalizer.get("normalizers", []) if n.get("type") == "BertNormalizer"]
        others = [n.get("type") for n in normalizer.get("normalizers", [])
                  if n.get("type") != "BertNormalizer"]
        if others or len(found) != 1:
            raise ValueError(f"{where}: normalizers {others or 'without BertNormalizer'}: zoo "
                             "reproduces BERT's normalizer (BertNormalizer) only")
        return found[0]
    if normalizer.get("type") != "BertNormalizer":
        raise ValueError(f"{where}: a {normalizer.get('type')} normalizer: zoo reproduces "
                         "BERT's normalizer (BertNormalizer) only")
    return normalizer


def _token(value, where, key):
    """transformers writes special tokens as strings or as AddedToken dicts {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string or {{'content': ...}}, got {value!r}")
    return value
