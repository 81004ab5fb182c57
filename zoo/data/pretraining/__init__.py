"""BERT pretraining data: sentence pairs with NSP labels offline, dynamic MLM masking in tf.data.

Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding" (arXiv:1810.04805). Section 3.1 and Appendix A.1: pairs of segments, 50 % of the
time B is the segment that actually follows A ("IsNext"), 50 % a random segment from another
document ("NotNext"); 15 % of the WordPiece tokens are selected for prediction, of which 80 % are
replaced by [MASK], 10 % by a random token and 10 % left unchanged (Table 8 ablates these rates).
Appendix A.2: 90 % of steps at sequence length 128, 10 % at 512, hence one set of shards per
length.

Pair creation follows the original `create_pretraining_data.py` (google-research/bert). Unlike
it, shards hold unmasked ids: masking happens in the input pipeline, so every epoch sees a new
mask (the "dynamic masking" of RoBERTa, Liu et al. 2019, section 4.1) and `dupe_factor` is only
about re-splitting documents into pairs.

Shard layout written by `write_pretraining_data(corpus, vocab=..., out=OUT)`:

    OUT/seq128/pretraining.json                   vocabulary size, special ids, counts, settings
    OUT/seq128/pretraining-00000-of-00004.tfrecord
    ...
    OUT/seq512/...

Each record is a `tf.train.Example` with int64 features `token_ids` ([CLS] A [SEP] B [SEP],
unpadded), `segment_ids` (0 for [CLS] A [SEP], 1 for B [SEP]) and `next_sentence_label`
(0 = IsNext, 1 = random NotNext; the original's and transformers' convention).

`instances` is the offline part (documents to shards), `dataset` the tf.data part (masking).
"""

from zoo.data.pretraining.chunks import CHUNK_BYTES, plan_chunks
from zoo.data.pretraining.dataset import (
    ExactRateItemSelector,
    StatelessMaskValuesChooser,
    mask_tokens,
    pretraining_dataset,
)
from zoo.data.pretraining.instances import (
    POOL_SIZE,
    create_instances,
    iter_documents,
    iter_pools,
    load_tokenizer,
    read_documents,
    write_pretraining_data,
)
from zoo.data.pretraining.runner import METADATA

__all__ = ["CHUNK_BYTES", "METADATA", "POOL_SIZE", "ExactRateItemSelector",
           "StatelessMaskValuesChooser", "create_instances", "iter_documents", "iter_pools",
           "load_tokenizer", "mask_tokens", "plan_chunks", "pretraining_dataset",
           "read_documents", "write_pretraining_data"]
