"""Checkpoint interop: Hugging Face, original Google BERT and keras-hub checkpoints."""
