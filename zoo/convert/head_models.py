"""A backbone with the task heads of its checkpoint, as one functional Keras model.

Each model outputs the backbone's dict plus its head outputs (`mlm_logits`, `nsp_logits`,
`lm_logits`, `logits`). `get_config` stores the backbone and rebuilds the heads in the
constructor, which is what re-ties an output layer to the backbone's token embedding after
`keras.saving.load_model`.
"""

import keras

from zoo.layers import ClassificationHead, MaskedLMHead


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

    Example:
        >>> import numpy as np, zoo.convert
        >>> backbone = zoo.models.create("vit_tiny16", image_size=32, num_layers=1, pooler=False)
        >>> model = zoo.convert.ViTClassifier(backbone, num_classes=10)
        >>> model({"images": np.zeros((1, 32, 32, 3), "float32")})["logits"].shape
        TensorShape([1, 10])
    """

    config_keys = ("num_classes",)

    def __init__(self, backbone, num_classes, **kwargs):
        # === Layers ===
        classifier = ClassificationHead(num_classes, kernel_initializer="zeros",
                                        dtype=backbone.dtype_policy, name="classifier")

        # === Functional Model ===
        inputs = backbone.input
        outputs = dict(backbone(inputs))
        outputs["logits"] = classifier(outputs["sequence_output"][:, 0, :])  # (batch, classes)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.num_classes = num_classes
        self.classifier = classifier
