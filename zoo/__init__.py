"""zoo: BERT, GPT-1 and ViT for Keras 3 — the library: layers, models, checkpoints, tokenizers,
data, metrics, and the mechanisms of training and export. It never imports tasks/ or tools/."""

# Imported so that their classes are registered for `.keras` loading.
from zoo import convert, layers, models, optimization

__version__ = "0.1.0"
__all__ = ["convert", "layers", "models", "optimization"]
