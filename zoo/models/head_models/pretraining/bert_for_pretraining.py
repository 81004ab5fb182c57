"""`BertForPreTraining`: BERT with the released checkpoints' pre-training heads."""

import keras

from zoo.layers import ClassificationHead
from zoo.models.head_models.base import HeadModel, masked_lm_head, register_old_name


@keras.saving.register_keras_serializable(package="zoo")
class BertForPreTraining(HeadModel):
    """BERT with its pre-training heads as the released checkpoints hold them: a checkpoint head.

    BERT section 3.1, tasks #1 and #2. `mlm_logits` (batch, seq, vocabulary_size) come from
    `MaskedLMHead` tied to the token embedding; `nsp_logits` (batch, 2) from a dense layer on
    `pooled_output`. transformers' BertForPreTraining has both heads, BertForMaskedLM only the
    first (and no pooler), BertForNextSentencePrediction only the second. The converters read
and write this model; training uses `BertMaskedLM` (the same head layers, masked positions
only).

    Args:
        backbone: a `zoo.models.BertBackbone`.
        masked_lm: add the masked-LM head.
        next_sentence: add the next-sentence head; needs the backbone's pooler.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1)
        >>> model = zoo.models.BertForPreTraining(backbone)
        >>> ids = np.array([[101, 7592, 102]])
        >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})
        >>> out["mlm_logits"].shape, out["nsp_logits"].shape
        (TensorShape([1, 3, 30522]), TensorShape([1, 2]))
    """

    config_keys = ("masked_lm", "next_sentence")

    def __init__(self, backbone, masked_lm=True, next_sentence=True, **kwargs):
        if not (masked_lm or next_sentence):
            raise ValueError("BertForPreTraining needs masked_lm=True or next_sentence=True")
        if next_sentence and not backbone.pooler:
            raise ValueError("next-sentence prediction reads the pooler's output; "
                             f"{backbone.name} has pooler=False")
        init = keras.initializers.TruncatedNormal(stddev=0.02)

        # === Layers ===
        mlm_head = masked_lm_head(backbone, init) if masked_lm else None
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
        self._keep(backbone, masked_lm=masked_lm, next_sentence=next_sentence, mlm_head=mlm_head,
                   nsp_head=nsp_head)


# Deprecated: the former name, kept as a Python name and a registered Keras name.
BertPretrainingModel = register_old_name(BertForPreTraining, "BertPretrainingModel")
