"""`BertMaskedLM`: BERT pre-training as it is trained, the masked positions only."""

import keras

from zoo.layers import ClassificationHead, GatherPositions
from zoo.models.head_models.base import HeadModel, masked_lm_head, register_old_name
from zoo.models.head_models.pretraining.bert_for_pretraining import BertForPreTraining


@keras.saving.register_keras_serializable(package="zoo")
class BertMaskedLM(HeadModel):
    """BERT pre-training as it is trained: `mlm` logits at the masked positions, and `nsp`.

    A training head: the outputs carry the names the pretraining dataset gives the labels. As
    keras-hub's BertMaskedLM, it takes `mask_positions` (batch, k) besides the backbone inputs
    and projects only those positions onto the vocabulary, as the released
    `run_pretraining.py` does; the heads are the layers of `BertForPreTraining` (same names),
    so `to_checkpoint_model()` gives the converters' model with the same weights.

    Args:
        backbone: a `zoo.models.BertBackbone`.
        next_sentence: add the next-sentence head (off: the "No NSP" row of BERT Table 5).

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=50)
        >>> model = zoo.models.BertMaskedLM(backbone)
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
        mlm_head = masked_lm_head(backbone, init)
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
        self._keep(backbone, next_sentence=next_sentence, mlm_head=mlm_head, nsp_head=nsp_head)

    def to_checkpoint_model(self):
        """The same weights as a `BertForPreTraining` (for `zoo.convert.to_huggingface`)."""
        model = BertForPreTraining(self.backbone, next_sentence=self.next_sentence)
        model.mlm_head.set_weights(self.mlm_head.get_weights())
        if self.next_sentence:
            model.nsp_head.set_weights(self.nsp_head.get_weights())
        return model


# Deprecated: the former name, kept as a Python name and a registered Keras name.
BertPretrainer = register_old_name(BertMaskedLM, "BertPretrainer")
