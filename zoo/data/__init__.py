"""The benchmarks (one record each), readers for their official formats, packing, and tf.data
pipelines."""

from zoo.data.benchmarks import BENCHMARKS, Benchmark
from zoo.data.examples import Examples, read_examples
from zoo.data.readers import DataError
from zoo.data.causal_lm import causal_lm_dataset, causal_lm_shards_dataset, write_causal_lm_data
from zoo.data.images import image_dataset, load_image
from zoo.data.pipeline import prefetched
from zoo.data.packing import (pack_bert, pack_gpt_classification, pack_gpt_entailment,
                              pack_bert_multiple_choice, pack_gpt_multiple_choice,
                              pack_gpt_similarity)
from zoo.data.pretraining import mask_tokens, pretraining_dataset, write_pretraining_data
from zoo.data.span_qa import squad_dataset, squad_windows
from zoo.data.tagging import AlignmentReport, align_tokens, ner_dataset
