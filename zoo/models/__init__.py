"""zoo models: `create(name, **overrides)` builds a preset; `count_parameters` counts one without
building its weights; `names()` lists the sizes (random weights), `pretrained_names()` the
pretrained presets (released checkpoints: `zoo.load_model(name)` downloads and loads one, through
`zoo.loading`, which this package never imports: it builds models and reads no file). The backbones
with task heads are `zoo.models.head_models`, all exported here; `BertPretrainingModel`,
`GPTLanguageModel`, `BertPretrainer` and `CausalLanguageModel` are deprecated aliases of
`BertForPreTraining`, `GPTLMHeadModel`, `BertMaskedLM` and `CausalLM`."""

import inspect

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
    """Build a size preset (`names()`) with random weights; keyword arguments override its
    config.

    Any constructor argument of the backbone is an override, e.g. a size from BERT's Table 6:
    `create("bert_base", num_layers=6, hidden_dim=768, num_heads=12)`. A pretrained preset
    (`pretrained_names()`) is loaded with `zoo.load_model(name)` (`zoo.loading`), which
    downloads its checkpoint.

    Examples:
        >>> import zoo
        >>> zoo.models.create("bert_tiny").count_params()
        4385920
    """
    if name in PRETRAINED:
        raise ValueError(f"{name}: a pretrained preset, whose weights are downloaded; load it "
                         f"with zoo.load_model({name!r}) (zoo.models.create builds the sizes, "
                         f"{', '.join(SIZES)}, with random weights)")
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
    # Once per process and arguments: the presets are fixed, and `zoo reproduce` asks for each
    # row's count at every call (~0.6 CPU-s a build at bert_tiny's size).
    key = (name, repr(sorted(overrides.items())))
    if key not in _COUNTS:
        with keras.StatelessScope(initialize_variables=False):
            model = _build(name, overrides)  # a pretrained preset: its size, nothing downloaded
        _COUNTS[key] = model.count_params()
        keras.backend.clear_session()
    return _COUNTS[key]


_COUNTS = {}


__all__ = ["Backbone", "BertBackbone", "BertClassifier", "BertFeatureTagger", "BertForPreTraining",
           "BertMaskedLM", "BertMultipleChoice", "BertSpanQA", "BertTextEmbedder",
           "BertTokenClassifier", "CausalLM",
           "GPTBackbone", "GPTClassifier", "GPTLMHeadModel", "HiddenStateFeatures",
           "LSTMBackbone", "ViTBackbone", "ViTClassifier", "count_parameters", "create",
           "names", "pretrained_names"]
