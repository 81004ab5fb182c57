"""Write a zoo tokenizer as a Hugging Face tokenizer folder that `AutoTokenizer` loads.

The folder holds the vocabulary files (vocab.txt, or vocab.json + merges.txt), tokenizer.json
(the `tokenizers` library's whole pipeline: normalizer, pre-tokenizer, model, post-processor,
decoder) and tokenizer_config.json naming transformers' tokenizer class. The pipeline is built
with the `tokenizers` library from the zoo tokenizer's own settings, so `AutoTokenizer` gives
the ids zoo gives (tests/test_convert.py checks it on awkward text). tokenizer_config.json sets
`split_special_tokens` as zoo reads the task's raw text: "[MASK]" in a sentence is text to the
tokenizers and task exports (True), but the blank to the masked-LM export (False, which is
also what transformers' fill-mask pipeline needs).
"""

import json
import os

from zoo import files
from zoo.tokenizers.bpe import ByteLevelBPETokenizer, GPTTokenizer
from zoo.tokenizers.loading import CONFIG_FILE, TOKENIZER_JSON
from zoo.tokenizers.wordpiece import WordPieceTokenizer


def save_huggingface(tokenizer, path, model_max_length=None, split_special_tokens=True):
    """Write `tokenizer`'s Hugging Face files into the existing folder `path`.

    Args:
        tokenizer: a `WordPieceTokenizer`, `GPTTokenizer` or `ByteLevelBPETokenizer`.
        path: an existing folder (local or remote); files of the same names are replaced.
        model_max_length: the longest input the model takes (its position table), recorded
            for transformers' truncation.
        split_special_tokens: read special-token strings in raw text ("[MASK]") as text, as
            zoo's tokenizers do; False for a masked LM, whose "[MASK]" marks the blanks.

    Returns:
        the names of the files written, sorted.

    Examples:
        >>> import tempfile
        >>> from zoo.tokenizers import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
        >>> save_huggingface(tokenizer, tempfile.mkdtemp())
        ['tokenizer.json', 'tokenizer_config.json', 'vocab.txt']
    """
    if isinstance(tokenizer, WordPieceTokenizer):
        pipeline, config, vocabulary = _wordpiece(tokenizer)
    elif isinstance(tokenizer, (GPTTokenizer, ByteLevelBPETokenizer)):
        pipeline, config, vocabulary = _bpe(tokenizer)
    else:
        raise TypeError(f"a {type(tokenizer).__name__} has no Hugging Face form; expected a "
                        "WordPieceTokenizer, GPTTokenizer or ByteLevelBPETokenizer")
    config.update(split_special_tokens=split_special_tokens, clean_up_tokenization_spaces=False)
    if model_max_length:
        config["model_max_length"] = int(model_max_length)
    texts = {TOKENIZER_JSON: pipeline.to_str(pretty=True),
             CONFIG_FILE: json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False),
             **vocabulary}
    for name, text in texts.items():
        files.write_text(os.path.join(path, name), text + "\n")
    return sorted(texts)


def _special(pipeline, tokens):
    """Mark `tokens` special: never split, skipped when decoding with skip_special_tokens."""
    from tokenizers import AddedToken

    pipeline.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in tokens])


def _wordpiece(tokenizer):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocabulary = tokenizer.get_vocabulary()
    pipeline = Tokenizer(models.WordPiece(
        {token: i for i, token in enumerate(vocabulary)}, unk_token=tokenizer.unk_token,
        continuing_subword_prefix=tokenizer.suffix_indicator,
        max_input_chars_per_word=tokenizer.max_input_chars_per_word))
    pipeline.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=tokenizer.split_on_cjk,
        strip_accents=tokenizer.strip_accents, lowercase=tokenizer.lowercase)
    pipeline.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = tokenizer.cls_token, tokenizer.sep_token
    pipeline.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.cls_token_id), (sep, tokenizer.sep_token_id)])
    pipeline.decoder = decoders.WordPiece(prefix=tokenizer.suffix_indicator, cleanup=False)
    specials = dict(unk_token=tokenizer.unk_token, cls_token=cls, sep_token=sep,
                    pad_token=tokenizer.pad_token, mask_token=tokenizer.mask_token)
    _special(pipeline, list(dict.fromkeys(specials.values())))
    config = dict(tokenizer_class="BertTokenizer", do_lower_case=tokenizer.lowercase,
                  strip_accents=tokenizer.strip_accents,
                  tokenize_chinese_chars=tokenizer.split_on_cjk, **specials)
    return pipeline, config, {"vocab.txt": "\n".join(vocabulary)}


def _bpe(tokenizer):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    vocabulary = tokenizer.get_vocabulary()
    byte_level = isinstance(tokenizer, ByteLevelBPETokenizer)
    base = vocabulary if byte_level else vocabulary[:tokenizer._num_base_tokens]
    ranks = {token: i for i, token in enumerate(base)}
    merges = [tuple(rule.split(" ")) for rule in tokenizer.merges]
    if byte_level:
        pipeline = Tokenizer(models.BPE(ranks, merges, fuse_unk=False))
        pipeline.pre_tokenizer = pre_tokenizers.ByteLevel(
            add_prefix_space=tokenizer.add_prefix_space, use_regex=True)
        pipeline.decoder = decoders.ByteLevel()
        config = dict(tokenizer_class="GPT2Tokenizer", add_prefix_space=tokenizer.add_prefix_space)
    else:
        pipeline = Tokenizer(models.BPE(
            ranks, merges, unk_token=tokenizer.unk_token, continuing_subword_prefix="",
            end_of_word_suffix=tokenizer.end_of_word_suffix, fuse_unk=False))
        pipeline.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=tokenizer.split_on_cjk,
            strip_accents=tokenizer.strip_accents, lowercase=tokenizer.lowercase)
        pipeline.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        pipeline.decoder = decoders.BPEDecoder(suffix=tokenizer.end_of_word_suffix)
        # GPT-1's fine-tuning tokens (_start_, _delimiter_, _classify_) follow the base ids.
        _special(pipeline, [tokenizer.unk_token] + vocabulary[tokenizer._num_base_tokens:])
        config = dict(tokenizer_class="OpenAIGPTTokenizer", unk_token=tokenizer.unk_token,
                      do_lower_case=tokenizer.lowercase)
    texts = {"vocab.json": json.dumps(ranks, ensure_ascii=False),
             "merges.txt": "#version: 0.2\n" + "\n".join(tokenizer.merges)}
    return pipeline, config, texts
