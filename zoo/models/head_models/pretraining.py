"""Pre-training and language-model heads: BERT's masked LM and NSP, GPT-1's tied LM head.

Checkpoint heads (what converters read and write) output the backbone's dict plus their head
outputs: `BertPretrainingModel` (`mlm_logits`, `nsp_logits`), `GPTLanguageModel`
(`lm_logits`). Training heads output only what a loss reads: `BertPretrainer` (`mlm` at the
masked positions, `nsp`) and `CausalLanguageModel` (`lm`).
"""

import keras

from zoo.layers import ClassificationHead, GatherPositions
from zoo.models.bert import BertBackbone
from zoo.models.head_models.base import HeadModel, masked_lm_head


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

    Examples:
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


@keras.saving.register_keras_serializable(package="zoo")
class GPTLanguageModel(HeadModel):
    """GPT-1 with its language-model head: `lm_logits` (batch, seq, vocabulary_size).

    The head is the transposed token embedding (GPT-1 section 3.1, W_e^T), so it has no
    weights of its own; this is transformers' OpenAIGPTLMHeadModel.

    Args:
        backbone: a `zoo.models.GPTBackbone`.

    Examples:
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
        self._keep(backbone)



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

    Examples:
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
