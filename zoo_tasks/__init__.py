"""Tasks: a benchmark's model, data, losses, metrics and evaluation, for `model.fit`.

    task = zoo_tasks.create("glue/mrpc", config)  # config: zoo.config.Experiment or a dict
    model = task.build_model()                  # backbone + head, a Keras model
    task.compile(model)                         # losses, metrics, AdamW + schedule
    model.fit(task.dataset("train"), epochs=3)  # batches of (inputs, labels, weights)
    task.evaluate(model, "dev")                 # {"f1": ..., "accuracy": ...}

A task is what `zoo.training.Task` (the contract `fit`, its callbacks and the export call)
asks for, on the shared plumbing of `zoo_tasks.base.BaseTask`. The registry is `TASKS`, built
from the benchmarks' records (`zoo.data.benchmarks`), `FAMILIES` and, for your own data's
tasks, `OWN_DATA`. A task family's files all carry its name (docs/layout.md, "Adding a task
family"): here its task (zoo_tasks/<family>.py) and its serving signatures
(zoo_tasks/serving/<family>.py), with its line in `FAMILIES` (or `OWN_DATA`). A benchmark of
an existing family is its record and an experiment YAML
(configs/experiments/<model>/<task>.yaml). `zoo_tasks.runs` runs an experiment end to end
(`zoo train`, `zoo evaluate`, `zoo export`) on top of this registry; `load_run` opens a trained
run directory (its config, task, model and tokenizer), and a language model's run writes text:

    run = zoo_tasks.load_run("runs/gpt")        # a gpt1/pretrain or bert/pretrain_ltr run
    run.generate("the film is", max_new_tokens=8)
"""

import dataclasses
import os

from zoo import config as config_lib
from zoo import files, generation, training
from zoo.data.benchmarks import BENCHMARKS
from zoo_tasks import (
    classification,
    image_classification,
    multiple_choice,
    pretraining,
    sentence_embedding,
    span_qa,
    tagging,
    text_classification,
)

# Task family (a benchmark record's `family`, zoo.data.benchmarks) -> its task class on a
# benchmark's files.
FAMILIES = {
    # BERT section 4.1 / GPT-1 section 3.3: sentence(-pair) classification and regression.
    "classification": classification.ClassificationTask,
    # BERT sections 4.2 and 4.3: answer spans over doc-stride windows, SQuAD's own scoring.
    "span_qa": span_qa.SpanQATask,
    # BERT section 4.4 / GPT-1 section 3.3: multiple choice, a softmax over one score a choice.
    "multiple_choice": multiple_choice.MultipleChoiceTask,
    # ViT sections 3.1-3.2: a linear head on the class token, fine-tuned on an image folder.
    "image_classification": image_classification.ImageClassificationTask,
    # BERT section 5.3 and Table 7: CoNLL-2003 NER, fine-tuned or feature-based.
    "tagging": tagging.TaggingTask,
}
# Task family -> its task class on your own files (a record with `own_data`: the tasks
# text_classification, question_answering and token_classification).
OWN_DATA = {
    # Any files, columns and labels; one label, several, or a score a row.
    "text_classification": text_classification.TextClassificationTask,
    # SQuAD-format files of any name: span_qa's model, windows and metrics, v1.1 or v2.0.
    "span_qa": span_qa.QuestionAnsweringTask,
    # Tagged words: tagging's model and alignment, any tag set and scheme.
    "tagging": tagging.TokenClassificationTask,
}
# Task name -> task class: every benchmark, by its family and whether it reads your own data.
TASKS = {name: (OWN_DATA if benchmark.own_data else FAMILIES)[benchmark.family]
         for name, benchmark in BENCHMARKS.items()}
