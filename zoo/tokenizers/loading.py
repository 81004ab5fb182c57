"""Build tokenizers from vocabulary files: Hugging Face directories and `zoo data vocab` output."""

import json
import os

from zoo import files
from zoo.tokenizers.bpe import GPTTokenizer
from zoo.tokenizers.wordpiece import WordPieceTokenizer

CONFIG_FILE = "tokenizer_config.json"  # transformers' name, so both libraries read our output

# transformers tokenizer classes whose BPE is byte-level (GPT-2 style), not GPT-1's `</w>` BPE.
_BYTE_LEVEL_CLASSES = ("GPT2Tokenizer", "GPT2TokenizerFast", "RobertaTokenizer",
                       "RobertaTokenizerFast")


def from_huggingface(path, **overrides):
    """Our tokenizer for a Hugging Face model directory, from its vocabulary files.

    vocab.txt gives a `WordPieceTokenizer`; vocab.json + merges.txt a `GPTTokenizer` (or a
    `ByteLevelBPETokenizer` when tokenizer_config.json names a GPT-2/RoBERTa tokenizer class).
    tokenizer_config.json, when present, sets lower-casing, accent stripping, CJK splitting and
    special tokens as transformers reads them; missing keys take transformers' defaults.

    Args:
        path: the directory.
        **overrides: constructor arguments that win over the config (e.g. `lowercase=False`).

    Example:
        >>> import os, tempfile
        >>> path = tempfile.mkdtemp()
        >>> with open(os.path.join(path, "vocab.txt"), "w") as f:
        ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"]))
        >>> from_huggingface(path)(["Hi!"]).to_list()
        [[5, 1]]
    """
    return _load(path, require_config=False, overrides=overrides)


def from_directory(path, **overrides):
    """Our tokenizer for a directory written by `train_vocabulary` (`zoo data vocab`).

    Same files as a Hugging Face directory (see `from_huggingface`), but tokenizer_config.json
    is required, so a trained vocabulary always loads with the settings it was trained with.

    Example:
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
            from zoo.tokenizers.bpe import ByteLevelBPETokenizer

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
    raise FileNotFoundError(f"{path}: no vocabulary files; expected vocab.txt (WordPiece) or "
                            f"vocab.json + merges.txt (BPE), found {sorted(names)}")


def _token(value, where, key):
    """transformers writes special tokens as strings or as AddedToken dicts {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string or {{'content': ...}}, got {value!r}")
    return value
