"""The sentence_embedding family's head models (one vector a text): `BertTextEmbedder`,
outputting `embedding`."""

from zoo.models.head_models.sentence_embedding.bert_text_embedder import POOLINGS, BertTextEmbedder

__all__ = ["POOLINGS", "BertTextEmbedder"]
