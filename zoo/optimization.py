"""Learning-rate schedules and the AdamW optimizer of the BERT and GPT-1 papers.

BERT (Devlin et al., 2019), appendix A.2, pre-training: "Adam with learning rate of 1e-4,
β1 = 0.9, β2 = 0.999, L2 weight decay of 0.01, learning rate warmup over the first 10,000 steps,
and linear decay of the learning rate." Fine-tuning picks the best rate among 5e-5, 4e-5, 3e-5
and 2e-5 (section 4.1; appendix A.3 lists 5e-5, 3e-5, 2e-5). google-research/bert's
`optimization.py` adds what the paper leaves out: Adam epsilon 1e-6, gradients clipped to a
global norm of 1.0, and no weight decay on LayerNorm variables or biases.

GPT-1 (Radford et al., 2018), section 4.1: pre-training with Adam at a maximum learning rate
of 2.5e-4, "increased linearly from zero over the first 2000 updates and annealed to 0 using a
cosine schedule", and a modified L2 regularization (decoupled weight decay, Loshchilov & Hutter)
with w = 0.01 on all non bias or gain weights; fine-tuning at 6.25e-5 with linear decay and
warmup over 0.2% of training.

Both schedules take the optimizer's iteration count as `step`. It starts at 0, so the first
update uses lr(0), which is 0 when there is a warmup, as in google-research/bert, whose
`global_step` also starts at 0.
"""

import math

import keras
from keras import ops

# === Schedules ===


class _WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `learning_rate` over `warmup_steps`, then `self._decay(step)`."""

    def __init__(self, learning_rate, total_steps, warmup_steps):
        if not 0 <= warmup_steps <= total_steps or total_steps < 1:
            raise ValueError(f"{type(self).__name__}: expected 0 <= warmup_steps <= total_steps "
                             f"and total_steps >= 1, got warmup_steps={warmup_steps}, "
                             f"total_steps={total_steps}")
        self.learning_rate = float(learning_rate)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        # max(..., 1) avoids 0 / 0 when warmup_steps == total_steps (no decay phase).
        self.decay_steps = max(self.total_steps - self.warmup_steps, 1)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warming = self.learning_rate * step / max(self.warmup_steps, 1)
        rate = ops.where(step < self.warmup_steps, warming, self._decay(step))
        return ops.where(step < self.total_steps, rate, 0.0)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "total_steps": self.total_steps,
                "warmup_steps": self.warmup_steps}


@keras.saving.register_keras_serializable(package="zoo")
class WarmupLinearDecay(_WarmupSchedule):
    """Linear warmup, then linear decay to 0 at `total_steps` (BERT, appendix A.2).

    lr(step) = learning_rate * step / warmup_steps for step < warmup_steps, then
    learning_rate * max(0, (total_steps - step) / (total_steps - warmup_steps)). This decay
    starts at the peak rate when warmup ends; google-research/bert instead decays from step 0
    (learning_rate * (1 - step / total_steps)), so its rate drops at the end of warmup.

    Args:
        learning_rate: the peak rate, reached at `warmup_steps`.
        total_steps: the step at which the rate reaches 0 (and stays there).
        warmup_steps: steps of linear warmup from 0; 0 means none.

    Examples:
        >>> schedule = WarmupLinearDecay(1e-4, total_steps=100, warmup_steps=10)
        >>> [round(float(schedule(step)), 9) for step in (0, 5, 10, 55, 100, 120)]
        [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def _decay(self, step):
        return self.learning_rate * ops.maximum((self.total_steps - step) / self.decay_steps, 0.0)


@keras.saving.register_keras_serializable(package="zoo")
class WarmupCosineDecay(_WarmupSchedule):
    """Linear warmup, then cosine annealing to 0 at `total_steps` (GPT-1, section 4.1).

    lr(step) = learning_rate * step / warmup_steps for step < warmup_steps, then
    learning_rate * 0.5 * (1 + cos(pi * min(1, (step - warmup_steps) /
    (total_steps - warmup_steps)))).

    Args:
        learning_rate: the peak rate, reached at `warmup_steps` (GPT-1: 2.5e-4).
        total_steps: the step at which the rate reaches 0 (and stays there).
        warmup_steps: steps of linear warmup from 0 (GPT-1: 2000); 0 means none.

    Examples:
        >>> schedule = WarmupCosineDecay(2.5e-4, total_steps=102, warmup_steps=2)
        >>> [round(float(schedule(step)), 9) for step in (0, 1, 2, 52, 102, 200)]
        [0.0, 0.000125, 0.00025, 0.000125, 0.0, 0.0]
    """

    def _decay(self, step):
        progress = ops.minimum((step - self.warmup_steps) / self.decay_steps, 1.0)
        return self.learning_rate * 0.5 * (1.0 + ops.cos(math.pi * progress))


SCHEDULES = {"linear": WarmupLinearDecay, "cosine": WarmupCosineDecay}

# === Optimizer ===


def merge_duplicate_rows(gradient):
    """A `tf.IndexedSlices` gradient with each row once, its duplicates summed; any other
    gradient as it is.

    An embedding lookup's gradient on TensorFlow holds one row per occurrence of a token.
    Keras (3.15) squares the rows one by one to compute `global_clipnorm`'s norm, so a token
    seen k times counts k * g^2 instead of (k * g)^2: the norm, and with it the clipping,
    is wrong (one id looked up 3 times and another once: 3.46 for the true 5.48). With the
    rows merged first, the norm is the norm of the gradient, as on JAX and PyTorch (dense
    gradients) and as torch.nn.utils.clip_grad_norm_ computes it; the update is the same.
    """
    if keras.backend.backend() != "tensorflow":
        return gradient
    import tensorflow as tf  # the TensorFlow backend's sparse gradients only

    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    rows, where = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, where, tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, gradient.dense_shape)


