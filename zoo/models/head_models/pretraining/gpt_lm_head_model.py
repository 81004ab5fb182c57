"""`GPTLMHeadModel`: GPT-1 with the released checkpoint's language-model head."""

import keras

from zoo.models.head_models.base import HeadModel, register_old_name


@keras.saving.register_keras_serializable(package="zoo")
class GPTLMHeadModel(HeadModel):
    """GPT-1 with its language-model head: `lm_logits` (batch, seq, vocabulary_size).

    A checkpoint head: the backbone's outputs plus `lm_logits`, as transformers'
    OpenAIGPTLMHeadModel, which the converters read and write; training uses `CausalLM`. The
    head is the transposed token embedding (GPT-1 section 3.1, W_e^T), so it has no weights of
    its own.

    Args:
        backbone: a `zoo.models.GPTBackbone`.

    Examples:
        >>> import numpy as np, zoo
        >>> backbone = zoo.models.create("gpt1", num_layers=1, hidden_dim=64, num_heads=2)
        >>> model = zoo.models.GPTLMHeadModel(backbone)
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


# Deprecated: the former name, kept as a Python name and a registered Keras name.
GPTLanguageModel = register_old_name(GPTLMHeadModel, "GPTLanguageModel")
