"""Checkpoint interop: Hugging Face, original Google BERT and keras-hub checkpoints.

Every converter applies an explicit weight map (one entry per tensor, shapes checked) and
fails with a `ConversionError` naming the key or file: unknown model types, missing or
unused tensors, shape mismatches, unreadable files. Head models (`BertForPreTraining`,
`GPTLMHeadModel`, `ViTClassifier`) wrap a backbone with the task heads of a checkpoint
(`BertPretrainingModel` and `GPTLanguageModel` are their deprecated former names).
`from_huggingface` reads transformers' fine-tuned BERT heads too (`hf_heads`), and `load_into`
sets a task's model from a checkpoint of its head. `to_huggingface` also writes the fine-tuned
heads of the tasks (`hf_export`), with label names and the tokenizer, for transformers'
`pipeline`; `to_peft` writes a LoRA run's adapters alone in PEFT's format. Names
(`hf://ORG/NAME`, presets) are resolved above this package, in `zoo.loading`.
"""

from zoo.convert.bert_checkpoint import from_bert_checkpoint
from zoo.convert.core import ConversionError
from zoo.convert.hf_export import to_huggingface, to_peft
from zoo.convert.hf_heads import from_huggingface, load_into
from zoo.convert.keras_hub_presets import from_keras_hub
from zoo.models.head_models import (
    BertForPreTraining,
    BertPretrainingModel,
    GPTLanguageModel,
    GPTLMHeadModel,
    ViTClassifier,
)

# Also importable, not in __all__: `BertPretrainingModel` and `GPTLanguageModel`, the deprecated
# former names of `BertForPreTraining` and `GPTLMHeadModel`.
__all__ = [
    "BertForPreTraining",
    "ConversionError",
    "GPTLMHeadModel",
    "ViTClassifier",
    "from_bert_checkpoint",
    "from_huggingface",
    "from_keras_hub",
    "load_into",
    "to_huggingface",
    "to_peft",
]
