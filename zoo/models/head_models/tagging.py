"""Token tagging heads (CoNLL-2003 NER): fine-tuned, and feature-based on a frozen BERT.

`BertTokenClassifier` scores every position; `BertFeatureTagger` reads one of BERT Table 7's
hidden-state combinations (`FEATURES`, picked by `HiddenStateFeatures`) into a BiLSTM. Both
output `logits` (batch, seq, num_tags).
"""

import keras
from keras import ops

from zoo.models.head_models.base import HeadModel, bert_classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertTokenClassifier(HeadModel):
    """BERT with a token-level classifier on `sequence_output`: `logits` (batch, seq, num_tags).

    BERT section 5.3 (CoNLL-2003 NER): "we use the representation of the first sub-token as the
    input to the token-level classifier over the NER label set"; the model scores every
    position, and the task reads (and weights the loss at) each word's first sub-token. Dropout
    0.1 before the classifier as in the released `run_classifier.py`.

    Args:
        backbone: a `zoo.models.BertBackbone`.
        num_tags: the size of the tag set.
        dropout: dropout on the token vectors.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertTokenClassifier(backbone, num_tags=9)
        >>> ids = np.array([[2, 7, 3]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> model(x)["logits"].shape
        TensorShape([1, 3, 9])
    """

    config_keys = ("num_tags", "dropout")

    def __init__(self, backbone, num_tags, dropout=0.1, **kwargs):
        # === Layers ===
        classifier = bert_classifier(backbone, num_tags, dropout)

        # === Functional Model ===
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        logits = classifier(sequence)  # (batch, seq, num_tags)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_tags=num_tags, dropout=dropout, classifier=classifier)


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


@keras.saving.register_keras_serializable(package="zoo")
class BertFeatureTagger(HeadModel):
    """Feature-based NER (BERT section 5.4, Table 7): a frozen BERT, a BiLSTM and a classifier.

    "We use the representation of one or more layers without fine-tuning any parameters of
    BERT. These contextual embeddings are used as input to a randomly initialized two-layer
    768-dimensional BiLSTM before the classification layer." The backbone must be built with
    `return_hidden_states=True`; it is frozen (not trainable, run in inference mode) and
    `HiddenStateFeatures` picks the combination. Output `logits` (batch, seq, num_tags).

    Args:
        backbone: a `zoo.models.BertBackbone` with `return_hidden_states=True`.
        num_tags: the size of the tag set.
        features: one of `FEATURES`.
        lstm_units: units per direction of each BiLSTM layer (768 in the paper).
        dropout: dropout on the BiLSTM output, before the classifier.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=4, vocabulary_size=50,
        ...                              return_hidden_states=True)
        >>> model = zoo.models.BertFeatureTagger(backbone, 9, "concat_last_four", lstm_units=8)
        >>> ids = np.array([[2, 7, 3]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> model(x)["logits"].shape
        TensorShape([1, 3, 9])
    """

    config_keys = ("num_tags", "features", "lstm_units", "dropout")

    def __init__(self, backbone, num_tags, features, lstm_units=768, dropout=0.1, **kwargs):
        if not backbone.return_hidden_states:
            raise ValueError(f"{backbone.name}: the feature-based model reads hidden_states; "
                             "build the backbone with return_hidden_states=True")
        backbone.trainable = False

        # === Layers ===
        select = HiddenStateFeatures(features, dtype=backbone.dtype_policy, name="features")
        lstms = [keras.layers.Bidirectional(
            keras.layers.LSTM(lstm_units, return_sequences=True), name=f"bilstm_{i}")
            for i in range(2)]
        classifier = bert_classifier(backbone, num_tags, dropout)

        # === Functional Model ===
        inputs = backbone.input
        hidden_states = backbone(inputs, training=False)["hidden_states"]  # (b, L+1, seq, h)
        x = select(hidden_states)  # (batch, seq, hidden or 4 * hidden)
        mask = ops.cast(inputs["padding_mask"], "bool")
        for lstm in lstms:
            x = lstm(x, mask=mask)  # (batch, seq, 2 * lstm_units)
        logits = classifier(x)  # (batch, seq, num_tags)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_tags=num_tags, features=features, lstm_units=lstm_units,
                   dropout=dropout, select=select, classifier=classifier)
