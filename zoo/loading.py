"""Loading by name: the one place where a source of weights becomes a model.

A source is any of:

    bert_base_uncased[@REVISION]     a pretrained preset (`zoo presets`), downloaded by zoo.hub
    hf://ORG/NAME[@REVISION]         a Hugging Face Hub repo, downloaded by zoo.hub
    ORG/NAME[@REVISION]              the same, when no such local path exists (as transformers)
    a Hugging Face folder            config.json + model.safetensors (+ tokenizer files)
    a sentence-transformers folder   modules.json + its Transformer and Pooling modules
    a keras-hub preset               config.json + metadata.json + model.weights.h5
    a Google BERT checkpoint         bert_config.json + bert_model.ckpt.*
    a .keras file                    a zoo model saved by Keras
    a zoo run directory              config.yaml + final.keras / best.keras

`describe(source)` resolves it once (a hub name is asked of the hub once a process, so the
weights and the tokenizer come from one commit) and says what it holds: its kind, local path,
hub record (repo, revision, commit), config.json, architecture, the task it serves and its
label names (`id2label`). `load_model` gives its model, with the head when asked;
`load_backbone` its backbone, a run's starting point. The tasks (`zoo_tasks.load`) put a task
around a described source: tokenizer, serving, `predict`, `generate`, `encode`, `export`.

Why here: above `zoo.models` (which builds models and imports nothing that reads files),
`zoo.hub` (names to folders) and `zoo.convert` (folders to weights), and below the tasks; so
the models floor never imports upward, and every caller (training's starting points, `zoo
convert`, embeddings, the CLI) asks one function.
"""

import dataclasses
import os
import re
import warnings

import keras

from zoo import files, hub
from zoo.convert import bert_checkpoint, hf_heads, keras_hub_presets
from zoo.convert.core import ConversionError, read_json
from zoo.models import Backbone
from zoo.models.presets import PRESETS
from zoo.models.pretrained_presets import PRETRAINED

# The task each head serves, by config.json's `architectures` (transformers' class names); a
# sentence-transformers folder serves "sentence_embedding". Tasks are `zoo_tasks.TASKS` names.
TASKS = {
    "BertForSequenceClassification": "text_classification",
    "BertForTokenClassification": "token_classification",
    "BertForQuestionAnswering": "question_answering",
    "BertForMultipleChoice": "swag",
    "BertForMaskedLM": "pretrain/masked_lm",
    "BertForPreTraining": "pretrain/masked_lm",
    "OpenAIGPTLMHeadModel": "pretrain/causal_lm",
    "ViTForImageClassification": "image_folder",
}
# Architectures read as a backbone only: they serve a task given with --task.
BACKBONES = ("BertModel", "OpenAIGPTModel", "ViTModel", "BertForNextSentencePrediction",
             "OpenAIGPTDoubleHeadsModel")
KINDS = ("preset", "hub", "huggingface", "sentence-transformers", "keras-hub",
         "bert-checkpoint", "keras", "run")
# A bare hub repo id, as transformers reads one: ORG/NAME, letters, digits, "-", "_", ".".
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(@[^/@]+)?$")


@dataclasses.dataclass
class Source:
    """What a source holds (see the module docstring)."""

    given: str  # as the user wrote it
    kind: str  # one of KINDS
    path: str  # the local folder or file (a hub name: its snapshot in huggingface_hub's cache)
    checkpoint: hub.Checkpoint | None = None  # a hub name's repo, revision and commit
    config: dict = dataclasses.field(default_factory=dict)  # config.json (Hugging Face)
    architecture: str | None = None
    task: str | None = None  # the task its head serves (TASKS), None: a backbone

    @property
    def labels(self):
        """`id2label`'s names in id order, or None (no named labels, or a regression)."""
        names = self.config.get("id2label")
        if not names or self.problem_type == "regression":
            return None
        return [names[key] for key in sorted(names, key=int)]

    @property
    def problem_type(self):
        """transformers' problem_type of a sequence classifier: "regression" (one output),
        "multi_label_classification" or "single_label_classification"."""
        kind = self.config.get("problem_type")
        if kind is None and hf_heads.num_labels(self.config) == 1:
            return "regression"
        return kind or "single_label_classification"

    @property
    def origin(self):
        """A JSON-able record of where the weights came from (a hub name: repo and commit)."""
        if self.checkpoint is not None:
            return self.checkpoint.record()
        return {"source": self.given, "path": files.absolute(self.path), "kind": self.kind}

    @property
    def name(self):
        """How errors name it: as given, with the repo and commit of a hub name."""
        if self.checkpoint is None:
            return self.given
        return f"{self.given} ({self.checkpoint.repo}@{self.checkpoint.commit[:12]})"

    def describe(self):
        """One line: the source, what it holds and where from."""
        where = (f"{self.checkpoint.repo}@{self.checkpoint.commit[:12]}"
                 if self.checkpoint else self.path)
        what = self.architecture or self.kind
        return f"{self.given}: {what} ({where})" + (f", task {self.task}" if self.task else "")


def is_bare_repo(source):
    """Whether `source` reads as a bare hub repo id (ORG/NAME[@REVISION]) and no local path of
    that name exists: transformers' rule.

    Examples:
        >>> is_bare_repo("google-bert/bert-base-uncased"), is_bare_repo("./runs/mrpc")
        (True, False)
    """
    return (isinstance(source, str) and bool(_REPO.match(source))
            and not files.exists(source) and not files.exists(source.partition("@")[0]))


