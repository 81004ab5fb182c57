"""`CausalLM`: a left-to-right language model as it is trained (GPT-1, or a causal BERT)."""

import keras

from zoo.models.bert import BertBackbone
from zoo.models.head_models.base import HeadModel, masked_lm_head, register_old_name


@keras.saving.register_keras_serializable(package="zoo")
class CausalLM(HeadModel):
    """A left-to-right language model as it is trained: `lm` logits (batch, seq, vocabulary).

    A training head, as keras-hub's CausalLM: only `lm`, the name the causal-LM dataset gives
    the labels (GPT-1's checkpoint head is `GPTLMHeadModel`).

    GPT-1 (section 3.1): the tied output embedding W_e^T on the decoder's states. A causal
    BERT encoder (`BertBackbone(causal=True)`, BERT Table 5 "LTR & No NSP") uses BERT's
    masked-LM head (transform + tied decoder) at every position to predict the next token.

    Args:
        backbone: a `zoo.models.GPTBackbone`, or a `zoo.models.BertBackbone` with causal=True.
    """

    def __init__(self, backbone, **kwargs):
        mlm_head = None
        if isinstance(backbone, BertBackbone):
            if not backbone.causal:
                raise ValueError(f"{backbone.name}: a left-to-right language model needs a "
                                 "causal encoder (BertBackbone(causal=True))")
            mlm_head = masked_lm_head(backbone,
                                      keras.initializers.TruncatedNormal(stddev=0.02))

        # === Functional Model ===
        inputs = backbone.input
        sequence = backbone(inputs)["sequence_output"]  # (batch, seq, hidden)
        logits = mlm_head(sequence) if mlm_head else backbone.logits(sequence)
        super().__init__(inputs=inputs, outputs={"lm": logits}, **kwargs)

        # === Config ===
        self._keep(backbone, mlm_head=mlm_head)


# Deprecated: the former name, kept as a Python name and a registered Keras name.
CausalLanguageModel = register_old_name(CausalLM, "CausalLanguageModel")
