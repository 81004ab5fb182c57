"""zoo: BERT, GPT-1 and ViT for Keras 3 — the library: layers, models, checkpoints, tokenizers,
data, metrics, and the mechanisms of training and export. It never imports zoo_tasks/ or
zoo_cli/."""

# Imported so that their classes are registered for `.keras` loading. They need Keras alone:
# `import zoo` builds and trains models on JAX or torch where TensorFlow is not installed.
from zoo import layers, models, optimization


def __getattr__(name):
    """`zoo.convert` on first use: the checkpoint converters read and write tokenizers, which
    load TensorFlow (tensorflow-text)."""
    if name == "convert":
        import importlib

        return importlib.import_module("zoo.convert")
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


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
