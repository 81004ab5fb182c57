"""`BertSpanQA`: BERT with start and end logits over the tokens (SQuAD)."""

import keras
from keras import ops

from zoo.models.head_models.base import HeadModel


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
