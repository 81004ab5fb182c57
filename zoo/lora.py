"""LoRA fine-tuning (Hu et al. 2021, arXiv:2106.09685) on Keras' own `Dense.enable_lora`.

`train.lora_rank` (with `train.lora_alpha` and `train.lora_targets`) turns a fine-tuning run
into a low-rank one: `apply(model, train)` (called by `zoo.training.fit` on every task's model,
before `compile`) enables LoRA on the target Dense layers of every Transformer block of the
backbone, W x + (alpha / r) B A x with A (in, r) he_uniform and B (r, out) zeros as Keras
initialises them, and freezes the rest of the backbone. What trains:

- the adapters A and B of the targets (the paper's section 4.2 and 7.1: query and value by
  default, keras-hub's `Backbone.enable_lora` and PEFT's BERT default as well);
- the task head (everything outside the backbone): it is new, so it has to train (PEFT's
  `modules_to_save`, keras-hub's task heads stay trainable around the frozen backbone);
- the backbone's LayerNorms (gain and bias: 2 x hidden a norm). They cost a few thousand
  parameters and let the features' scale follow the adapted attention; keras-hub freezes them
  (only its adapters train in the backbone) and PEFT does unless they are named in
  `modules_to_save`, which its reference test here does.

The targets' kernels and biases (PEFT's `bias="none"`), the embeddings, the other Dense layers
and the pooler stay as they were loaded.

Keras saves a LoRA Dense as its merged kernel W + (alpha / r) A B and drops A and B
(`save_own_variables`), and zoo's backbones rebuild their blocks without LoRA, so best.keras,
final.keras and checkpoints/step_<N>.keras are plain merged models: what `zoo export` and
`zoo convert --to hf` read, unchanged in form. A run's backups keep the adapters and the
unmerged kernels beside the weights (`state`, `restore_state`: zoo.training.backups), so a
resumed run goes on with the same A, B and optimizer moments. `merged(model)` gives the plain
model of a live one.
"""

import keras
import numpy as np

from zoo.config import ConfigError
from zoo.layers.transformer import TransformerBlock

# train.lora_targets name -> the Dense of a TransformerBlock it adapts.
TARGETS = {
    "query": lambda block: block.attention.query_dense,
    "key": lambda block: block.attention.key_dense,
    "value": lambda block: block.attention.value_dense,
    "output": lambda block: block.attention.output_dense,  # the attention output
    "ffn_intermediate": lambda block: block.ffn_intermediate,
    "ffn_output": lambda block: block.ffn_output,
}
DEFAULT_TARGETS = ("query", "value")


def targets(train):
    """The target names of a `TrainConfig` (`train.lora_targets`, default query and value)."""
    return tuple(train.lora_targets or DEFAULT_TARGETS)


def alpha(train):
    """`train.lora_alpha`, default the rank (alpha / r = 1: the paper sets alpha to the first
    r it tries, section 4.1; keras-hub's `enable_lora(rank)` and PEFT's r=8, alpha=8 too)."""
    return train.lora_alpha if train.lora_alpha is not None else train.lora_rank


def _backbone(model):
    backbone = getattr(model, "backbone", None)
    return backbone if backbone is not None else model


def lora_layers(model):
    """The Dense layers of `model` with LoRA enabled, in tracking order."""
    return [layer for layer in model._flatten_layers(include_self=False)
            if getattr(layer, "lora_enabled", False)]


def apply(model, train):
    """Enable LoRA on `model`'s backbone as `train` says and freeze the rest of the backbone
    (see the module's docstring); returns the adapted Dense layers. Nothing happens without
    `train.lora_rank`. Call it on a built model, before `compile`, in the distribution scope.

    Examples:
        >>> import zoo
        >>> from zoo import config, lora
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertClassifier(backbone, 3)
        >>> train = config.resolve({"task": "glue/mrpc"}, ["train.lora_rank=4"]).train
        >>> len(lora.apply(model, train)), lora.trainable_count(model)
        (2, 3203)
    """
    if not train.lora_rank:
        return []
    backbone = _backbone(model)
    blocks = [layer for layer in backbone._flatten_layers(include_self=False)
              if isinstance(layer, TransformerBlock)]
    if not blocks:
        raise ConfigError(f"train.lora_rank: {type(backbone).__name__} has no Transformer "
                          "blocks, whose attention LoRA adapts; use full fine-tuning")
    if not backbone.trainable:
        raise ConfigError(f"train.lora_rank: {type(model).__name__} keeps its encoder frozen "
                          "(feature-based); LoRA adapts an encoder that fine-tunes")
    for variable in backbone.variables:
        variable.trainable = False
    for layer in backbone._flatten_layers(include_self=False):
        if isinstance(layer, keras.layers.LayerNormalization):
            for variable in layer.variables:
                variable.trainable = True
    adapted = []
    for block in blocks:
        for name in targets(train):
            dense = TARGETS[name](block)
            dense.enable_lora(train.lora_rank, lora_alpha=alpha(train))
            # enable_lora freezes the kernel; the bias stays as loaded (PEFT's bias="none").
            dense.lora_kernel_a.trainable = dense.lora_kernel_b.trainable = True
            adapted.append(dense)
    return adapted


def trainable_count(model):
    """Parameters the optimizer updates."""
    return int(sum(np.prod(v.shape) for v in model.trainable_variables))


def describe(model, train):
    """One line on what trains: '3,203 of 11,782 parameters train (LoRA rank 4, ...)'."""
    total = int(sum(np.prod(v.shape) for v in model.variables
                    if "seed_generator_state" not in v.path))
    return (f"{trainable_count(model):,} of {total:,} parameters train (LoRA rank "
            f"{train.lora_rank}, alpha {alpha(train):g} on {', '.join(targets(train))}; the "
            "task head and the LayerNorms)")


# === Backups: what save_weights drops ===


def state(model):
    """{variable path: array} of what `model.save_weights` does not keep of its LoRA layers:
    the unmerged kernels and the adapters (it writes the merged kernel instead)."""
    values = {}
    for layer in lora_layers(model):
        for variable in (layer._kernel, layer.lora_kernel_a, layer.lora_kernel_b):
            values[variable.path] = keras.ops.convert_to_numpy(variable)
    return values


def restore_state(model, values):
    """Put back what `state` gave, after `model.load_weights` (which left the merged kernels
    and zeroed A and B). A missing entry raises KeyError naming the variable."""
    for layer in lora_layers(model):
        for variable in (layer._kernel, layer.lora_kernel_a, layer.lora_kernel_b):
            variable.assign(values[variable.path])


# === Merging ===


def merged(model):
    """The plain model of `model`, each LoRA layer's kernel merged (W + alpha / r A B), as
    PEFT's `merge_and_unload`; `model` itself when it has no LoRA layer.

    zoo's blocks create their Dense layers without LoRA, so the model rebuilt from its config
    has none; each layer's own variables go over through `save_own_variables`, which writes a
    LoRA Dense's merged kernel, exactly what a saved .keras file holds.
    """
    if not lora_layers(model):
        return model
    clone = type(model).from_config(model.get_config())
    sources = model._flatten_layers(include_self=True)
    clones = clone._flatten_layers(include_self=True)
    if [type(s) for s in sources] != [type(c) for c in clones]:
        raise ValueError(f"{model.name}: its rebuilt model has other layers; cannot merge")
    for source, target in zip(sources, clones):
        store = {}
        source.save_own_variables(store)
        if store:
            target.load_own_variables(store)
    return clone
