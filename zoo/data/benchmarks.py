"""One record per benchmark: how its files are read and laid out, its labels, its metrics and
the task family that fine-tunes on it. `BENCHMARKS` is the table.

Every other per-benchmark table of the project is read from these records: the readers
(`zoo.data.read_examples`), the sample data's file layout (`zoo.data.samples.LAYOUT`), the
metrics and scorers (`zoo.metrics`), GPT-1's zero-shot heuristics (`zoo_tasks.zero_shot`) and the
task registry (`zoo_tasks.TASKS`, which maps each `family` to its task class, on a benchmark's
files or, `own_data`, on your own). Adding a benchmark of an existing family is one record here
and an experiment YAML under configs/experiments/.

Label names are in the order label ids use: the order of BERT's `run_classifier.py` and
Hugging Face's GLUE processors and `conll2003` dataset, so converted fine-tuned heads line up.
"""

import dataclasses
import functools
from typing import Callable

from zoo.data.readers.classification import TsvLayout, read_nli_jsonl, read_tsv
from zoo.data.readers.image_classification import read_image_folder
from zoo.data.readers.multiple_choice import read_race, read_story_cloze, read_swag
from zoo.data.readers.span_qa import read_squad, read_squad_file
from zoo.data.readers.tables import read_table
from zoo.data.readers.tagging import CONLL_TAGS, read_conll2003, read_tagged

