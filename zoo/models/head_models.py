"""A backbone with task heads, as one functional Keras model.

Checkpoint heads (what converters read and write) output the backbone's dict plus their head
outputs: `BertPretrainingModel` (`mlm_logits`, `nsp_logits`), `GPTLanguageModel`
(`lm_logits`), `ViTClassifier` (`logits`).

Training heads output only what a loss reads, under the names the tasks' datasets use for
labels, so `model.fit` needs no output filtering: `BertClassifier` and `GPTClassifier`
(`logits`, plus `lm` for GPT-1's auxiliary language-model loss), `BertMultipleChoice`
(`logits`, one per choice), `BertPretrainer` (`mlm` at the
masked positions, `nsp`) and `CausalLanguageModel` (`lm`).

`get_config` stores the backbone and rebuilds the heads in the constructor, which is what
re-ties an output layer to the backbone's token embedding after `keras.saving.load_model`.
"""

import keras
from keras import ops

from zoo.layers import (ClassificationHead, FoldSequences, GatherPositions, LastTokenPooling,
                        MaskedLMHead, UnfoldSequences)


class HeadModel(keras.Model):
    """Config plumbing shared by the head models: the backbone plus `config_keys`."""

    config_keys = ()

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "backbone": keras.saving.serialize_keras_object(self.backbone)}
        config.update({key: getattr(self, key) for key in self.config_keys})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config, backbone=keras.saving.deserialize_keras_object(config["backbone"]))
        return cls(**config)


@keras.saving.register_keras_serializable(package="zoo")
class BertPretrainingModel(HeadModel):
    """BERT with its pre-training heads: masked LM and/or next-sentence prediction.

    BERT section 3.1, tasks #1 and #2. `mlm_logits` (batch, seq, vocabulary_size) come from
    `MaskedLMHead` tied to the token embedding; `nsp_logits` (batch, 2) from a dense layer on
    `pooled_output`. transformers' BertForPreTraining has both heads, BertForMaskedLM only the
    first (and no pooler), BertForNextSentencePrediction only the second.

    Args:
        backbone: a `zoo.models.BertBackbone`.
        masked_lm: add the masked-LM head.
        next_sentence: add the next-sentence head; needs the backbone's pooler.

    Example:
        >>> import numpy as np, zoo.convert
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1)
        >>> model = zoo.convert.BertPretrainingModel(backbone)
        >>> ids = np.array([[101, 7592, 102]])
        >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})
        >>> out["mlm_logits"].shape, out["nsp_logits"].shape
        (TensorShape([1, 3, 30522]), TensorShape([1, 2]))
    """

    config_keys = ("masked_lm", "next_sentence")

    def __init__(self, backbone, masked_lm=True, next_sentence=True, **kwargs):
        if not (masked_lm or next_sentence):
            raise ValueError("BertPretrainingModel needs masked_lm=True or next_sentence=True")
        if next_sentence and not backbone.pooler:
            raise ValueError("next-sentence prediction reads the pooler's output; "
                             f"{backbone.name} has pooler=False")
        init = keras.initializers.TruncatedNormal(stddev=0.02)

        # === Layers ===
        mlm_head = MaskedLMHead(
            backbone.vocabulary_size, activation=backbone.activation,
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            token_embedding=backbone.token_embedding, kernel_initializer=init,
            dtype=backbone.dtype_policy, name="mlm_head",
        ) if masked_lm else None
        nsp_head = ClassificationHead(
            2, kernel_initializer=init, dtype=backbone.dtype_policy, name="nsp_head"
        ) if next_sentence else None

        # === Functional Model ===
        inputs = backbone.input
        outputs = dict(backbone(inputs))
        if masked_lm:
            outputs["mlm_logits"] = mlm_head(outputs["sequence_output"])  # (b, seq, vocab)
        if next_sentence:
            outputs["nsp_logits"] = nsp_head(outputs["pooled_output"])  # (batch, 2)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head


