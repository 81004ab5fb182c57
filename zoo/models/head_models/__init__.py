"""A backbone with task heads, as one functional Keras model: a subpackage per task family,
a module per class (as keras-hub's `src/models/bert/`), named so that a family's one name
finds its files.

    pretraining/           BertForPreTraining, GPTLMHeadModel (checkpoint heads);
                           BertMaskedLM, CausalLM (training heads)
    classification/        BertClassifier, GPTClassifier
    span_qa/               BertSpanQA
    multiple_choice/       BertMultipleChoice
    tagging/               BertTokenClassifier, BertFeatureTagger
    image_classification/  ViTClassifier
    sentence_embedding/    BertTextEmbedder
    base.py                what they share: `HeadModel`, BERT's head layers

Checkpoint heads (what converters read and write) output the backbone's dict plus their head
outputs as the released checkpoints name them: `BertForPreTraining` (`mlm_logits`,
`nsp_logits`), `GPTLMHeadModel` (`lm_logits`), `ViTClassifier` (`logits`).

Training heads output only what a loss reads, under the names the tasks' datasets use for
labels, so `model.fit` needs no output filtering: `BertClassifier` and `GPTClassifier`
(`logits`, plus `lm` for GPT-1's auxiliary language-model loss), `BertSpanQA`
(`start_positions`, `end_positions`), `BertMultipleChoice` (`logits`, one per choice),
`BertTokenClassifier` and `BertFeatureTagger` (`logits` per token), `BertMaskedLM` (`mlm` at
the masked positions, `nsp`), `CausalLM` (`lm`) and `BertTextEmbedder` (`embedding`, one
pooled vector a text).

`get_config` stores the backbone and rebuilds the heads in the constructor, which is what
re-ties an output layer to the backbone's token embedding after `keras.saving.load_model`.

Deprecated aliases, as Python names and as registered Keras names (a .keras file saved
under them loads): `BertPretrainingModel` (`BertForPreTraining`), `GPTLanguageModel`
(`GPTLMHeadModel`), `BertPretrainer` (`BertMaskedLM`), `CausalLanguageModel` (`CausalLM`).
"""

from zoo.layers import FEATURES, HiddenStateFeatures
from zoo.models.head_models.base import HeadModel
from zoo.models.head_models.classification import BertClassifier, GPTClassifier
from zoo.models.head_models.image_classification import ViTClassifier
from zoo.models.head_models.multiple_choice import BertMultipleChoice
from zoo.models.head_models.pretraining import (
    BertForPreTraining,
    BertMaskedLM,
    BertPretrainer,
    BertPretrainingModel,
    CausalLanguageModel,
    CausalLM,
    GPTLanguageModel,
    GPTLMHeadModel,
)
from zoo.models.head_models.sentence_embedding import BertTextEmbedder
from zoo.models.head_models.span_qa import BertSpanQA
from zoo.models.head_models.tagging import BertFeatureTagger, BertTokenClassifier

__all__ = ["FEATURES", "BertClassifier", "BertFeatureTagger", "BertForPreTraining",
           "BertMaskedLM", "BertMultipleChoice", "BertSpanQA", "BertTextEmbedder",
           "BertTokenClassifier", "CausalLM", "GPTClassifier", "GPTLMHeadModel", "HeadModel",
           "HiddenStateFeatures", "ViTClassifier"]
