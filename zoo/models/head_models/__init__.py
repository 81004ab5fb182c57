"""A backbone with task heads, as one functional Keras model.

Checkpoint heads (what converters read and write) output the backbone's dict plus their head
outputs: `BertPretrainingModel` (`mlm_logits`, `nsp_logits`), `GPTLanguageModel`
(`lm_logits`), `ViTClassifier` (`logits`).

Training heads output only what a loss reads, under the names the tasks' datasets use for
labels, so `model.fit` needs no output filtering: `BertClassifier` and `GPTClassifier`
(`logits`, plus `lm` for GPT-1's auxiliary language-model loss), `BertMultipleChoice`
(`logits`, one per choice), `BertPretrainer` (`mlm` at the
masked positions, `nsp`) and `CausalLanguageModel` (`lm`).

`get_config` stores the backbone and rebuilds the heads in the constructor, which is what
re-ties an output layer to the backbone's token embedding after `keras.saving.load_model`.

One module per family: `pretraining` (masked LM, NSP, language models), `classification`
(sequence classification, span QA, multiple choice), `tagging` (token classification,
feature-based NER), `images` (ViT); `base` holds what they share.
"""

from zoo.models.head_models.base import HeadModel
from zoo.models.head_models.classification import (BertClassifier, BertMultipleChoice,
                                                   BertSpanQA, GPTClassifier)
from zoo.models.head_models.images import ViTClassifier
from zoo.models.head_models.pretraining import (BertPretrainer, BertPretrainingModel,
                                                CausalLanguageModel, GPTLanguageModel)
from zoo.models.head_models.tagging import (FEATURES, BertFeatureTagger, BertTokenClassifier,
                                            HiddenStateFeatures)

__all__ = ["FEATURES", "BertClassifier", "BertFeatureTagger", "BertMultipleChoice",
           "BertPretrainer", "BertPretrainingModel", "BertSpanQA", "BertTokenClassifier",
           "CausalLanguageModel", "GPTClassifier", "GPTLanguageModel", "HeadModel",
           "HiddenStateFeatures", "ViTClassifier"]
