"""LoRA fine-tuning (Hu et al. 2021, arXiv:2106.09685) on the variables of Keras'
`Dense.enable_lora`, computed as PEFT computes it.

`train.lora_rank` (with `train.lora_alpha` and `train.lora_targets`) turns a fine-tuning run
into a low-rank one: `apply(model, train)` (called by `zoo.training.fit` on every task's model,
before `compile`) enables LoRA on the target Dense layers of every Transformer block of the
backbone, W x + (alpha / r) B A x with A (in, r) he_uniform and B (r, out) zeros as Keras
initialises them, and freezes the rest of the backbone. Each target becomes a `LoraDense`
(the same layer and variables): a training call computes x W + b + (alpha / r) (x A) B
beside the frozen kernel, as PEFT does, where Keras' own LoRA Dense merges W + (alpha / r) A B
at every call and so forms the kernel's full gradient at every step; an inference call
(`training=False`: evaluate, predict) multiplies by a merged kernel cached in variables and
merged again only when A or B changed (`LoraDense`'s docstring says how that is kept sound).
What trains:

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

import weakref

import keras
import numpy as np
from keras import ops

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


# === The adapted Dense ===


@keras.saving.register_keras_serializable(package="zoo")
class LoraDense(keras.layers.Dense):
    """A `keras.layers.Dense` with LoRA enabled, computed as PEFT computes it: `apply` turns
    each target Dense into one (its class only; the variables are `enable_lora`'s).

    Written by hand because Keras' LoRA Dense merges per call: its `kernel` property is
    W + (alpha / r) A B, rebuilt at every call and multiplied with x, so training forms the
    full (in, out) gradient of that merged kernel at every step, to pass it on to A and B.
    Here a training call computes x W + b + (alpha / r) (x A) B beside the frozen kernel,
    PEFT's order: the gradients of A and B come through the thin (rows, r) product, and no
    (in, out) gradient is formed. The variables, their names and what is saved stay Keras':
    `_kernel` (frozen W), `lora_kernel_a`, `lora_kernel_b`, and `save_own_variables` writing
    the merged kernel, so saved files, backups and `merged` are as with `enable_lora`.

    Inference (`training=False`, as `evaluate` and `predict` call) multiplies by a cached
    merged kernel, `lora_merged`, kept with copies of the A and B it was merged from
    (`lora_merged_a`, `lora_merged_b`; non-trainable and never saved). Each inference call
    compares A and B with the copies (r (in + out) values) and merges again only where one
    differs, so the cache follows every change of the adapters, in any loop, also inside a
    compiled predict function (it holds variables, not a tensor captured at tracing).
    W is frozen; `load_own_variables` and `restore_state`, which write it, drop the cache
    (`forget_merged`), and whoever assigns `_kernel` by hand must call that too. A call
    with `training` None (a custom loop's `model(x)`) takes the training form.
    """

    def enable_merged_cache(self):
        """Add the cache's variables (after `enable_lora`)."""
        self._tracker.unlock()
        try:
            def cached(name, shape):
                return self.add_weight(name=name, shape=shape, dtype=self.variable_dtype,
                                       initializer="zeros", trainable=False,
                                       aggregation="only_first_replica")

            self.lora_merged = cached("lora_merged", self._kernel.shape)
            self.lora_merged_a = cached("lora_merged_a", self.lora_kernel_a.shape)
            self.lora_merged_b = cached("lora_merged_b", self.lora_kernel_b.shape)
        finally:
            self._tracker.lock()
        self.forget_merged()

    def forget_merged(self):
        """Invalidate the cache: the next inference call merges again (NaN equals nothing)."""
        if getattr(self, "lora_merged_a", None) is not None:
            self.lora_merged_a.assign(ops.full(self.lora_merged_a.shape, float("nan")))

    def _merge(self, a, b):  # W + (alpha / r) A B, in the variables' dtype
        return ops.add(self._kernel, (self.lora_alpha / self.lora_rank) * ops.matmul(a, b))

    def _merged_kernel(self):
        """The cached merged kernel, merged again first where A or B changed."""
        a = ops.convert_to_tensor(self.lora_kernel_a)
        b = ops.convert_to_tensor(self.lora_kernel_b)
        same = ops.logical_and(ops.all(ops.equal(a, self.lora_merged_a)),
                               ops.all(ops.equal(b, self.lora_merged_b)))
        if keras.backend.backend() == "jax":
            # JAX's variables are values threaded through the function: one assigned inside
            # lax.cond's branch would leak its tracer, so the branch returns the kernel and
            # the assignments follow it (free: they rebind values).
            kernel = ops.cond(same, lambda: ops.convert_to_tensor(self.lora_merged),
                              lambda: self._merge(a, b))
            self.lora_merged.assign(kernel)
            self.lora_merged_a.assign(a)
            self.lora_merged_b.assign(b)
            return kernel

        def merge_again():  # TensorFlow, PyTorch: written only on a miss
            self.lora_merged.assign(self._merge(a, b))
            self.lora_merged_a.assign(a)
            self.lora_merged_b.assign(b)
            return ops.convert_to_tensor(self.lora_merged)

        return ops.cond(same, lambda: ops.convert_to_tensor(self.lora_merged), merge_again)

    def call(self, inputs, training=None):
        if not self.lora_enabled or self.quantization_mode is not None:
            return super().call(inputs, training=training)
        # The cache compares and merges in the variables' dtype: not under mixed precision,
        # where the layer reads its variables cast (Keras' autocast) and a change of A
        # below bfloat16's step would go unseen.
        cached = (training is False and self.compute_dtype == self.variable_dtype
                  and getattr(self, "lora_merged", None) is not None)
        x = ops.matmul(inputs, self._merged_kernel() if cached else self._kernel)
        if self.bias is not None:
            x = ops.add(x, self.bias)
        if not cached:  # + (alpha / r) (x A) B: (rows, r) then (rows, out), thin
            a = ops.cast(self.lora_kernel_a, self.compute_dtype)
            b = ops.cast(self.lora_kernel_b, self.compute_dtype)
            update = ops.matmul(ops.matmul(inputs, a), b)
            scale = self.lora_alpha / self.lora_rank
            x = ops.add(x, update if scale == 1 else ops.multiply(update, scale))
        if self.activation is not None:
            x = self.activation(x)
        return x

    def load_own_variables(self, store):
        super().load_own_variables(store)
        self.forget_merged()


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
            dense.__class__ = LoraDense  # the same layer, computed beside the kernel
            dense.enable_merged_cache()
            adapted.append(dense)
    return adapted


def _caches(model):
    """The merged-kernel caches' variables (`LoraDense`): not parameters."""
    return [v for layer in lora_layers(model) if getattr(layer, "lora_merged", None) is not None
            for v in (layer.lora_merged, layer.lora_merged_a, layer.lora_merged_b)]


def trainable_count(model):
    """Parameters the optimizer updates."""
    return int(sum(np.prod(v.shape) for v in model.trainable_variables))


def describe(model, train):
    """One line on what trains: '3,203 of 11,782 parameters train (LoRA rank 4, ...)'."""
    caches = {id(v) for v in _caches(model)}
    total = int(sum(np.prod(v.shape) for v in model.variables
                    if "seed_generator_state" not in v.path and id(v) not in caches))
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
        if isinstance(layer, LoraDense):
            layer.forget_merged()  # its kernel changed


# === Merging ===


# model -> the plain model `merged(model, reuse=True)` refreshes (a weak key: it goes with
# the model; not an attribute, which Keras would track as a layer of the model).
_PLAIN = weakref.WeakKeyDictionary()


def merged(model, reuse=False):
    """The plain model of `model`, each LoRA layer's kernel merged (W + alpha / r A B), as
    PEFT's `merge_and_unload`; `model` itself when it has no LoRA layer.

    zoo's blocks create their Dense layers without LoRA, so the model rebuilt from its config
    has none; each layer's own variables go over through `save_own_variables`, which writes a
    LoRA Dense's merged kernel, exactly what a saved .keras file holds.

    With `reuse=True` (a run's saves: best.keras, its adapters, final.keras) the plain model
    is built once per `model` and its weights written again at each call, so use it before
    the next call; rebuilding takes seconds at MiniLM's size, writing the weights a fraction.
    """
    if not lora_layers(model):
        return model
    sources = model._flatten_layers(include_self=True)

    def kind(layer):  # an adapted layer is its Dense again in the rebuilt model
        return keras.layers.Dense if isinstance(layer, LoraDense) else type(layer)

    clone = _PLAIN.get(model) if reuse else None
    if clone is None or [kind(s) for s in sources] != [
            type(c) for c in clone._flatten_layers(include_self=True)]:
        clone = type(model).from_config(model.get_config())
    clones = clone._flatten_layers(include_self=True)
    if [kind(s) for s in sources] != [kind(c) for c in clones]:
        raise ValueError(f"{model.name}: its rebuilt model has other layers; cannot merge")
    for source, target in zip(sources, clones):
        store = {}
        source.save_own_variables(store)
        if store:
            target.load_own_variables(store)
    if reuse:
        _PLAIN[model] = clone
    return clone
