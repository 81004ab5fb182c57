"""The tagging family's head models (CoNLL-2003 NER), both outputting `logits` (batch, seq,
num_tags): `BertTokenClassifier` (fine-tuned) and `BertFeatureTagger` (feature-based, on one
of BERT Table 7's hidden-state combinations, `zoo.layers.FEATURES`)."""

from zoo.models.head_models.tagging.bert_feature_tagger import BertFeatureTagger
from zoo.models.head_models.tagging.bert_token_classifier import BertTokenClassifier

__all__ = ["BertFeatureTagger", "BertTokenClassifier"]
