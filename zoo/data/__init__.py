"""The benchmarks (one record each), readers for their official formats, packing, and tf.data
pipelines. `squad_windows`, `squad_dataset` and `ner_dataset` are the deprecated former names of
`span_qa_windows`, `span_qa_dataset` and `tagging_dataset`."""

from zoo.data.benchmarks import BENCHMARKS, Benchmark
from zoo.data.examples import Examples, read_examples
from zoo.data.image_classification import image_dataset, load_image
from zoo.data.packing import (
    pack_bert,
    pack_bert_multiple_choice,
    pack_gpt_classification,
    pack_gpt_entailment,
    pack_gpt_multiple_choice,
    pack_gpt_similarity,
)
from zoo.data.pipeline import prefetched
from zoo.data.pretraining import mask_tokens, pretraining_dataset, write_pretraining_data
from zoo.data.pretraining.causal_lm import (
    causal_lm_dataset,
    causal_lm_shards_dataset,
    write_causal_lm_data,
)
from zoo.data.readers import DataError
from zoo.data.span_qa import span_qa_dataset, span_qa_windows, squad_dataset, squad_windows
from zoo.data.tagging import AlignmentReport, align_tokens, ner_dataset, tagging_dataset
