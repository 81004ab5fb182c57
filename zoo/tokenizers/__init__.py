"""Tokenizers that run in tf.data and inside a SavedModel (tensorflow-text / keras-hub ops only)."""
