"""The classification family's head models (a label, or a score, for a whole input):
`BertClassifier` and `GPTClassifier`, both outputting `logits`."""

from zoo.models.head_models.classification.bert_classifier import BertClassifier
from zoo.models.head_models.classification.gpt_classifier import GPTClassifier

__all__ = ["BertClassifier", "GPTClassifier"]