class _MergedRows:
    """Keras's optimizer with `merge_duplicate_rows` on every gradient before it applies
    them (clipping, decay and the update all come after)."""

    def apply(self, grads, trainable_variables=None):
        return super().apply([merge_duplicate_rows(g) for g in grads], trainable_variables)


def fused_adam_update(optimizer, gradient, variable, learning_rate):
    """Keras' Adam update of one variable on TensorFlow as one `ResourceApplyAdam` kernel.

    The kernel computes what `keras.optimizers.Adam.update_step` computes (m += (g - m)(1 - b1);
    v += (g^2 - v)(1 - b2); var -= m * alpha / (sqrt(v) + epsilon), alpha = lr *
    sqrt(1 - b2^t) / (1 - b1^t)) in one op where Keras traces about 15 small ones per variable:
    fewer ops to trace, to optimize (Grappler) and to run each step. A sparse gradient
    (`tf.IndexedSlices`) is made dense first, as Keras' update makes it (its
    `gradient - m`). Written by hand because Keras has no fused path and TensorFlow's own
    optimizers (tf.keras) are not Keras 3's.
    """
    import tensorflow as tf  # the TensorFlow backend's fused kernel only

    dtype = variable.dtype
    gradient = tf.cast(tf.convert_to_tensor(gradient), dtype)
    # The step's scalars, traced once a step for all variables of a dtype (`AdamW`), or here.
    scalars = getattr(optimizer, "_adam_scalars", {}).get(tf.as_dtype(dtype)) or adam_scalars(
        optimizer, learning_rate, dtype)
    index = optimizer._get_variable_index(variable)
    m, v = optimizer._momentums[index], optimizer._velocities[index]
    return tf.raw_ops.ResourceApplyAdam(var=variable.handle, m=m.handle, v=v.handle,
                                        grad=gradient, use_locking=False, **scalars)


