"""Text generation: a key/value cache for GPT-1 and the causal BERT, transformers' samplers and
logits processors, beam search and streaming (docs/generate.md)."""

from zoo.generation.cache import CachedLM
from zoo.generation.functions import generate, generator_for, stream
from zoo.generation.generator import Generator, Options, bucket

__all__ = ["CachedLM", "Generator", "Options", "bucket", "generate", "generator_for", "stream"]
