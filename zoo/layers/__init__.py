"""Shared Keras layers for BERT, GPT-1 and ViT (keras.ops only: TensorFlow, JAX and PyTorch;
the one TensorFlow branch, `Dropout` under XLA, says why). One concept a module: the
attention, the embeddings, the Transformer block, dropout, and each head layer."""

from zoo.layers.attention import AttentionMask, MultiHeadSelfAttention
from zoo.layers.classification_head import ClassificationHead
from zoo.layers.dropout import Dropout, RowDropout
from zoo.layers.embeddings import PatchEmbedding, PositionEmbedding, TiedEmbedding
from zoo.layers.fold_sequences import FoldSequences, UnfoldSequences
from zoo.layers.gather_positions import GatherPositions
from zoo.layers.hidden_state_features import FEATURES, HiddenStateFeatures
from zoo.layers.initializers import clone_initializer
from zoo.layers.last_token_pooling import LastTokenPooling
from zoo.layers.masked_lm_head import MaskedLMHead
from zoo.layers.transformer import TransformerBlock

__all__ = [
    "FEATURES",
    "AttentionMask",
    "ClassificationHead",
    "Dropout",
    "FoldSequences",
    "GatherPositions",
    "HiddenStateFeatures",
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
