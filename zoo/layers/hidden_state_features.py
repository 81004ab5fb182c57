"""BERT Table 7's feature combinations of the hidden states (`FEATURES`), and the layer that
computes one (`HiddenStateFeatures`): the input of the feature-based NER model."""

import keras
from keras import ops

# BERT Table 7's six feature combinations, as the hidden-state layers each one reads
# (index 0 is the embedding output, L the last layer).
FEATURES = ("embeddings", "second_to_last", "last", "sum_last_four", "concat_last_four",
            "sum_all")


@keras.saving.register_keras_serializable(package="zoo")
class HiddenStateFeatures(keras.layers.Layer):
    """One of BERT Table 7's feature combinations from `hidden_states` (batch, L+1, seq, hidden).

    `embeddings`, `second_to_last`, `last`: one layer. `concat_last_four`: the last four layers
    concatenated, (batch, seq, 4 * hidden). `sum_last_four`, `sum_all` (the paper's "weighted
    sum"): the paper does not give the weights; as in ELMo's scalar mix (Peters et al., 2018,
    eq. 1) they are learned scalars, softmax-normalised over the layers and initialised equal
    (so training starts from the plain average), times a learned scale gamma initialised to 1.
    `sum_all` mixes the 12 Transformer layers' outputs (the embedding output excluded, "All 12
    Layers").

    Args:
        features: a name from `FEATURES`.
    """

    def __init__(self, features, **kwargs):
        super().__init__(**kwargs)
        if features not in FEATURES:
            raise ValueError(f"features: expected one of {', '.join(FEATURES)}, "
                             f"found {features!r}")
        self.features = features

    def build(self, input_shape):
        layers = input_shape[1] - 1
        if self.features.endswith("last_four") and layers < 4:
            raise ValueError(f"features {self.features}: the backbone has {layers} layers, "
                             "expected at least 4")
        self.mixed = {"sum_last_four": 4, "sum_all": layers}.get(self.features)
        if self.mixed:
            self.layer_weights = self.add_weight(shape=(self.mixed,), initializer="zeros",
                                                 name="layer_weights")
            self.gamma = self.add_weight(shape=(), initializer="ones", name="gamma")

    def call(self, hidden_states):
        if self.features == "embeddings":
            return hidden_states[:, 0]
        if self.features == "second_to_last":
            return hidden_states[:, -2]
        if self.features == "last":
            return hidden_states[:, -1]
        if self.features == "concat_last_four":
            return ops.concatenate([hidden_states[:, i] for i in (-4, -3, -2, -1)], axis=-1)
        weights = ops.cast(ops.softmax(self.layer_weights), hidden_states.dtype)
        mixed = ops.einsum("l,blsh->bsh", weights, hidden_states[:, -self.mixed:])
        return ops.cast(self.gamma, hidden_states.dtype) * mixed

    def compute_output_shape(self, input_shape):
        batch, _, seq, hidden = input_shape
        return (batch, seq, 4 * hidden if self.features == "concat_last_four" else hidden)

    def get_config(self):
        return {**super().get_config(), "features": self.features}
