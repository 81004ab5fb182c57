"""`ViTClassifier`: ViT with a linear classifier on the class token."""

import keras

from zoo.layers import ClassificationHead
from zoo.models.head_models.base import HeadModel


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

    Examples:
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
        self._keep(backbone, num_classes=num_classes, logits_only=logits_only,
                   classifier=classifier)
