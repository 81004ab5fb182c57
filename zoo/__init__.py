"""zoo: BERT, GPT-1 and ViT for Keras 3 — the library: layers, models, checkpoints, tokenizers,
data, metrics, and the mechanisms of training and export. It never imports zoo_tasks/ or
zoo_cli/."""

# Imported so that their classes are registered for `.keras` loading.
from zoo import convert, layers, models, optimization


DISTRIBUTION = "zoo-models"  # setup.cfg's `name`


def _version():
    """The installed distribution's version (setup.cfg's `version`, from its metadata)."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


__version__ = _version()
__all__ = ["convert", "layers", "models", "optimization"]
