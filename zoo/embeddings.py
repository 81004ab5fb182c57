"""Sentence embeddings: sentence-transformers folders read into a `BertTextEmbedder`, and
`encode` for lists of strings.

    embedder = zoo.embeddings.load("all-MiniLM-L6-v2/")   # a sentence-transformers folder
    vectors = embedder.encode(["A man is eating food.", "A man rides a horse."])
    vectors.shape                                         # (2, 384), float32

A sentence-transformers folder is a pipeline of modules (`modules.json`): a `Transformer` (a
Hugging Face folder: config.json, model.safetensors, tokenizer files, and
sentence_bert_config.json with `max_seq_length` and `do_lower_case`), a `Pooling` (its
config.json: `pooling_mode`, or the older `pooling_mode_*_tokens` flags) and optionally a
`Normalize`. `folder_settings` reads them; the weights go through
`zoo.convert.from_huggingface` and the tokenizer through `zoo.tokenizers.from_huggingface`. A
plain Hugging Face folder (no modules.json) is read as sentence-transformers reads one: mean
pooling, no normalization. Other modules (Dense, LayerNorm, ...) and other pooling modes are
refused in one line naming the file.

`source` may also be a checkpoint's name (a pretrained preset such as `all_minilm_l6_v2`,
`hf://ORG/NAME` or `ORG/NAME`): `zoo.loading` turns it into a local folder.
"""

import os

import numpy as np
import tensorflow as tf

from zoo import convert, files, progress, tokenizers
from zoo.convert import ConversionError
from zoo.convert.core import read_json
from zoo.data import packing
from zoo.models.head_models.sentence_embedding import POOLINGS, BertTextEmbedder

# `encode` pads each batch to its longest text rounded up to this many tokens: few distinct
# shapes to trace, little padding (padding does not change the pooled vectors).
PAD_TO_MULTIPLE_OF = 16
# sentence-transformers' module types by their class name (the last part of `type`: the
# module path changed across versions, e.g. sentence_transformers.models.Pooling).
_TRANSFORMER, _POOLING, _NORMALIZE = "Transformer", "Pooling", "Normalize"
# The older config's flags -> the pooling mode (sentence-transformers' legacy keys).
_LEGACY_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                 "pooling_mode_mean_tokens": "mean",
                 "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens": "weightedmean",
                 "pooling_mode_lasttoken": "lasttoken"}


def resolve(source):
    """A local folder for `source`: a name (a pretrained preset, hf://ORG/NAME, ORG/NAME)
    resolved by `zoo.loading`, anything else as it is."""
    # lazy: zoo.loading (huggingface_hub, the converters) is needed only for a name
    from zoo import hub, loading

    source = loading.hub_name(os.fspath(source))
    return loading.describe(source).path if hub.is_hub(source) else source


def is_sentence_transformers(folder):
    """Whether `folder` is a sentence-transformers folder (it has modules.json)."""
    return files.isfile(os.path.join(folder, "modules.json"))


def folder_settings(folder):
    """What a sentence-transformers folder says of its embedding.

    Returns:
        {"transformer": the Hugging Face folder of its weights and tokenizer, "pooling":
        "mean" | "cls" | "max", "normalize": bool, "max_seq_length": int or None,
        "do_lower_case": bool}. A folder without modules.json: mean pooling, no
        normalization, as sentence-transformers reads a plain Hugging Face model.
    """
    settings = {"transformer": folder, "pooling": "mean", "normalize": False,
                "max_seq_length": None, "do_lower_case": False}
    modules_path = os.path.join(folder, "modules.json")
    if not files.isfile(modules_path):
        return {**settings, **_transformer_settings(folder)}
    modules = read_json(modules_path)
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m
                                                for m in modules):
        raise ConversionError(f"{modules_path}: expected a list of modules with a 'type'")
    kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != [_TRANSFORMER, _POOLING] or kinds[2:] not in ([], [_NORMALIZE]):
        raise ConversionError(
            f"{modules_path}: modules {kinds} are not supported; zoo reads Transformer, "
            "Pooling and an optional Normalize (sentence-transformers' BERT embedders)")
    transformer = os.path.join(folder, modules[0].get("path") or "")
    settings.update(transformer=transformer.rstrip("/") or folder,
                    normalize=len(kinds) == 3,
                    pooling=_pooling(os.path.join(folder, modules[1].get("path") or "",
                                                  "config.json")))
    return {**settings, **_transformer_settings(settings["transformer"])}


