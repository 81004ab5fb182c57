"""Starting points of a run: the task's tokenizer, its vocabulary files, and the backbone.

A backbone starts from a random preset or from `model.init_checkpoint` (a `.keras` file, a
zoo run directory, a Hugging Face folder, a Google BERT checkpoint, or a checkpoint by name:
`hf://ORG/NAME[@REVISION]` or a pretrained preset), possibly partially: GPT-1's fine-tuning
tokens, ViT at another image size, only the first K blocks. A pretrained `model.preset`
(`bert_base_uncased`) starts from its checkpoint's weights and tokenizer. What a name resolved
to (repo, revision, commit) is written to the run's `hub.json`, so the run can be repeated.
"""

import json
import os

import keras
import numpy as np

from zoo import config as config_lib
from zoo import convert, files, hub, models, tokenizers
from zoo.models import Backbone
from zoo.models.presets import PRESETS, SIZES
from zoo.models.pretrained_presets import PRETRAINED
from zoo.training.run_dir import run_dir_of

HUB_RECORD = "hub.json"  # in the run directory: the checkpoints it resolved by name


def vocabulary_path(model_config):
    """The vocabulary directory or file of a model config (explicit, or the checkpoint's:
    `model.init_checkpoint`'s, else a pretrained `model.preset`'s)."""
    if model_config.vocabulary:
        path = _resolve("model.vocabulary", model_config.vocabulary)
    elif model_config.init_checkpoint:
        path = model_config.init_checkpoint
        # a zoo run, or one of its checkpoints/step_<N>.keras
        run_dir = None if hub.is_hub(path) else run_dir_of(path)
        if hub.is_hub(path):
            path = _resolve("model.init_checkpoint", path)
        elif run_dir is not None:
            path = os.path.join(run_dir, "vocabulary")
        elif not files.isdir(path):  # a .keras file or a checkpoint prefix
            path = os.path.dirname(files.absolute(path))
    elif model_config.preset in PRETRAINED:
        path = _resolve("model.preset", model_config.preset)
    else:
        raise config_lib.ConfigError(
            "model.vocabulary: missing; a randomly initialized preset needs a vocabulary "
            "directory (make one with `zoo data vocab`), or set model.init_checkpoint (or "
            f"use a pretrained preset: {', '.join(PRETRAINED)})")
    if not files.exists(path):
        raise FileNotFoundError(f"model.vocabulary {path}: no such file or directory")
    return path


def load_tokenizer(model_config, gpt=False):
    """The task tokenizer: WordPiece for BERT; GPT-1 BPE plus the fine-tuning tokens for GPT."""

    path = vocabulary_path(model_config)
    if files.isfile(path):
        if gpt:
            raise config_lib.ConfigError(f"model.vocabulary {path}: GPT-1 needs a directory "
                                         "with vocab.json and merges.txt")
        return tokenizers.WordPieceTokenizer(path, lowercase=True)
    if gpt:
        tokenizer = tokenizers.from_huggingface(
            path, special_tokens=tokenizers.GPT1_SPECIAL_TOKENS)
        if not isinstance(tokenizer, tokenizers.GPTTokenizer):
            raise config_lib.ConfigError(f"model.vocabulary {path}: GPT-1 needs its BPE "
                                         f"vocabulary (vocab.json + merges.txt), found a "
                                         f"{type(tokenizer).__name__}")
        return tokenizer
    tokenizer = tokenizers.from_huggingface(path)
    if not isinstance(tokenizer, tokenizers.WordPieceTokenizer):
        raise config_lib.ConfigError(f"model.vocabulary {path}: BERT needs a WordPiece "
                                     f"vocabulary (vocab.txt), found a "
                                     f"{type(tokenizer).__name__}")
    return tokenizer


def copy_vocabulary(model_config, run_dir):
    """Copy the vocabulary files into `run_dir/vocabulary` (atomically, once)."""

    target = os.path.join(run_dir, "vocabulary")
    record_hub(model_config, run_dir)
    if files.isdir(target):
        return target
    source = vocabulary_path(model_config)
    staging = files.scratch_directory(run_dir, ".vocabulary.")
    if not files.is_remote(staging):
        os.chmod(staging, 0o755)  # mkdtemp's 0700 would outlive the rename
    try:
        if files.isfile(source):
            files.copy(source, os.path.join(staging, "vocab.txt"))
        else:
            for name in ("vocab.txt", "vocab.json", "merges.txt", "tokenizer.json",
                         "tokenizer_config.json", "special_tokens_map.json"):
                if files.isfile(os.path.join(source, name)):
                    files.copy(os.path.join(source, name), os.path.join(staging, name))
        files.move_directory(staging, target)
    except BaseException:
        files.remove_quietly(staging)
        raise
    return target


