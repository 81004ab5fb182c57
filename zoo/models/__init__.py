"""zoo models: `create(name, **overrides)` builds a preset; `count_parameters` counts one without
building its weights; `names()` lists the sizes (random weights), `pretrained_names()` the
pretrained presets (released checkpoints, downloaded by `zoo.hub`); `from_pretrained` loads a
pretrained preset, an `hf://ORG/NAME[@REVISION]` repo or a Hugging Face folder. The backbones
with task heads are `zoo.models.head_models`, all exported here; `BertPretrainingModel`,
`GPTLanguageModel`, `BertPretrainer` and `CausalLanguageModel` are deprecated aliases of
`BertForPreTraining`, `GPTLMHeadModel`, `BertMaskedLM` and `CausalLM`."""

import inspect
import os
import warnings

import keras

from zoo.models.backbone import Backbone
from zoo.models.bert import BertBackbone
from zoo.models.gpt import GPTBackbone
from zoo.models.head_models import (
    BertClassifier,
    BertFeatureTagger,
    BertForPreTraining,
    BertMaskedLM,
    BertMultipleChoice,
    BertPretrainer,
    BertPretrainingModel,
    BertSpanQA,
    BertTextEmbedder,
    BertTokenClassifier,
    CausalLanguageModel,
    CausalLM,
    GPTClassifier,
    GPTLanguageModel,
    GPTLMHeadModel,
    HiddenStateFeatures,
    ViTClassifier,
)
from zoo.models.lstm import LSTMBackbone
from zoo.models.presets import PRESETS, SIZES
from zoo.models.pretrained_presets import PRETRAINED
from zoo.models.vit import ViTBackbone

BACKBONES = {cls.__name__: cls for cls in (BertBackbone, GPTBackbone, LSTMBackbone, ViTBackbone)}


def names():
    """Size preset names (random weights), in table order."""
    return list(SIZES)


def pretrained_names():
    """Pretrained preset names (the papers' released checkpoints), in table order.

    Examples:
        >>> import zoo
        >>> zoo.models.pretrained_names()[0]
        'bert_base_uncased'
    """
    return list(PRETRAINED)


def create(name, **overrides):
    """Build a preset; keyword arguments override its config.

    A size preset (`names()`) has random weights. Any constructor argument of the backbone
    is an override, e.g. a size from BERT's Table 6:
    `create("bert_base", num_layers=6, hidden_dim=768, num_heads=12)`. A pretrained preset
    (`pretrained_names()`) has its checkpoint's weights (`from_pretrained`); its overrides may
    change what leaves the weights' shapes alone (dropout, ...).

    Examples:
        >>> import zoo
        >>> zoo.models.create("bert_tiny").count_params()
        4385920
    """
    if name in PRETRAINED:
        model = from_pretrained(name)
        if not overrides:
            return model
        _check_overrides(name, type(model), overrides)
        rebuilt = type(model).from_config({**model.get_config(), **overrides})
        rebuilt.set_weights(model.get_weights())
        return rebuilt
    return _build(name, overrides)