def adam_scalars(optimizer, learning_rate, dtype):
    """The scalar inputs of `ResourceApplyAdam` for this step, in `dtype`."""
    import tensorflow as tf  # the TensorFlow backend's fused kernel only

    step = tf.cast(optimizer.iterations + 1, dtype)
    beta1, beta2 = tf.cast(optimizer.beta_1, dtype), tf.cast(optimizer.beta_2, dtype)
    return {"beta1_power": tf.pow(beta1, step), "beta2_power": tf.pow(beta2, step),
            "lr": tf.cast(learning_rate, dtype), "beta1": beta1, "beta2": beta2,
            "epsilon": tf.cast(optimizer.epsilon, dtype)}


@keras.saving.register_keras_serializable(package="zoo")
class AdamW(_MergedRows, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW`, its global norm taken over merged embedding rows; on
    TensorFlow each variable's Adam update is one fused kernel (`fused_adam_update`)."""

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() != "tensorflow" or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        return fused_adam_update(self, gradient, variable, learning_rate)

    # On TensorFlow with one replica, what Keras traces once a variable and is the same for
    # all of them is traced once a step: fewer ops to trace and to optimize before the first
    # step (docs/measurements.md), the same arithmetic. Several replicas (their threads meet
    # in a merge_call) keep Keras' way.

    def _once_a_step(self):
        if keras.backend.backend() != "tensorflow":
            return False
        import tensorflow as tf  # the TensorFlow backend's distribution API

        return tf.distribute.get_strategy().num_replicas_in_sync == 1

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if self.amsgrad or not self._once_a_step():
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        import tensorflow as tf  # the TensorFlow backend's fused kernel only

        dtypes = {tf.as_dtype(v.dtype) for v in trainable_variables}
        self._adam_scalars = {d: adam_scalars(self, learning_rate, d) for d in dtypes}
        try:
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        finally:
            del self._adam_scalars

    def _apply_weight_decay(self, variables):
        """Keras' decoupled decay (`variable - variable * wd * lr`), its learning-rate
        schedule evaluated once, where Keras' TensorFlow backend evaluates it once a
        variable."""
        if self.weight_decay is None or not self._once_a_step():
            return super()._apply_weight_decay(variables)
        import tensorflow as tf  # the TensorFlow backend's distribution API

        learning_rate = self.learning_rate

        def decay(variable):
            if self._use_weight_decay(variable):
                lr = tf.cast(learning_rate, variable.dtype)
                wd = tf.cast(self.weight_decay, variable.dtype)
                variable.assign_sub(variable * wd * lr)

        def apply(distribution, variables):
            for variable in variables:
                variable = variable.value if isinstance(variable, keras.Variable) else variable
                distribution.extended.update(variable, decay, group=False)

        tf.__internal__.distribute.interim.maybe_merge_call(
            apply, self._distribution_strategy, variables)


@keras.saving.register_keras_serializable(package="zoo")
class SGD(_MergedRows, keras.optimizers.SGD):
    """`keras.optimizers.SGD`, its global norm taken over merged embedding rows."""


def no_decay_variables(model):
    """The variables of `model` that get no weight decay: LayerNormalization's and biases.

    That is every variable of a `keras.layers.LayerNormalization` (gain `gamma`, bias `beta`)
    and every variable whose name ends with "bias" (Dense/Conv `bias`, MaskedLMHead
    `output_bias`). GPT-1's "all non bias or gain weights" keep their decay.

    Examples:
        >>> import keras
        >>> model = keras.Sequential(name="mlp", layers=[
        ...     keras.Input((4,)), keras.layers.Dense(8, name="dense"),
        ...     keras.layers.LayerNormalization(name="norm")])
        >>> [v.path for v in no_decay_variables(model)]
        ['mlp/dense/bias', 'mlp/norm/gamma', 'mlp/norm/beta']
    """
    # _flatten_layers walks nested layers too (a functional model's `layers` are only the
    # top-level ones; the norms of a transformer block sit inside it).
    norms = {id(v) for layer in model._flatten_layers()
             if isinstance(layer, keras.layers.LayerNormalization) for v in layer.weights}
    return [v for v in model.weights if id(v) in norms or v.name.endswith("bias")]


def build_optimizer(learning_rate, total_steps, warmup_steps, schedule="linear",
                    weight_decay=0.01, clip_norm=1.0, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                    model=None, optimizer="adamw", momentum=0.9):
    """AdamW with a warmup schedule, global-norm clipping and no decay on LayerNorm or biases.

    `optimizer="sgd"` gives SGD with momentum on the same schedule and clipping instead (ViT
    fine-tuning, appendix B.1.1: momentum 0.9, no weight decay, clipping at global norm 1).

    Args:
        learning_rate: the peak learning rate of the schedule.
        total_steps: optimizer steps of the whole run; the rate is 0 from there on.
        warmup_steps: steps of linear warmup from 0 (0: none).
        schedule: "linear" (BERT) or "cosine" (GPT-1 pre-training), a key of `SCHEDULES`.
        weight_decay: decoupled weight decay; each step multiplies a decayed variable by
            (1 - learning_rate(step) * weight_decay).
        clip_norm: clip the gradients to this global norm; None or 0 turns clipping off.
        beta_1: Adam's first-moment decay.
        beta_2: Adam's second-moment decay.
        epsilon: Adam's epsilon (1e-6 as in BERT's optimizer).
        model: the built model to train; needed when `weight_decay` is not 0, to exclude
            `no_decay_variables(model)` from the decay. The exclusion is not part of the
            optimizer's config: an optimizer restored from a `.keras` file decays every
            variable, so build a new one with this function instead.
        optimizer: "adamw" or "sgd".
        momentum: SGD's momentum (ignored by AdamW).

    Returns:
        The optimizer (zoo's `AdamW` or `SGD`: Keras's, their clipping norm taken over
        merged embedding rows, `merge_duplicate_rows`); under the `mixed_float16` dtype
        policy it is wrapped in a
        `keras.optimizers.LossScaleOptimizer`.

    Examples:
        >>> import keras
        >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        >>> optimizer = build_optimizer(5e-5, total_steps=1000, warmup_steps=100, model=model)
        >>> type(optimizer).__name__, optimizer.global_clipnorm, optimizer.weight_decay
        ('AdamW', 1.0, 0.01)
        >>> round(float(optimizer.learning_rate), 9)  # lr(0): the first step is taken at 0
        0.0
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r}: expected one of {', '.join(SCHEDULES)}")
    if optimizer == "sgd":
        if weight_decay:
            raise ValueError(f"build_optimizer: sgd takes no weight decay (ViT fine-tuning "
                             f"uses none), found weight_decay={weight_decay}")
        optimizer = SGD(
            learning_rate=SCHEDULES[schedule](learning_rate, total_steps, warmup_steps),
            momentum=momentum, global_clipnorm=clip_norm or None)
    elif optimizer != "adamw":
        raise ValueError(f"optimizer {optimizer!r}: expected adamw or sgd")
    else:
        optimizer = AdamW(
            learning_rate=SCHEDULES[schedule](learning_rate, total_steps, warmup_steps),
            weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
            global_clipnorm=clip_norm or None)
    if weight_decay:
        if model is None or not model.weights:
            raise ValueError(f"build_optimizer: weight_decay={weight_decay} needs `model=` (a "
                             "built model) to exclude its LayerNorm and bias variables; got "
                             f"{'no model' if model is None else 'a model without variables'}")
        # Exclude the variables themselves rather than `var_names` patterns: Keras matches
        # patterns with re.search against `variable.name`, which is the short name ("gamma")
        # on JAX and PyTorch but the path ("transformer_layer_0/attention_norm/gamma:0") on
        # TensorFlow, so a pattern set would depend on the backend and on layer names.
        optimizer.exclude_from_weight_decay(var_list=no_decay_variables(model))
    if keras.config.dtype_policy().name == "mixed_float16":
        # float16 gradients underflow without loss scaling (dynamic, as Keras does it).
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