def record_hub(model_config, run_dir):
    """Write what the config's names resolved to (source, repo, revision, commit: `model.preset`
    if pretrained, `model.init_checkpoint`, `model.vocabulary`) to `run_dir/hub.json`,
    atomically; nothing when it names none. A resumed run keeps the first record."""
    path = os.path.join(run_dir, HUB_RECORD)
    sources = [model_config.init_checkpoint or model_config.preset, model_config.vocabulary]
    sources = list(dict.fromkeys(source for source in sources if hub.is_hub(source)))
    if sources and not files.exists(path):
        records = [hub.checkpoint(source).record() for source in sources]  # resolved already
        files.write_text(path, json.dumps(records, indent=2) + "\n")


def _resolve(key, source):
    """A hub name's folder, its errors as one line naming the config key."""
    try:
        return hub.resolve(source)
    except hub.HubError as error:
        raise config_lib.ConfigError(f"{key}: {error}") from None


def load_backbone(model_config, tokenizer, **overrides):
    """The backbone of a model config: a random preset, or the weights of `init_checkpoint`
    (a pretrained preset's checkpoint when `init_checkpoint` is not set).

    `init_checkpoint` may be a `.keras` file (a backbone or any zoo head model), a zoo run
    directory (its final.keras, else best.keras), a Hugging Face folder, an original Google
    BERT checkpoint, or a name: `hf://ORG/NAME[@REVISION]` or a pretrained preset. The
    backbone must be of the preset's family and match the tokenizer's vocabulary; GPT-1's
    three fine-tuning tokens, when the checkpoint lacks them, get new embedding rows
    (N(0, 0.02), as the original's `n_special` rows). `model.backbone` and
    `overrides` change constructor arguments (dropout, causal ...) on the loaded weights.

    Two starting points are partial. A ViT checkpoint asked for another `image_size` is
    `with_image_size(size)`: its position embeddings interpolated to the new patch grid
    (ViT section 3.2, fine-tuning at a higher resolution). `model.transfer_layers: K` copies
    only the embeddings and the first K transformer blocks; the later blocks keep the fresh
    (seeded) initialisation of the preset (GPT-1 Figure 2, left). `tokenizer` is None for
    models without a vocabulary (ViT).
    """

    if model_config.preset not in PRESETS:
        raise config_lib.ConfigError(f"model.preset: unknown preset {model_config.preset!r}; "
                                     f"known: {', '.join(SIZES)}; pretrained: "
                                     f"{', '.join(PRETRAINED)}")
    family = models.BACKBONES[PRESETS[model_config.preset][0]]
    overrides = {**model_config.backbone, **overrides}
    transfer = model_config.transfer_layers
    source = model_config.init_checkpoint or (
        model_config.preset if model_config.preset in PRETRAINED else None)
    if transfer is not None and not source:
        raise config_lib.ConfigError(f"model.transfer_layers {transfer}: copies blocks from "
                                     "model.init_checkpoint, which is not set")
    vocabulary = {} if tokenizer is None else {"vocabulary_size": int(tokenizer.vocabulary_size())}
    if not source:
        try:
            return models.create(model_config.preset, **{**vocabulary, **overrides})
        except TypeError as error:
            raise config_lib.ConfigError(f"model.backbone: {error}") from None
    backbone = _load_checkpoint(source)
    if not isinstance(backbone, family):
        raise config_lib.ConfigError(
            f"model.init_checkpoint {source}: holds a {type(backbone).__name__}, but "
            f"model.preset {model_config.preset} is a {family.__name__}")
    size = vocabulary.get("vocabulary_size")
    grow = size - backbone.vocabulary_size if vocabulary else 0
    gpt_tokens = getattr(tokenizer, "special_tokens", [])
    if grow and not (family in (models.GPTBackbone, models.LSTMBackbone)
                     and 0 < grow <= len(gpt_tokens)):
        raise config_lib.ConfigError(
            f"model.init_checkpoint {source}: vocabulary size {backbone.vocabulary_size} "
            f"does not match the vocabulary's {size} tokens ({vocabulary_path(model_config)})")
    unknown = sorted(set(overrides) - set(backbone.config_keys))
    if unknown:
        raise config_lib.ConfigError(f"model.backbone: unknown key(s) {unknown}; "
                                     f"{family.__name__} takes {list(backbone.config_keys)}")
    if transfer is not None and transfer > backbone.num_layers:
        kind = "LSTM layers" if family is models.LSTMBackbone else "transformer blocks"
        raise config_lib.ConfigError(
            f"model.transfer_layers {transfer}: model.init_checkpoint {source} has only "
            f"{backbone.num_layers} {kind}")
    image_size = overrides.pop("image_size", None)
    if image_size is not None and image_size != backbone.image_size:
        # ViT section 3.2: keep the patch size, interpolate the position embeddings in 2-D.
        backbone = backbone.with_image_size(image_size)
    unchanged = all(backbone.get_config()[k] == v for k, v in overrides.items())
    if not grow and unchanged and transfer is None:
        return backbone
    rebuilt = family.from_config({**backbone.get_config(), **overrides, **vocabulary})
    if transfer is not None:
        # Only the embeddings and blocks 0 .. K-1 are copied; the blocks after them keep the
        # initialisation `from_config` gave them (seeded by train.seed like any new weight).
        copied = [w for w in rebuilt.weights if not _in_block(w.path, transfer)]
    else:
        copied = rebuilt.weights
    old = {w.path: w for w in backbone.weights}
    for weight in copied:
        value = keras.ops.convert_to_numpy(old[weight.path])
        if weight.shape != value.shape:  # the token embedding, grown by the special tokens
            rng = np.random.default_rng(0)
            extra = rng.normal(0, 0.02, (weight.shape[0] - value.shape[0],) + value.shape[1:])
            value = np.concatenate([value, extra.astype(value.dtype)])
        weight.assign(value)
    return rebuilt


