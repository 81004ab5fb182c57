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
from zoo import convert, export, files, generation, loading, training
from zoo.convert import hf_heads
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
from zoo_tasks.serving import local

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
    """A model with its task, in memory: a trained run directory (`load_run`) or a checkpoint
    by name (`load`). `config`, `task`, `model`, `tokenizer`, `source` (a `zoo.loading.Source`
    for a name, else None); `predict` runs the export's own signatures in this process,
    `export` writes them as a SavedModel, `encode` gives sentence embeddings, and a language
    model writes text (`generate`, `stream`: `zoo.generation.Generator`'s)."""

    def __init__(self, path, config, task, model, source=None):
        self.path, self.config, self.task, self.model = path, config, task, model
        self.source = source
        self.tokenizer = getattr(task, "tokenizer", None)  # none for images
        self._generator = None
        self._signatures = {}

    @property
    def generator(self):
        """The run's `zoo.generation.Generator`, built on first use (its compiled steps are
        kept for later calls); a run that is not a language model's is a one-line error."""
        if self.config.task not in LANGUAGE_MODELS and self.source is None:
            raise ValueError(f"{self.path}: a {self.config.task} run does not write text; "
                             "generation takes a language model's run (task "
                             f"{', '.join(LANGUAGE_MODELS)}: gpt1/pretrain, bert/pretrain_ltr)")
        if self.config.task not in LANGUAGE_MODELS:
            raise ValueError(f"{self.source.describe()}: does not write text; generation takes "
                             "a language model (OpenAIGPTLMHeadModel, gpt1_openai)")
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

    def signature(self, name="serving_default"):
        """The export's signature `name`, traced once in this process
        (`zoo_tasks.serving.local.LocalSignature`)."""
        if name not in self._signatures:
            run_dir = self.path if self.source is None else None
            self._signatures[name] = local.LocalSignature(self.task, self.model, name, run_dir)
        return self._signatures[name]

    def predict(self, inputs, signature="serving_default", batch_size=32):
        """The answers the export gives, computed here: one dict of outputs an input.

        Args:
            inputs: a list of inputs: strings (or image bytes) for a signature with one
                input (text, image_bytes, prompt), else dicts of the signature's inputs
                ({"question": ..., "context": ...}).
            signature: the export's signature name.
            batch_size: inputs a call.

        Examples:
            >>> model = zoo_tasks.load("hf://org/sentiment")  # doctest: +SKIP
            >>> model.predict(["a great film"])  # doctest: +SKIP
            [{'label': 'positive', 'probabilities': [0.03, 0.97]}]
        """
        called = self.signature(signature)
        if isinstance(inputs, (str, bytes)):
            raise TypeError("predict takes a list of inputs, not one")
        rows = []
        for row in inputs:
            if not isinstance(row, dict):
                if len(called.specs) != 1:
                    raise TypeError(f"{signature} takes {', '.join(called.specs)}: give "
                                    "dicts of them")
                row = {next(iter(called.specs)): row}
            rows.append(row)
        return [out for start in range(0, len(rows), batch_size)
                for out in local.run_rows(called, rows[start:start + batch_size])]

    def encode(self, texts):
        """float32 [len(texts), dim] sentence embeddings (a sentence_embedding model)."""
        if self.config.task != "sentence_embedding":
            raise ValueError(f"{self.path}: a {self.config.task} model gives no sentence "
                             "embeddings; encode takes a sentence_embedding model")
        return self.task.embed(self.model, list(texts))

    def export(self, base, version=None, mixed_precision=None, quantize=None, progress=print):
        """Write the model with its task's signatures to `base/<version>/` (TF Serving's
        layout; `zoo.export.write_version` says what and how); returns the path."""
        version = export.new_version(base, version)
        run_dir = self.path if self.source is None else None
        return export.write_version(
            self.task, self.model, base, version, self.config.train.mixed_precision,
            mixed_precision, run_dir, None if self.source is None else self.source.given,
            progress, quantize, source=None if self.source is None else self.source.origin)


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


# The size preset of each model_type (config.json): a named checkpoint's task is configured on
# its family's preset; its own sizes come from the checkpoint.
_SIZES = {"bert": "bert_base", "openai-gpt": "gpt1", "vit": "vit_base16"}
# The tasks a checkpoint without that head still serves: pooled token vectors, as
# sentence-transformers reads a plain Hugging Face model.
_HEADLESS = ("sentence_embedding",)


