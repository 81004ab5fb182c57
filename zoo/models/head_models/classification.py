"""Fine-tuning heads that score a whole input: classification, span QA, multiple choice.

`BertClassifier` and `GPTClassifier` (`logits`, plus `lm` for GPT-1's auxiliary language-model
loss), `BertSpanQA` (`start_positions`, `end_positions`) and `BertMultipleChoice` (`logits`,
one per choice), each named as the tasks' datasets name the labels.
"""

import keras
from keras import ops

from zoo.layers import ClassificationHead, FoldSequences, LastTokenPooling, UnfoldSequences
from zoo.models.head_models.base import HeadModel, bert_classifier


@keras.saving.register_keras_serializable(package="zoo")
class BertClassifier(HeadModel):
    """BERT with a classifier on `pooled_output`: `logits` (batch, num_classes).

    BERT section 4.1: the final hidden vector of [CLS] (through the pooler) times a new
    classification weight matrix W (K x H); dropout 0.1 before it as in the released
    `run_classifier.py`. With `num_classes=1` the output is a regression score (STS-B).

    With `lstm_units`, a randomly initialized BiLSTM reads the token vectors instead (BERT
    section 5.1, Table 5 "LTR & No NSP + BiLSTM"): the classifier reads its two final states,
    the forward one at the last real token and the backward one at the first; the backbone's
    pooler is not used (build it with `pooler=False`).

    Args:
        backbone: a `zoo.models.BertBackbone`.
        num_classes: number of labels (1: regression).
        dropout: dropout on the pooled vector.
        lstm_units: units per direction of the BiLSTM; None: no BiLSTM.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertClassifier(backbone, num_classes=3)
        >>> ids = np.array([[2, 7, 3]])
        >>> x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
        >>> model(x)["logits"].shape
        TensorShape([1, 3])
    """

    config_keys = ("num_classes", "dropout", "lstm_units")

    def __init__(self, backbone, num_classes, dropout=0.1, lstm_units=None, **kwargs):
        # === Layers ===
        classifier = bert_classifier(backbone, num_classes, dropout)
        bilstm = (None if lstm_units is None else
                  keras.layers.Bidirectional(keras.layers.LSTM(lstm_units), name="bilstm"))

        # === Functional Model ===
        inputs = backbone.input
        if bilstm is None:
            pooled = backbone(inputs)["pooled_output"]  # (batch, hidden)
        else:
            sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
            mask = ops.cast(inputs["padding_mask"], "bool")
            pooled = bilstm(sequence, mask=mask)  # (batch, 2 * lstm_units)
        logits = classifier(pooled)  # (batch, num_classes)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_classes=num_classes, dropout=dropout, lstm_units=lstm_units,
                   classifier=classifier, bilstm=bilstm)


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

    With `lstm_units`, a randomly initialized BiLSTM over the token vectors feeds S and E
    (BERT section 5.1: "we added a randomly initialized BiLSTM on top" of the left-to-right
    model, Table 5 "LTR & No NSP + BiLSTM").

    Args:
        backbone: a `zoo.models.BertBackbone`.
        lstm_units: units per direction of the BiLSTM; None: no BiLSTM.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertSpanQA(backbone)
        >>> ids = np.array([[2, 7, 3, 9, 3, 0]])
        >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})
        >>> out["start_positions"].shape, bool(out["end_positions"][0, 5] < -1e8)
        (TensorShape([1, 6]), True)
    """

    config_keys = ("lstm_units",)

    def __init__(self, backbone, lstm_units=None, **kwargs):
        # === Layers ===
        span = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="span")
        bilstm = (None if lstm_units is None else keras.layers.Bidirectional(
            keras.layers.LSTM(lstm_units, return_sequences=True), name="bilstm"))

        # === Functional Model ===
        inputs = backbone.input
        mask = ops.cast(inputs["padding_mask"], "bool")  # (batch, seq)
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        if bilstm is not None:
            sequence = bilstm(sequence, mask=mask)  # (batch, seq, 2 * lstm_units)
        logits = span(sequence)  # (batch, seq, 2)
        # float32 so that the mask value is finite under mixed_float16.
        logits = ops.cast(logits, "float32")
        start = ops.where(mask, logits[..., 0], -1e9)  # (batch, seq)
        end = ops.where(mask, logits[..., 1], -1e9)  # (batch, seq)
        super().__init__(inputs=inputs, outputs={"start_positions": start,
                                                 "end_positions": end}, **kwargs)

        # === Config ===
        self._keep(backbone, lstm_units=lstm_units, span=span, bilstm=bilstm)


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

    Examples:
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
        self._keep(backbone, num_classes=num_classes, num_sequences=num_sequences, combine=combine,
                   dropout=dropout, lm=lm, classifier=classifier)


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

    Examples:
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
        classifier = bert_classifier(backbone, 1, dropout)

        # === Functional Model ===
        inputs = {name: keras.Input((num_choices, None), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        flat = {name: FoldSequences(name=f"fold_{name}")(x) for name, x in inputs.items()}
        pooled = backbone(flat)["pooled_output"]  # (batch * n, hidden)
        scores = classifier(pooled)  # (batch * n, 1)
        logits = UnfoldSequences(num_choices, name="unfold_scores")(scores)[..., 0]  # (b, n)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, num_choices=num_choices, dropout=dropout, classifier=classifier)
