"""Readers for every benchmark's official format, packing, and tf.data pipelines."""