def _build(name, overrides):
    """A preset's backbone with random weights (a pretrained preset: its size's)."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; known presets: {', '.join(SIZES)}; "
                       f"pretrained: {', '.join(PRETRAINED)}")
    class_name, config = PRESETS[name]
    cls = BACKBONES[class_name]
    _check_overrides(name, cls, overrides)
    return cls(**{**config, **overrides})


def _check_overrides(name, cls, overrides):
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        raise TypeError(
            f"{name}: unknown override(s) {unknown}; {cls.__name__} takes {sorted(allowed)}"
        )


def from_pretrained(source, with_head=False, progress=True):
    """A model from a checkpoint by name: a pretrained preset (`bert_base_uncased`, pinned
    with `bert_base_uncased@REVISION`), an `hf://ORG/NAME[@REVISION]` repo (both through
    `zoo.hub`, into huggingface_hub's cache), or a local Hugging Face folder.

    A pretrained preset's checkpoint must be its architecture (an error otherwise); one of
    another size is loaded as it is, with a warning naming both sizes. A keras-hub preset kept
    on the hub (config.json + metadata.json + model.weights.h5) goes through
    `zoo.convert.from_keras_hub`.

    Args:
        source: the name or folder.
        with_head: keep the checkpoint's head (`zoo.convert.from_huggingface`).
        progress: show the download's and the conversion's progress.
    """
    # lazy: the converters load TensorFlow (tokenizers); zoo.models needs Keras alone
    from zoo import hub
    from zoo.convert.huggingface import from_huggingface  # lazy: as above
    from zoo.convert.keras_hub_presets import from_keras_hub  # lazy: as above

    found = hub.checkpoint(source, progress=progress) if hub.is_hub(source) else None
    folder = source if found is None else found.folder
    keras_hub_preset = (found.format == "keras-hub" if found is not None
                        else _is_keras_hub(folder))
    if keras_hub_preset:
        if with_head:
            raise ValueError(f"{source}: a keras-hub preset is read as a backbone only; "
                             "drop with_head")
        model = from_keras_hub(folder, progress=progress)
    else:
        model = from_huggingface(folder, with_head=with_head, progress=progress)
    if found is not None and found.preset is not None:
        _check_size(getattr(model, "backbone", model), found)
    return model


def _is_keras_hub(folder):
    """Whether a local folder is a keras-hub preset (metadata.json, a keras_hub config)."""
    # lazy: zoo.files reaches TensorFlow's file systems; zoo.models needs Keras alone
    from zoo import files
    from zoo.convert.core import read_json  # lazy: as above

    config = os.path.join(folder, "config.json")
    return (files.isfile(os.path.join(folder, "metadata.json")) and files.isfile(config)
            and str(read_json(config).get("registered_name", "")).startswith("keras_hub>"))


def _check_size(backbone, found):
    """Warn where a pretrained preset's checkpoint is not the size the preset says."""
    entry = PRETRAINED[found.preset]
    class_name, expected = PRESETS[found.preset]
    if type(backbone).__name__ != class_name:
        raise ValueError(f"{found.source} ({found.repo}@{found.commit[:12]}): holds a "
                         f"{type(backbone).__name__}, but the preset is a {class_name}")
    config = backbone.get_config()
    differ = [f"{key}={config.get(key)!r} (not {value!r})" for key, value in expected.items()
              if config.get(key) != value]
    if differ:
        warnings.warn(f"{found.source}: the checkpoint {found.repo}@{found.commit[:12]} is "
                      f"not of size {entry['size']}: {', '.join(differ)}; loaded as it is",
                      stacklevel=3)


def count_parameters(name, **overrides):
    """The parameter count of `create(name, **overrides)`, from the shapes of its variables (a
    pretrained preset's from its size: nothing is downloaded).

    The model is built in a Keras `StatelessScope` that leaves its variables uninitialized, so
    nothing is drawn or allocated: even ViT-H/14's 632 million parameters are counted far
    faster than `create(...).count_params()`, which builds and initializes them.
    The uninitialized variables stay registered with Keras until `keras.backend.clear_session()`,
    which this calls: the count is for planning (e.g. `zoo reproduce --dry-run`), not beside a
    model in use.

    Examples:
        >>> import zoo
        >>> zoo.models.count_parameters("bert_base", num_layers=6)
        66955008
    """
    with keras.StatelessScope(initialize_variables=False):
        model = _build(name, overrides)  # a pretrained preset: its size, nothing downloaded
    count = model.count_params()
    keras.backend.clear_session()
    return count


__all__ = ["Backbone", "BertBackbone", "BertClassifier", "BertFeatureTagger", "BertForPreTraining",
           "BertMaskedLM", "BertMultipleChoice", "BertSpanQA", "BertTextEmbedder",
           "BertTokenClassifier", "CausalLM",
           "GPTBackbone", "GPTClassifier", "GPTLMHeadModel", "HiddenStateFeatures",
           "LSTMBackbone", "ViTBackbone", "ViTClassifier", "count_parameters", "create",
           "from_pretrained", "names", "pretrained_names"]
