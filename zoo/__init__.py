"""zoo: BERT, GPT-1 and ViT for Keras 3 — models, checkpoints, tasks, training and export."""

# convert is imported so that its head models are registered for `.keras` loading.
from zoo import convert, layers, models

__version__ = "0.1.0"
__all__ = ["convert", "layers", "models"]