# Task family -> the shape of its examples (`Benchmark.kind`).
_KINDS = {"classification": "classification", "text_classification": "classification",
          "span_qa": "span", "multiple_choice": "multiple_choice", "tagging": "tagging",
          "image_classification": "image"}


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One benchmark: its files, labels, metrics and task family.

    Args:
        name: the task name ("glue/mrpc"), used by `read_examples`, configs and the CLI.
        family: the task family that fine-tunes on it, the name of its module in zoo_tasks/:
            "classification", "text_classification", "span_qa", "multiple_choice", "tagging"
            or "image_classification".
        labels: label names in label-id order; None when labels are numbers (STS-B scores,
            choice indices) or, for image_folder, found in the folder (`Examples.labels`).
        read: function(path, report, **options) yielding the examples as plain dicts.
        layout: split -> path under the data directory, as the official distribution names
            its files (what `zoo data samples` writes). Read it, never change it.
        options: the keyword options `read` accepts.
        reads: "file", "directory", or "file or directory".
        metrics: the metric names `zoo.metrics.compute` reports, the first the one that picks
            the best checkpoint; empty where the family's own scorer decides (SQuAD, CoNLL,
            multiple choice, images).
        scoring_options: the options its scorer takes (`zoo score` flags as keyword names).
        input_form: classification: "single" (one text), "entailment" (a pair) or
            "similarity" (a pair without an order): GPT-1's input transformations (section
            3.3); BERT packs "single" as one segment and the others as two.
        num_choices: multiple choice: the answers each question offers.
        zero_shot: GPT-1 section 5's heuristic for scoring it with a language model alone:
            "sentiment", "acceptability" or "multiple_choice"; None where it has none.
        splits: the split names training and evaluation use ("train", "dev", ...) -> the
            `layout` split each reads; None: the layout's splits under their own names.
        split_files: an evaluation split read as several layout splits, one evaluation each
            (MNLI's matched and mismatched dev and test sets); {}: one file a split.
        own_data: your own files (`data.train_file` ...; no `layout`), read by the family's
            task for your own data (`zoo_tasks.OWN_DATA`) instead of a benchmark's files.
    """

    name: str
    family: str
    labels: tuple | None
    read: Callable = dataclasses.field(repr=False)
    layout: dict = dataclasses.field(repr=False)
    options: tuple = ()
    reads: str = "file"
    metrics: tuple = ()
    scoring_options: tuple = ()
    input_form: str | None = None
    num_choices: int | None = None
    zero_shot: str | None = None
    splits: dict | None = dataclasses.field(default=None, repr=False)
    split_files: dict = dataclasses.field(default_factory=dict, repr=False)
    own_data: bool = False

    @property
    def kind(self):
        """What its examples hold: "classification", "regression" (labels are scores),
        "span", "multiple_choice", "tagging" or "image"."""
        if self.family == "classification" and self.labels is None:
            return "regression"
        return _KINDS[self.family]


_BINARY = ("0", "1")
_NLI = ("contradiction", "entailment", "neutral")
_TWO_WAY = ("entailment", "not_entailment")
_PAIR = dict(id="index", sentence1="sentence1", sentence2="sentence2", label="label")
_SPLITS = ("train", "dev", "test")


def _glue(name, folder, labels, columns, metrics=("accuracy",), input_form="entailment",
          zero_shot=None, splits=_SPLITS, split_files=None, **tsv):
    """A GLUE task: tab-separated files glue/<folder>/<split>.tsv."""
    return Benchmark(name, "classification", labels,
                     functools.partial(read_tsv, TsvLayout(columns, labels, **tsv)),
                     {s: f"glue/{folder}/{s}.tsv" for s in splits}, metrics=metrics,
                     input_form=input_form, zero_shot=zero_shot, split_files=split_files or {})


# The metrics follow the GLUE paper (Wang et al., 2019, section 3 and Table 1) and BERT's
# Table 1 footnote; SNLI and SciTail report accuracy as their papers do (zoo.metrics).
_TABLE = [
    # CoLA train/dev: no header, columns source, label, original judgement ("*" or empty),
    # sentence. test.tsv: header "index\tsentence".
    _glue("glue/cola", "CoLA", _BINARY, dict(id="index", sentence1="sentence", label="label"),
          metrics=("mcc",), input_form="single", zero_shot="acceptability",
          headerless=("source", "label", "original_label", "sentence"),
          test_header=("index", "sentence")),
    _glue("glue/sst2", "SST-2", _BINARY, dict(id="index", sentence1="sentence", label="label"),
          input_form="single", zero_shot="sentiment"),
    # MRPC as GLUE distributes it (the header keeps the source file's byte-order mark).
    _glue("glue/mrpc", "MRPC", _BINARY,
          dict(id="index", sentence1="#1 String", sentence2="#2 String", label="Quality"),
          metrics=("f1", "accuracy"), input_form="similarity"),
    _glue("glue/qqp", "QQP", _BINARY,
          dict(id="id", sentence1="question1", sentence2="question2", label="is_duplicate"),
          metrics=("f1", "accuracy"), input_form="similarity"),
    _glue("glue/stsb", "STS-B", None, dict(_PAIR, label="score"),
          metrics=("spearman", "pearson"), input_form="similarity"),
    _glue("glue/mnli", "MNLI", _NLI, dict(_PAIR, label="gold_label"),
          splits=("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"),
          split_files={"dev": ("dev_matched", "dev_mismatched"),
                       "test": ("test_matched", "test_mismatched")}),
    _glue("glue/qnli", "QNLI", _TWO_WAY, dict(_PAIR, sentence1="question", sentence2="sentence")),
    _glue("glue/rte", "RTE", _TWO_WAY, _PAIR),
    _glue("glue/wnli", "WNLI", _BINARY, _PAIR),
    Benchmark("snli", "classification", _NLI, functools.partial(read_nli_jsonl, _NLI),
              {s: f"snli/snli_1.0/snli_1.0_{s}.jsonl" for s in _SPLITS},
              metrics=("accuracy",), input_form="entailment"),
    # SciTail's tsv_format: premise, hypothesis, label; no header.
    Benchmark("scitail", "classification", ("entails", "neutral"),
              functools.partial(read_tsv, TsvLayout(
                  dict(sentence1="premise", sentence2="hypothesis", label="label"),
                  ("entails", "neutral"), headerless=("premise", "hypothesis", "label"))),
              {s: f"scitail/SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv" for s in _SPLITS},
              metrics=("accuracy",), input_form="entailment"),
    Benchmark("squad_v1", "span_qa", None, functools.partial(read_squad, 1),
              {s: f"squad/{s}-v1.1.json" for s in ("train", "dev")}),
    Benchmark("squad_v2", "span_qa", None, functools.partial(read_squad, 2),
              {s: f"squad/{s}-v2.0.json" for s in ("train", "dev")},
              scoring_options=("na_prob",)),
    Benchmark("swag", "multiple_choice", None, read_swag,
              {s: f"swag/{s}.csv" for s in ("train", "val", "test")},
              num_choices=4, zero_shot="multiple_choice",
              splits={"train": "train", "dev": "val", "val": "val", "test": "test"}),
    Benchmark("race", "multiple_choice", None, read_race,
              {s: f"race/RACE/{s}" for s in _SPLITS}, reads="file or directory",
              num_choices=4, zero_shot="multiple_choice",
              splits={"train": "train", "dev": "dev", "test": "test"}),
    # The 2016 release has no training file: models train on val and report test.
    Benchmark("story_cloze", "multiple_choice", None, read_story_cloze,
              {"val": "story_cloze/cloze_test_val__spring2016 - cloze_test_ALL_val.csv",
               "test": "story_cloze/cloze_test_test__spring2016 - cloze_test_ALL_test.csv"},
              num_choices=2, zero_shot="multiple_choice",
              splits={"train": "val", "dev": "test", "val": "val", "test": "test"}),
    Benchmark("conll2003", "tagging", CONLL_TAGS, read_conll2003,
              {s: f"conll2003/{s}.txt" for s in ("train", "valid", "test")},
              options=("convert_to_iob2",),
              splits={"train": "train", "dev": "valid", "valid": "valid", "test": "test"}),
    Benchmark("image_folder", "image_classification", None, read_image_folder,
              {s: f"images/{s}" for s in ("train", "test")}, reads="directory"),
    # Your own data: no official files (`data.train_file` ...), columns and labels as the
    # data section says (zoo_tasks.text_classification), labels found in the training file; the
    # metrics follow from the labels' kind (zoo.metrics.text_classification).
    Benchmark("text_classification", "text_classification", None, read_table, {},
              options=("format", "text_column", "text_pair_column", "label_column",
                       "id_column", "label_kind", "label_separator", "label_required",
                       "labels"),
              reads="file or directory", scoring_options=("data",), own_data=True),
    # Your own SQuAD-format JSON (zoo_tasks.span_qa, QuestionAnsweringTask): any file names,
    # v1.1 or v2.0 (`data.version_2`, or detected from the training file).
    Benchmark("question_answering", "span_qa", None, read_squad_file, {},
              options=("version",), scoring_options=("na_prob", "data"), own_data=True),
    # Your own tagged words (zoo_tasks.tagging, TokenClassificationTask): CoNLL columns or JSON
    # lines, any tag set; entity scores where the tags are IOB-like, token accuracy otherwise.
    Benchmark("token_classification", "tagging", None, read_tagged, {},
              options=("format", "tokens_column", "tags_column", "labels", "label_required"),
              scoring_options=("data",), own_data=True),
]

BENCHMARKS = {benchmark.name: benchmark for benchmark in _TABLE}


def names(family):
    """The names of a task family's benchmarks with official files (not your own data's task),
    in table order.

    Examples:
        >>> names("span_qa")
        ('squad_v1', 'squad_v2')
    """
    return tuple(name for name, benchmark in BENCHMARKS.items()
                 if benchmark.family == family and not benchmark.own_data)


__all__ = ["BENCHMARKS", "Benchmark", "names"]