def _pooling(path):
    config = read_json(path)
    mode = config.get("pooling_mode")
    if mode is None:
        mode = [name for key, name in _LEGACY_MODES.items() if config.get(key)] or ["mean"]
    modes = [mode] if isinstance(mode, str) else list(mode)
    if len(modes) != 1 or modes[0] not in POOLINGS:
        raise ConversionError(f"{path}: pooling {modes} is not supported; zoo pools one of "
                              f"{', '.join(POOLINGS)}")
    return modes[0]


def _transformer_settings(folder):
    """max_seq_length and do_lower_case of sentence_bert_config.json, where it exists; the
    length otherwise from tokenizer_config.json's model_max_length (where
    sentence-transformers 5+ saves it), as sentence-transformers reads them."""
    settings = {}
    path = os.path.join(folder, "sentence_bert_config.json")
    config = read_json(path) if files.isfile(path) else {}
    tokenizer_path = os.path.join(folder, "tokenizer_config.json")
    tokenizer_config = read_json(tokenizer_path) if files.isfile(tokenizer_path) else {}
    length = config.get("max_seq_length")
    if length is None:  # transformers writes a huge number for "no limit"
        length = tokenizer_config.get("model_max_length")
        length = length if isinstance(length, int) and 0 < length < 1_000_000 else None
    if length is not None:
        settings["max_seq_length"] = int(length)
    if "do_lower_case" in config:
        settings["do_lower_case"] = bool(config["do_lower_case"])
    return settings


def pack_texts(tokenizer, texts, sequence_length, lowercase=False, multiple=None):
    """A batch of raw texts (string tensor) packed for BERT as `[CLS] text [SEP]`, cut to
    `sequence_length` tokens and padded to the longest in the batch (rounded up to
    `multiple`), TF ops only. `lowercase`: sentence-transformers' `do_lower_case`, the text
    lower-cased (Unicode) before the tokenizer."""
    if lowercase:
        texts = tf.strings.lower(texts, encoding="utf-8")
    packed = packing.pack_bert(tokenizer(texts), sequence_length, tokenizer.cls_token_id,
                               tokenizer.sep_token_id, tokenizer.pad_token_id)
    return packing.trim_padding(packed, multiple)