def hub_name(source):
    """`source` as zoo.hub reads it: a bare ORG/NAME becomes hf://ORG/NAME; anything else is
    returned as it is."""
    return hub.PREFIX + source if is_bare_repo(source) else source


def describe(source, progress=True):
    """The `Source` of `source` (a name is downloaded once, then read from the cache).

    Raises:
        hub.HubError: a name that cannot be had (one line naming the repo).
        FileNotFoundError: a path that is none of the kinds above.
    """
    given = os.fspath(source)
    name = hub_name(given)
    if hub.is_hub(name):
        found = hub.checkpoint(name, progress=progress)
        kind = "preset" if found.preset else "hub"
        if found.format == "keras-hub":
            return Source(given, "keras-hub", found.folder, found, read_json(
                os.path.join(found.folder, "config.json")))
        return _folder_source(given, found.folder, kind, found)
    if files.isfile(os.path.join(given, "config.yaml")):
        return Source(given, "run", given)
    if given.endswith(".keras"):
        if not files.isfile(given):
            raise FileNotFoundError(f"{given}: no such file")
        return Source(given, "keras", given)
    if files.isfile(os.path.join(given, "config.json")):
        if keras_hub_presets.is_keras_hub(given):
            return Source(given, "keras-hub", given, config=read_json(
                os.path.join(given, "config.json")))
        return _folder_source(given, given, None, None)
    if bert_checkpoint.find(given) is not None:
        return Source(given, "bert-checkpoint", given)
    raise FileNotFoundError(
        f"{given}: not a checkpoint; expected a pretrained preset ({', '.join(PRETRAINED)}), "
        "hf://ORG/NAME or ORG/NAME, a Hugging Face or sentence-transformers folder "
        "(config.json), a keras-hub preset, a Google BERT checkpoint (bert_config.json + "
        "bert_model.ckpt.*), a .keras file or a zoo run directory (config.yaml)")


def _folder_source(given, folder, kind, found):
    config = read_json(os.path.join(folder, "config.json"))
    sentence = files.isfile(os.path.join(folder, "modules.json"))
    architecture = hf_heads.architecture(config)
    if sentence:
        task = "sentence_embedding"
    elif architecture in TASKS:
        task = TASKS[architecture]
    elif architecture is None or architecture in BACKBONES:
        task = None
    else:
        raise ConversionError(
            f"{given}: architecture {architecture} (config.json) is not one zoo reads; it "
            f"reads {', '.join(sorted([*TASKS, *BACKBONES]))}")
    return Source(given, kind or ("sentence-transformers" if sentence else "huggingface"),
                  folder, found, config, architecture, task)


def load_model(source, with_head=False, progress=True):
    """The model of `source`: its backbone, or with `with_head` its head model
    (`zoo.convert.from_huggingface`'s heads; a .keras file or run as it was saved).

    A pretrained preset's checkpoint must be its architecture (an error otherwise); one of
    another size is loaded as it is, with a warning naming both sizes.

    Args:
        source: any source of the module docstring, or a `Source`.
        with_head: keep the checkpoint's head.
        progress: show the download's and the conversion's progress.
    """
    found = source if isinstance(source, Source) else describe(source, progress)
    if found.kind == "keras-hub":
        if with_head:
            raise ValueError(f"{found.given}: a keras-hub preset is read as a backbone only; "
                             "drop with_head")
        model = keras_hub_presets.from_keras_hub(found.path, progress=progress)
    elif found.kind == "run":
        model = _run_model(found.path)
    elif found.kind == "keras":
        model = keras.saving.load_model(found.path)
    elif found.kind == "bert-checkpoint":
        model = bert_checkpoint.from_bert_checkpoint(*bert_checkpoint.find(found.path))
    else:
        model = hf_heads.from_huggingface(found.path, with_head=with_head, progress=progress)
    if found.checkpoint is not None and found.checkpoint.preset is not None:
        _check_size(backbone_of(model), found.checkpoint)
    return model if with_head else backbone_of(model)


def load_backbone(source, progress=True):
    """The backbone of `source` (`load_model` without the head)."""
    return load_model(source, progress=progress)


def backbone_of(model):
    """A head model's backbone, or the backbone itself."""
    return model if isinstance(model, Backbone) else model.backbone


def _run_model(path):
    for name in ("final.keras", "best.keras"):
        if files.isfile(os.path.join(path, name)):
            return keras.saving.load_model(os.path.join(path, name))
    raise FileNotFoundError(f"{path}: a run directory without final.keras or best.keras (has "
                            "the run finished?)")


def _check_size(backbone, found):
    """Warn where a pretrained preset's checkpoint is not the size the preset says."""
    entry = PRETRAINED[found.preset]
    class_name, expected = PRESETS[found.preset]
    if type(backbone).__name__ != class_name:
        raise ValueError(f"{found.source} ({found.repo}@{found.commit[:12]}): holds a "
                         f"{type(backbone).__name__}, but the preset is a {class_name}")
    config = backbone.get_config()
    differ = [f"{key}={config.get(key)!r} (not {value!r})" for key, value in expected.items()
              if config.get(key) != value]
    if differ:
        warnings.warn(f"{found.source}: the checkpoint {found.repo}@{found.commit[:12]} is "
                      f"not of size {entry['size']}: {', '.join(differ)}; loaded as it is",
                      stacklevel=3)