# Pre-training reads a corpus, not a benchmark's files: BERT section 3.1 (masked LM +
# next-sentence prediction); GPT-1 section 3.1 and BERT Table 5 "LTR & No NSP" (left-to-right
# language model).
TASKS["pretrain/masked_lm"] = pretraining.MaskedLMTask
TASKS["pretrain/causal_lm"] = pretraining.CausalLMTask
# Sentence embeddings read your own (anchor, positive) pairs, not a benchmark's files:
# Sentence-BERT's pooling, sentence-transformers' MultipleNegativesRankingLoss.
TASKS["sentence_embedding"] = sentence_embedding.SentenceEmbeddingTask


def create(name, config=None, check_data=True, rows=None):
    """The task `name` built from `config` (an Experiment, a dict of sections, or None);
    `rows` ({split: a list of dicts or a pandas DataFrame}): your own data in memory, for
    text_classification.

    Examples:
        >>> import zoo_tasks
        >>> sorted(zoo_tasks.TASKS)[:3]
        ['glue/cola', 'glue/mnli', 'glue/mrpc']
    """

    if name not in TASKS:
        raise config_lib.ConfigError(f"task: unknown task {name!r}; known tasks: "
                                     f"{', '.join(TASKS)}")
    if config is None or isinstance(config, dict):
        config = config_lib.resolve({**(config or {}), "task": name})
    if rows is not None:
        if TASKS[name] is not text_classification.TextClassificationTask:
            raise config_lib.ConfigError(f"rows: {name} reads its benchmark's files; rows in "
                                         "memory are for text_classification")
        return TASKS[name](name, config, check_data=check_data, rows=rows)
    return TASKS[name](name, config, check_data=check_data)


# The tasks whose model is a left-to-right language model, the ones that write text: GPT-1
# (gpt1/pretrain) and BERT's LTR encoder (bert/pretrain_ltr).
LANGUAGE_MODELS = ("pretrain/causal_lm",)


class LoadedRun:
    """A trained run directory in memory: `config`, `task`, `model`, `tokenizer`; a language
    model's run also writes text (`generate`, `stream`: `zoo.generation.Generator`'s)."""

    def __init__(self, path, config, task, model):
        self.path, self.config, self.task, self.model = path, config, task, model
        self.tokenizer = getattr(task, "tokenizer", None)  # none for images
        self._generator = None

    @property
    def generator(self):
        """The run's `zoo.generation.Generator`, built on first use (its compiled steps are
        kept for later calls); a run that is not a language model's is a one-line error."""
        if self.config.task not in LANGUAGE_MODELS:
            raise ValueError(f"{self.path}: a {self.config.task} run does not write text; "
                             "generation takes a language model's run (task "
                             f"{', '.join(LANGUAGE_MODELS)}: gpt1/pretrain, bert/pretrain_ltr)")
        if self._generator is None:
            self._generator = generation.Generator(self.model, self.tokenizer)
        return self._generator

    def generate(self, prompts, **options):
        """`zoo.generation.Generator.generate` on the run's model and tokenizer: completions
        of a prompt (str) or of a list of them (see its options)."""
        return self.generator.generate(prompts, **options)

    def stream(self, prompt, **options):
        """`zoo.generation.Generator.stream`: the completion of one prompt, piece by piece as
        it is decoded."""
        return self.generator.stream(prompt, **options)


def load_run(run_dir, checkpoint="best"):
    """A trained run directory: its config, task (reading the run's own vocabulary, not its
    data), model and tokenizer, and for a language model's run `generate` and `stream`.

    Args:
        run_dir: a `zoo train` run directory.
        checkpoint: "best" (falling back to "final") or "final".

    Examples:
        >>> import zoo_tasks
        >>> run = zoo_tasks.load_run("runs/gpt")  # doctest: +SKIP
        >>> run.generate(["the film is", "a movie"], max_new_tokens=8, seed=1)  # doctest: +SKIP
    """
    config, model = training.load_run(run_dir, checkpoint)
    vocabulary = os.path.join(run_dir, "vocabulary")
    config = dataclasses.replace(config, model=dataclasses.replace(
        config.model, vocabulary=vocabulary if files.exists(vocabulary) else None,
        init_checkpoint=None))
    return LoadedRun(run_dir, config, create(config.task, config, check_data=False), model)