@keras.saving.register_keras_serializable(package="zoo")
class GPTLanguageModel(HeadModel):
    """GPT-1 with its language-model head: `lm_logits` (batch, seq, vocabulary_size).

    The head is the transposed token embedding (GPT-1 section 3.1, W_e^T), so it has no
    weights of its own; this is transformers' OpenAIGPTLMHeadModel.

    Args:
        backbone: a `zoo.models.GPTBackbone`.

    Example:
        >>> import numpy as np, zoo.convert
        >>> backbone = zoo.models.create("gpt1", num_layers=1, hidden_dim=64, num_heads=2)
        >>> model = zoo.convert.GPTLanguageModel(backbone)
        >>> ids = np.array([[40, 250, 3]])
        >>> model({"token_ids": ids, "padding_mask": ids > 0})["lm_logits"].shape
        TensorShape([1, 3, 40478])
    """

    def __init__(self, backbone, **kwargs):
        # === Functional Model ===
        inputs = backbone.input
        outputs = dict(backbone(inputs))
        outputs["lm_logits"] = backbone.logits(outputs["sequence_output"])  # (b, seq, vocab)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone


@keras.saving.register_keras_serializable(package="zoo")
class ViTClassifier(HeadModel):
    """ViT with a linear classifier on the class token: `logits` (batch, num_classes).

    ViT eq. 4 and section 3.1: the class token after the final LayerNorm, through one dense
    layer, zero-initialised for fine-tuning. This is transformers' ViTForImageClassification,
    which reads the class token directly, bypassing any pooler.

    Args:
        backbone: a `zoo.models.ViTBackbone`.
        num_classes: number of classes.
        logits_only: output only `logits`, as a training head does (the image_folder task),
            so `model.fit` needs labels for nothing else.

    Example:
        >>> import numpy as np, zoo.convert
        >>> backbone = zoo.models.create("vit_tiny16", image_size=32, num_layers=1, pooler=False)
        >>> model = zoo.convert.ViTClassifier(backbone, num_classes=10)
        >>> model({"images": np.zeros((1, 32, 32, 3), "float32")})["logits"].shape
        TensorShape([1, 10])
    """

    config_keys = ("num_classes", "logits_only")

    def __init__(self, backbone, num_classes, logits_only=False, **kwargs):
        # === Layers ===
        classifier = ClassificationHead(num_classes, kernel_initializer="zeros",
                                        dtype=backbone.dtype_policy, name="classifier")

        # === Functional Model ===
        inputs = backbone.input
        outputs = dict(backbone(inputs))
        outputs["logits"] = classifier(outputs["sequence_output"][:, 0, :])  # (batch, classes)
        if logits_only:
            outputs = {"logits": outputs["logits"]}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = num_classes
        self.logits_only = logits_only
        self.classifier = classifier


# === Training heads ===


