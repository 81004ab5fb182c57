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
from zoo import convert, files, hub, loading, models, tokenizers
from zoo.convert import hf_heads
from zoo.models.presets import PRESETS, SIZES
from zoo.models.pretrained_presets import PRETRAINED
from zoo.training.run_dir import run_dir_of

HUB_RECORD = "hub.json"  # in the run directory: the checkpoints it resolved by name


def vocabulary_path(model_config):
    """The vocabulary directory or file of a model config (explicit, or the checkpoint's:
    `model.init_checkpoint`'s, else a pretrained `model.preset`'s)."""
    if model_config.vocabulary:
        path = _source("model.vocabulary", model_config.vocabulary).path
    elif model_config.init_checkpoint:
        found = _source("model.init_checkpoint", model_config.init_checkpoint)
        path = found.path
        if found.kind == "run":
            path = os.path.join(found.path, "vocabulary")
        elif found.kind == "run-checkpoint" or not files.isdir(path):
            # one of a run's checkpoints/step_<N>.keras, a .keras file, a checkpoint prefix
            run_dir = run_dir_of(path)
            path = (os.path.join(run_dir, "vocabulary") if run_dir is not None
                    else os.path.dirname(files.absolute(path)))
    elif model_config.preset in PRETRAINED:
        path = _source("model.preset", model_config.preset).path
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
    sources = list(dict.fromkeys(loading.hub_name(source) for source in sources
                                 if source is not None))
    sources = [source for source in sources if hub.is_hub(source)]
    if sources and not files.exists(path):
        records = [hub.checkpoint(source).record() for source in sources]  # resolved already
        files.write_text(path, json.dumps(records, indent=2) + "\n")


def _source(key, source):
    """`zoo.loading.describe` of a config's source; a path that is no checkpoint is returned
    as a plain path (a vocabulary file, a .keras file, a run's step checkpoint), and a hub
    name's error is one line naming the config key."""
    try:
        if loading.is_bare_repo(source) or hub.is_hub(source):
            return loading.describe(source)
        if files.isfile(os.path.join(source, "config.yaml")):
            return loading.describe(source)
    except hub.HubError as error:
        raise config_lib.ConfigError(f"{key}: {error}") from None
    kind = "run-checkpoint" if run_dir_of(source) is not None else "path"
    return loading.Source(source, kind, source)


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
    """The backbone of `model.init_checkpoint` (or a pretrained `model.preset`): any source
    `zoo.loading` reads, its errors naming the key."""
    key = "model.preset" if path in PRETRAINED else "model.init_checkpoint"
    try:
        return loading.load_backbone(path)
    except hub.HubError as error:
        raise config_lib.ConfigError(f"{key}: {error}") from None
    except FileNotFoundError as error:
        raise FileNotFoundError(f"{key} {error}") from None


def keep_head(model_config, labels, model):
    """Set `model`'s head (a task's model just built) from its starting point when that is a
    checkpoint with this head (`zoo.convert.hf_heads.HEADS`: a fine-tuned classifier, tagger,
    reader, a masked LM, ViT's classifier) and the same labels (`labels`: the task's names in
    order, or None); returns one line saying what was done, or None where the starting point
    has no head of this kind (a backbone, a run, a .keras file).

    A head whose labels (or outputs) differ is replaced, as the task built it: a fresh one.
    """
    source = model_config.init_checkpoint or (
        model_config.preset if model_config.preset in PRETRAINED else None)
    if not source or model_config.transfer_layers is not None:
        return None
    found = _source("model.init_checkpoint", source)
    if found.kind == "path" and files.isfile(os.path.join(source, "config.json")):
        try:  # a local Hugging Face folder: what its config.json says
            found = loading.describe(source)
        except convert.ConversionError:  # an architecture zoo does not read: no head to keep
            return None
    if found.kind not in ("preset", "hub", "huggingface") or found.architecture is None:
        return None
    if not isinstance(model, hf_heads.HEADS.get(found.architecture, ())):
        return None
    theirs = found.labels
    ours = None if labels is None else [str(name) for name in labels]
    where = f"model.init_checkpoint {source}"
    if theirs is not None and ours is not None and theirs != ours:
        return (f"{where}: its {found.architecture} head names {theirs}, the task {ours}: the "
                "head is replaced by a new one")
    try:
        convert.load_into(model, found.path, name=found.name)
    except convert.ConversionError as error:
        return f"{where}: its {found.architecture} head does not fit ({error}): replaced"
    return f"{where}: its {found.architecture} head is kept (labels {theirs or 'as the task'})"
