"""The image classification family's head model: `ViTClassifier` (`logits`)."""

from zoo.models.head_models.image_classification.vit_classifier import ViTClassifier

__all__ = ["ViTClassifier"]