@keras.saving.register_keras_serializable(package="zoo")
class BertClassifier(HeadModel):
    """BERT with a classifier on `pooled_output`: `logits` (batch, num_classes).

    BERT section 4.1: the final hidden vector of [CLS] (through the pooler) times a new
    classification weight matrix W (K x H); dropout 0.1 before it as in the released
    `run_classifier.py`. With `num_classes=1` the output is a regression score (STS-B).

    Args:
        backbone: a `zoo.models.BertBackbone`.
        num_classes: number of labels (1: regression).
        dropout: dropout on the pooled vector.

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertClassifier(backbone, num_classes=3)
        >>> ids = np.array([[2, 7, 3]])
        >>> model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})["logits"].shape
        TensorShape([1, 3])
    """

    config_keys = ("num_classes", "dropout")

    def __init__(self, backbone, num_classes, dropout=0.1, **kwargs):
        # === Layers ===
        classifier = ClassificationHead(
            num_classes, dropout=dropout,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="classifier")

        # === Functional Model ===
        inputs = backbone.input
        pooled = backbone(inputs)["pooled_output"]  # (batch, hidden)
        logits = classifier(pooled)  # (batch, num_classes)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = num_classes
        self.dropout = dropout
        self.classifier = classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertSpanQA(HeadModel):
    """BERT for span QA: `start_positions` and `end_positions` logits (batch, seq).

    BERT section 4.2: "We only introduce a start vector S and an end vector E during
    fine-tuning. The probability of word i being the start of the answer span is computed as a
    dot product between T_i and S followed by a softmax over all of the words in the
    paragraph"; likewise E for the end. S and E are the two columns of one dense layer over
    `sequence_output` (`cls/squad/output_weights` in `run_squad.py`). Padding positions get a
    large negative logit so that no softmax and no argmax ever picks them. Section 4.3 (SQuAD
    2.0): the no-answer span starts and ends at [CLS], position 0.

    Args:
        backbone: a `zoo.models.BertBackbone`.

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertSpanQA(backbone)
        >>> ids = np.array([[2, 7, 3, 9, 3, 0]])
        >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})
        >>> out["start_positions"].shape, bool(out["end_positions"][0, 5] < -1e8)
        (TensorShape([1, 6]), True)
    """

    def __init__(self, backbone, **kwargs):
        # === Layers ===
        span = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="span")

        # === Functional Model ===
        inputs = backbone.input
        logits = span(backbone(inputs)["sequence_output"])  # (batch, seq, 2)
        # float32 so that the mask value is finite under mixed_float16.
        logits = ops.cast(logits, "float32")
        mask = ops.cast(inputs["padding_mask"], "bool")  # (batch, seq)
        start = ops.where(mask, logits[..., 0], -1e9)  # (batch, seq)
        end = ops.where(mask, logits[..., 1], -1e9)  # (batch, seq)
        super().__init__(inputs=inputs, outputs={"start_positions": start,
                                                 "end_positions": end}, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.span = span


@keras.saving.register_keras_serializable(package="zoo")
class GPTClassifier(HeadModel):
    """GPT-1 fine-tuning model: a linear layer on the extract token, plus the LM head.

    Section 3.3: the input transformations end each sequence with the extract token, whose
    final activation feeds a linear output layer W_y. With `num_sequences=n` every example
    holds n sequences (batch, n, seq): `combine="sum"` adds their representations before
    the linear layer (similarity: both orders), `combine="choices"` scores each one and the
    logits are (batch, n), normalized over choices (multiple choice). With `lm=True` the model
    also outputs `lm` logits (batch, [n,] seq, vocabulary_size) for the auxiliary language
    modelling objective L3 = L2 + lambda * L1 (section 3.2).

    Args:
        backbone: a `zoo.models.GPTBackbone`.
        num_classes: number of labels (ignored for `combine="choices"`: one score a choice).
        num_sequences: sequences per example, or None for one (batch, seq) sequence.
        combine: "sum" or "choices", how n sequences make one prediction.
        dropout: dropout before the linear layer (0.1, section 4.1 "dropout ... 0.1 to the
            classifier").
        lm: also output the language-model logits.

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
        ...                              vocabulary_size=60)
        >>> model = zoo.models.GPTClassifier(backbone, 3, num_sequences=2, combine="sum")
        >>> ids = np.array([[[1, 5, 2, 7, 3], [1, 7, 2, 5, 3]]])
        >>> out = model({"token_ids": ids, "padding_mask": ids > 0})
        >>> out["logits"].shape, out["lm"].shape
        (TensorShape([1, 3]), TensorShape([1, 2, 5, 60]))
    """

    config_keys = ("num_classes", "num_sequences", "combine", "dropout", "lm")

    def __init__(self, backbone, num_classes, num_sequences=None, combine="sum", dropout=0.1,
                 lm=True, **kwargs):
        if combine not in ("sum", "choices"):
            raise ValueError(f"combine must be 'sum' or 'choices', got {combine!r}")
        init = keras.initializers.RandomNormal(stddev=0.02)
        units = 1 if num_sequences and combine == "choices" else num_classes

        # === Layers ===
        classifier = ClassificationHead(units, dropout=dropout, kernel_initializer=init,
                                        dtype=backbone.dtype_policy, name="classifier")
        pooling = LastTokenPooling(dtype=backbone.dtype_policy, name="extract_token")

        # === Functional Model ===
        shape = (num_sequences, None) if num_sequences else (None,)
        inputs = {name: keras.Input(shape, dtype="int32", name=name)
                  for name in ("token_ids", "padding_mask")}
        flat = inputs
        if num_sequences:
            flat = {name: FoldSequences(name=f"fold_{name}")(x) for name, x in inputs.items()}
        sequence = backbone(flat)["sequence_output"]  # (batch [* n], seq, hidden)
        features = pooling(sequence, flat["padding_mask"])  # (batch [* n], hidden)
        outputs = {}
        if not num_sequences:
            outputs["logits"] = classifier(features)  # (batch, num_classes)
        elif combine == "sum":
            features = UnfoldSequences(num_sequences, name="unfold_features")(features)
            outputs["logits"] = classifier(ops.sum(features, axis=1))  # (batch, num_classes)
        else:
            scores = classifier(features)  # (batch * n, 1)
            outputs["logits"] = UnfoldSequences(num_sequences, name="unfold_scores")(
                scores)[..., 0]  # (batch, n)
        if lm:
            logits = backbone.logits(sequence)  # (batch [* n], seq, vocabulary)
            if num_sequences:
                logits = UnfoldSequences(num_sequences, name="unfold_lm")(logits)
            outputs["lm"] = logits
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = num_classes
        self.num_sequences = num_sequences
        self.combine = combine
        self.dropout = dropout
        self.lm = lm
        self.classifier = classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertMultipleChoice(HeadModel):
    """BERT for multiple choice: one score per choice, `logits` (batch, num_choices).

    BERT section 4.4 (SWAG): "we construct four input sequences, each containing the
    concatenation of the given sentence (sentence A) and a possible continuation (sentence B).
    The only task-specific parameters introduced is a vector whose dot product with the [CLS]
    token representation C denotes a score for each choice which is normalized with a softmax
    layer." Inputs are (batch, num_choices, seq), folded to (batch * num_choices, seq) for the
    backbone; the vector reads `pooled_output` with dropout before it, as the released
    `run_swag.py` and transformers' BertForMultipleChoice do.

    Args:
        backbone: a `zoo.models.BertBackbone` (with its pooler).
        num_choices: choices per example (SWAG and RACE 4, Story Cloze 2).
        dropout: dropout on the pooled vector.

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertMultipleChoice(backbone, num_choices=2)
        >>> ids = np.array([[[2, 7, 3, 8, 3], [2, 7, 3, 9, 3]]])
        >>> segments = np.array([[[0, 0, 0, 1, 1], [0, 0, 0, 1, 1]]])
        >>> model({"token_ids": ids, "segment_ids": segments, "padding_mask": ids > 0}
        ...       )["logits"].shape
        TensorShape([1, 2])
    """

    config_keys = ("num_choices", "dropout")

    def __init__(self, backbone, num_choices, dropout=0.1, **kwargs):
        if not backbone.pooler:
            raise ValueError("multiple choice scores the pooled [CLS] vector; "
                             f"{backbone.name} has pooler=False")

        # === Layers ===
        classifier = ClassificationHead(
            1, dropout=dropout,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="classifier")

        # === Functional Model ===
        inputs = {name: keras.Input((num_choices, None), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        flat = {name: FoldSequences(name=f"fold_{name}")(x) for name, x in inputs.items()}
        pooled = backbone(flat)["pooled_output"]  # (batch * n, hidden)
        scores = classifier(pooled)  # (batch * n, 1)
        logits = UnfoldSequences(num_choices, name="unfold_scores")(scores)[..., 0]  # (b, n)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_choices = num_choices
        self.dropout = dropout
        self.classifier = classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertPretrainer(HeadModel):
    """BERT pre-training as it is trained: `mlm` logits at the masked positions, and `nsp`.

    Takes `mask_positions` (batch, k) besides the backbone inputs and projects only those
    positions onto the vocabulary, as the released `run_pretraining.py` does; the heads are
    the layers of `BertPretrainingModel` (same names), so `to_checkpoint_model()` gives the
    converters' model with the same weights.

    Args:
        backbone: a `zoo.models.BertBackbone`.
        next_sentence: add the next-sentence head (off: the "No NSP" row of BERT Table 5).

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertPretrainer(backbone)
        >>> ids = np.array([[2, 4, 7, 3]])
        >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0,
        ...              "mask_positions": np.array([[1, 0]])})
        >>> out["mlm"].shape, out["nsp"].shape
        (TensorShape([1, 2, 50]), TensorShape([1, 2]))
    """

    config_keys = ("next_sentence",)

    def __init__(self, backbone, next_sentence=True, **kwargs):
        init = keras.initializers.TruncatedNormal(stddev=0.02)

        # === Layers ===
        mlm_head = MaskedLMHead(
            backbone.vocabulary_size, activation=backbone.activation,
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            token_embedding=backbone.token_embedding, kernel_initializer=init,
            dtype=backbone.dtype_policy, name="mlm_head")
        nsp_head = ClassificationHead(2, kernel_initializer=init, dtype=backbone.dtype_policy,
                                      name="nsp_head") if next_sentence else None

        # === Functional Model ===
        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input((None,), dtype="int32", name="mask_positions")
        outputs = backbone({key: inputs[key] for key in backbone.input})
        masked = GatherPositions(name="gather_masked")(outputs["sequence_output"],
                                                       inputs["mask_positions"])  # (b, k, h)
        result = {"mlm": mlm_head(masked)}  # (batch, k, vocabulary)
        if next_sentence:
            result["nsp"] = nsp_head(outputs["pooled_output"])  # (batch, 2)
        super().__init__(inputs=inputs, outputs=result, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.next_sentence = next_sentence
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head

    def to_checkpoint_model(self):
        """The same weights as a `BertPretrainingModel` (for `zoo.convert.to_huggingface`)."""
        model = BertPretrainingModel(self.backbone, next_sentence=self.next_sentence)
        model.mlm_head.set_weights(self.mlm_head.get_weights())
        if self.next_sentence:
            model.nsp_head.set_weights(self.nsp_head.get_weights())
        return model


@keras.saving.register_keras_serializable(package="zoo")
class CausalLanguageModel(HeadModel):
    """A left-to-right language model: `lm` logits (batch, seq, vocabulary_size).

    GPT-1 (section 3.1): the tied output embedding W_e^T on the decoder's states. A causal
    BERT encoder (`BertBackbone(causal=True)`, BERT Table 5 "LTR & No NSP") uses BERT's
    masked-LM head (transform + tied decoder) at every position to predict the next token.

    Args:
        backbone: a `zoo.models.GPTBackbone`, or a `zoo.models.BertBackbone` with causal=True.
    """

    def __init__(self, backbone, **kwargs):
        from zoo.models.bert import BertBackbone

        mlm_head = None
        if isinstance(backbone, BertBackbone):
            if not backbone.causal:
                raise ValueError(f"{backbone.name}: a left-to-right language model needs a "
                                 "causal encoder (BertBackbone(causal=True))")
            mlm_head = MaskedLMHead(
                backbone.vocabulary_size, activation=backbone.activation,
                layer_norm_epsilon=backbone.layer_norm_epsilon,
                token_embedding=backbone.token_embedding,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
                dtype=backbone.dtype_policy, name="mlm_head")

        # === Functional Model ===
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        logits = mlm_head(sequence) if mlm_head else backbone.logits(sequence)
        super().__init__(inputs=inputs, outputs={"lm": logits}, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.mlm_head = mlm_head


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

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertTokenClassifier(backbone, num_tags=9)
        >>> ids = np.array([[2, 7, 3]])
        >>> model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})["logits"].shape
        TensorShape([1, 3, 9])
    """

    config_keys = ("num_tags", "dropout")

    def __init__(self, backbone, num_tags, dropout=0.1, **kwargs):
        # === Layers ===
        classifier = ClassificationHead(
            num_tags, dropout=dropout,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="classifier")

        # === Functional Model ===
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        logits = classifier(sequence)  # (batch, seq, num_tags)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_tags = num_tags
        self.dropout = dropout
        self.classifier = classifier


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

    Example:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=4, vocabulary_size=50,
        ...                              return_hidden_states=True)
        >>> model = zoo.models.BertFeatureTagger(backbone, 9, "concat_last_four", lstm_units=8)
        >>> ids = np.array([[2, 7, 3]])
        >>> model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})["logits"].shape
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
        classifier = ClassificationHead(
            num_tags, dropout=dropout,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="classifier")

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
        self.backbone = backbone
        self.num_tags = num_tags
        self.features = features
        self.lstm_units = lstm_units
        self.dropout = dropout
        self.select = select
        self.classifier = classifier
