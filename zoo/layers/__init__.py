"""Shared Keras layers for BERT, GPT-1 and ViT (keras.ops only: TensorFlow, JAX and PyTorch;
the one TensorFlow branch, `Dropout` under XLA, says why)."""

from zoo.layers.attention import AttentionMask, MultiHeadSelfAttention
from zoo.layers.dropout import Dropout
from zoo.layers.embeddings import PatchEmbedding, PositionEmbedding, TiedEmbedding
from zoo.layers.heads import (ClassificationHead, FoldSequences, GatherPositions,
                              LastTokenPooling, MaskedLMHead, UnfoldSequences)
from zoo.layers.initializers import clone_initializer
from zoo.layers.transformer import RowDropout, TransformerBlock

__all__ = [
    "AttentionMask",
    "ClassificationHead",
    "Dropout",
    "FoldSequences",
    "GatherPositions",
    "LastTokenPooling",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "PatchEmbedding",
    "PositionEmbedding",
    "RowDropout",
    "TiedEmbedding",
    "TransformerBlock",
    "UnfoldSequences",
    "clone_initializer",
]
