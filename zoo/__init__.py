"""zoo: BERT, GPT-1 and ViT for Keras 3 — models, checkpoints, tasks, training and export."""

# Imported so that their classes are registered for `.keras` loading.
from zoo import convert, layers, models, optimization

__version__ = "0.1.0"
__all__ = ["convert", "layers", "models", "optimization"]
