"""The pretraining family's head models: BERT's masked LM and next-sentence prediction, and
left-to-right language models.

Checkpoint heads (what the converters read and write) output the backbone's dict plus the
released checkpoints' heads: `BertForPreTraining` (`mlm_logits`, `nsp_logits`) and
`GPTLMHeadModel` (`lm_logits`). Training heads output only what a loss reads, under the
names the datasets give the labels: `BertMaskedLM` (`mlm` at the masked positions, `nsp`) and
`CausalLM` (`lm`). The former names `BertPretrainingModel`, `GPTLanguageModel`,
`BertPretrainer` and `CausalLanguageModel` are deprecated aliases.
"""

from zoo.models.head_models.pretraining.bert_for_pretraining import (
    BertForPreTraining,
    BertPretrainingModel,
)
from zoo.models.head_models.pretraining.bert_masked_lm import BertMaskedLM, BertPretrainer
from zoo.models.head_models.pretraining.causal_lm import CausalLanguageModel, CausalLM
from zoo.models.head_models.pretraining.gpt_lm_head_model import GPTLanguageModel, GPTLMHeadModel

__all__ = ["BertForPreTraining", "BertMaskedLM", "CausalLM", "GPTLMHeadModel"]