def load(source, task=None, overrides=(), checkpoint="best", progress=True):
    """A checkpoint by name, or a run, with its task: what `zoo export --model`, `zoo predict
    --model`, `zoo generate --model` and `zoo evaluate --model` run, no training needed.

    The task is the head's (`zoo.loading.TASKS`: BertForSequenceClassification ->
    text_classification with `id2label`'s names, ...ForTokenClassification ->
    token_classification, ...ForQuestionAnswering -> question_answering, ...ForMultipleChoice
    -> swag, ...ForMaskedLM -> pretrain/masked_lm, OpenAIGPTLMHeadModel -> pretrain/causal_lm,
    ViTForImageClassification -> image_folder, a sentence-transformers folder ->
    sentence_embedding), or `task` where the checkpoint has none that serves it. The model
    is the one the task trains, every weight set from the checkpoint
    (`zoo.convert.load_into`).

    Args:
        source: any source `zoo.loading` reads (a preset, hf://ORG/NAME, ORG/NAME, a folder,
            a run directory ...).
        task: a `TASKS` name; default: the head's.
        overrides: `--set` strings (`data.text_pair_column=text_pair`, `data.sequence_length=256`).
        checkpoint: a run directory's "best" or "final".
        progress: show the download's progress.

    Examples:
        >>> import zoo_tasks
        >>> model = zoo_tasks.load("hf://org/sentiment")  # doctest: +SKIP
        >>> model.predict(["a great film"])  # doctest: +SKIP
    """
    found = loading.describe(source, progress)
    if found.kind == "run":
        if task or overrides:
            raise config_lib.ConfigError(f"{source}: a run directory keeps its own task and "
                                         "config; --task and --set are for checkpoints by name")
        return load_run(found.path, checkpoint)
    name = task or found.task
    if name is None:
        raise config_lib.ConfigError(
            f"{found.describe()}: no task head; give the task (--task: one of "
            f"{', '.join(sorted(set(loading.TASKS.values()) | set(_HEADLESS)))}), or fine-tune "
            "it first (zoo train with model.init_checkpoint)")
    if name not in TASKS:
        raise config_lib.ConfigError(f"task: unknown task {name!r}; known tasks: "
                                     f"{', '.join(TASKS)}")
    if found.task is None and name not in _HEADLESS:
        raise config_lib.ConfigError(
            f"{found.describe()}: has no {name} head; fine-tune it first: zoo train with "
            f"model.init_checkpoint={source}")
    config = config_lib.resolve(_named_config(found, name), list(overrides))
    try:
        built = create(name, config, check_data=False)
        model = built.build_model()
        # The head's own task, or a benchmark of the same head (a sequence classifier scored
        # on SNLI or a GLUE task: by label index, the benchmark's label names).
        heads = hf_heads.HEADS.get(found.architecture, ())
        head = found.task == name or isinstance(model, heads)
        if not head and name not in _HEADLESS:
            raise config_lib.ConfigError(
                f"{found.describe()}: has no {name} head (it serves {found.task}); fine-tune "
                f"it first: zoo train with model.init_checkpoint={source}")
        if head and name != "sentence_embedding":
            convert.load_into(model, found.path, name=found.name)
    except (FileNotFoundError, convert.ConversionError, config_lib.ConfigError) as error:
        if found.checkpoint is None or str(error).startswith(found.given):
            raise
        # what was missing in the download's folder, named by the repo and commit
        raise type(error)(f"{found.name}: {error}") from None
    return LoadedRun(found.given, config, built, model, source=found)


def _named_config(found, name):
    """The experiment of a named checkpoint's task: its family's preset, the checkpoint as
    `model.init_checkpoint`, and what its config.json says of the labels."""
    model_type = found.config.get("model_type")
    if model_type not in _SIZES:
        raise config_lib.ConfigError(f"{found.describe()}: a {found.kind} has no config.json "
                                     "model_type (bert, openai-gpt, vit) to serve by name")
    init = found.checkpoint.source if found.checkpoint is not None else found.path
    positions = found.config.get("max_position_embeddings", found.config.get("n_positions", 512))
    length = min(config_lib.DataConfig().sequence_length, positions)
    data = {"sequence_length": length}
    if name == "text_classification":
        kind = found.problem_type
        data.update(regression=kind == "regression",
                    multi_label=kind == "multi_label_classification")
        if kind != "regression":
            data["labels"] = found.labels
    elif name in ("token_classification", "image_folder"):
        data["labels"] = found.labels
    elif name == "question_answering":
        # transformers' question-answering pipeline's defaults (max_seq_len 384, doc_stride
        # 128, at most half the length, max_question_len 64, max_answer_len 15); SQuAD 1.1:
        # an answer always.
        length = min(384, positions)
        data.update(version_2=False, sequence_length=length, doc_stride=min(128, length // 2),
                    max_query_length=min(64, length // 2), max_answer_length=15)
    model = {"preset": _SIZES[model_type], "init_checkpoint": init}
    if name == "pretrain/masked_lm":
        model["next_sentence"] = found.architecture == "BertForPreTraining"
    return {"task": name, "model": model, "data": data}
