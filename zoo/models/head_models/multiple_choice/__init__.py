"""The multiple choice family's head model: `BertMultipleChoice` (`logits`, one a choice).

GPT-1 scores choices with `GPTClassifier(combine="choices")`, a classification head."""

from zoo.models.head_models.multiple_choice.bert_multiple_choice import BertMultipleChoice

__all__ = ["BertMultipleChoice"]
