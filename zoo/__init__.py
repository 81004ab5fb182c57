"""zoo: BERT, GPT-1 and ViT for Keras 3 — the library: layers, models, checkpoints, tokenizers,
data, metrics, and the mechanisms of training and export. It never imports zoo_tasks/ or
zoo_cli/."""

# Imported so that their classes are registered for `.keras` loading. They need Keras alone:
# `import zoo` builds and trains models on JAX or torch where TensorFlow is not installed.
from zoo import layers, models, optimization


def __getattr__(name):
    """`zoo.convert` and `zoo.loading` on first use (the checkpoint converters read and write
    tokenizers, which load TensorFlow: tensorflow-text); `zoo.load_model(name)` is
    `zoo.loading.load_model`: a checkpoint by name (a pretrained preset, hf://ORG/NAME, a
    folder ...) as a zoo model."""
    import importlib

    if name in ("convert", "loading"):
        return importlib.import_module(f"zoo.{name}")
    if name == "load_model":
        return importlib.import_module("zoo.loading").load_model
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
__all__ = ["convert", "layers", "load_model", "loading", "models", "optimization"]
