"""zoo: BERT, GPT-1 and ViT for Keras 3 — models, checkpoints, tasks, training and export."""

from zoo import layers, models

__version__ = "0.1.0"
__all__ = ["layers", "models"]