class SentenceEncoder:
    """A `BertTextEmbedder` with its tokenizer: `encode(texts)` gives one vector a text.

    Args:
        model: a `zoo.models.head_models.BertTextEmbedder`.
        tokenizer: its WordPiece tokenizer.
        max_seq_length: texts are cut to this many tokens ([CLS] and [SEP] included).
        lowercase: lower-case texts before the tokenizer (sentence-transformers'
            `do_lower_case`; the tokenizer's own lower-casing applies as well).
    """

    def __init__(self, model, tokenizer, max_seq_length=None, lowercase=False):
        self.model, self.tokenizer, self.lowercase = model, tokenizer, lowercase
        limit = model.backbone.max_sequence_length
        self.max_seq_length = min(max_seq_length or limit, limit)
        self._pack = None

    def encode(self, texts, batch_size=32, normalize=None, progress=True):
        """The embeddings of `texts` (a list of strings, empty ones included): float32
        [len(texts), dim], in the order given.

        Args:
            texts: a list (or any sequence) of strings; a single string is one text.
            batch_size: texts run through the model at once, each batch padded to its
                longest text rounded up to PAD_TO_MULTIPLE_OF tokens (padding does not change
                the vectors).
            normalize: L2-normalize the vectors; None: as the model does (`Normalize`).
            progress: show a progress bar over the batches (zoo.progress).
        """
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        texts = list(texts)
        if batch_size < 1:
            raise ValueError(f"batch_size {batch_size}: expected at least 1")
        dim = self.model.output["embedding"].shape[-1]
        if self._pack is None:  # traced once: eager tokenization op by op is slow
            self._pack = tf.function(
                lambda text: pack_texts(self.tokenizer, text, self.max_seq_length,
                                        self.lowercase, PAD_TO_MULTIPLE_OF),
                input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        # Longest texts first, as sentence-transformers batches them: each batch holds texts of
        # about one length, so little of it is padding (the vectors come back in the order
        # given). Characters stand for tokens here, as there.
        order = np.argsort([-len(text) for text in texts], kind="stable")
        vectors = np.zeros((len(texts), dim), "float32")
        for start in _bar(range(0, len(texts), batch_size), progress, len(texts), batch_size):
            rows = order[start:start + batch_size]
            x = self._pack(tf.constant([texts[i] for i in rows], tf.string))
            # predict_on_batch: the model's compiled predict step (a trace per padded length,
            # lengths rounded up to PAD_TO_MULTIPLE_OF), no gradients on torch.
            out = self.model.predict_on_batch({k: v.numpy() for k, v in x.items()})
            vectors[rows] = np.asarray(out["embedding"], "float32")
        if normalize and not self.model.normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True),
                                           1e-12)
        elif normalize is False and self.model.normalize:
            raise ValueError("normalize=False: this model normalizes its vectors (its folder "
                             "has a Normalize module); build it with normalize=False instead")
        return vectors


def _bar(starts, show, total, batch_size):
    bar = progress.bar(total=total, desc="encode", unit="text", disable=not show or None)
    for start in starts:
        yield start
        bar.update(min(batch_size, total - start))
    bar.close()


def load(source, normalize=None, pooling=None, progress=False):
    """A `SentenceEncoder` of a sentence-transformers folder (or a Hugging Face BERT folder,
    or a name `zoo.hub` resolves).

    Args:
        source: the folder, `hf://ORG/NAME[@REVISION]` or a pretrained preset name.
        normalize: L2-normalise the vectors (default: the folder's Normalize module).
        pooling: "mean", "cls" or "max" (default: the folder's 1_Pooling/config.json).
        progress: show a progress bar over the tensors being loaded.

    Examples:
        >>> import zoo.embeddings
        >>> embedder = zoo.embeddings.load("all_minilm_l6_v2")  # doctest: +SKIP
        >>> embedder.encode(["A man is eating food."]).shape  # doctest: +SKIP
        (1, 384)
    """
    folder = resolve(source)
    if not files.isdir(folder):
        raise FileNotFoundError(f"{source}: no such folder (expected a sentence-transformers "
                                "or Hugging Face folder)")
    settings = folder_settings(folder)
    backbone = convert.from_huggingface(settings["transformer"], progress=progress)
    tokenizer = tokenizers.from_huggingface(settings["transformer"])
    if not isinstance(tokenizer, tokenizers.WordPieceTokenizer):
        raise ConversionError(f"{settings['transformer']}: a BERT embedder needs a WordPiece "
                              f"tokenizer, found a {type(tokenizer).__name__}")
    model = BertTextEmbedder(backbone, pooling=pooling or settings["pooling"],
                             normalize=settings["normalize"] if normalize is None else normalize)
    return SentenceEncoder(model, tokenizer, settings["max_seq_length"],
                           settings["do_lower_case"])


__all__ = ["SentenceEncoder", "folder_settings", "is_sentence_transformers", "load",
           "pack_texts", "resolve"]