def _in_block(path, first):
    """Whether a weight path lies in `transformer_layer_<i>` (`lstm_layer_<i>` in an
    LSTMBackbone) with i >= first."""
    for part in path.split("/"):
        for prefix in ("transformer_layer_", "lstm_layer_"):
            if part.startswith(prefix) and part[len(prefix):].isdigit():
                return int(part[len(prefix):]) >= first
    return False


def _load_checkpoint(path):
    if hub.is_hub(path):
        key = "model.preset" if path in PRETRAINED else "model.init_checkpoint"
        try:
            return _backbone_of(models.from_pretrained(path))
        except hub.HubError as error:
            raise config_lib.ConfigError(f"{key}: {error}") from None
    if files.isfile(os.path.join(path, "config.yaml")):  # a zoo run directory
        for name in ("final.keras", "best.keras"):
            if files.isfile(os.path.join(path, name)):
                return _backbone_of(keras.saving.load_model(os.path.join(path, name)))
        raise FileNotFoundError(f"model.init_checkpoint {path}: a run directory without "
                                "final.keras or best.keras (has the run finished?)")
    if path.endswith(".keras"):
        if not files.isfile(path):
            raise FileNotFoundError(f"model.init_checkpoint {path}: no such file")
        return _backbone_of(keras.saving.load_model(path))
    if files.isfile(os.path.join(path, "config.json")):
        return convert.from_huggingface(path)
    folder, prefix = (path, None) if files.isdir(path) else (os.path.dirname(path), path)
    config_json = os.path.join(folder, "bert_config.json")
    if prefix is None:
        index = files.glob(os.path.join(folder, "*.ckpt*.index"))
        prefix = index[0][:-len(".index")] if index else None
    if prefix and files.isfile(config_json):
        return convert.from_bert_checkpoint(prefix, config_json)
    raise FileNotFoundError(
        f"model.init_checkpoint {path}: expected a .keras file, a zoo run directory "
        "(config.yaml), a Hugging Face folder (config.json), a Google BERT checkpoint "
        "(bert_config.json + bert_model.ckpt.*), an hf://ORG/NAME repo or a pretrained preset "
        f"({', '.join(PRETRAINED)})")


def _backbone_of(model):
    return model if isinstance(model, Backbone) else model.backbone
