"""The span QA family's head model: `BertSpanQA` (`start_positions`, `end_positions`)."""

from zoo.models.head_models.span_qa.bert_span_qa import BertSpanQA

__all__ = ["BertSpanQA"]
