"""Experiment configs: typed dataclasses, filled from defaults, then a YAML file, then `--set`.

An experiment has four sections and one name for every setting, from the YAML key to the
`--set` key to the argument that uses it: `--set train.learning_rate=3e-5` sets the field
`learning_rate` of `TrainConfig`, which is the peak rate of the schedule.

    task: glue/mrpc
    model: {preset: bert_base, init_checkpoint: null, vocabulary: null}
    data: {dir: /path/to/MRPC, sequence_length: 128}
    train: {batch_size: 32, learning_rate: 2.0e-5, epochs: 3, warmup_fraction: 0.1}

Unknown keys, wrong types and values out of range are a `ConfigError` naming the key (and the
file) before anything runs. `resolve(experiment, overrides)` does the three steps;
`to_dict(config)` gives what is written to a run directory's config.yaml.
"""

import copy
import dataclasses
import os
import sys
import types
import typing

import yaml

from zoo import files
from zoo.layers.hidden_state_features import FEATURES

# The experiment YAMLs are package data (zoo/configs/, in the wheel); the repository's
# top-level configs/ is a link to them.
CONFIG_ROOT = os.path.join(os.path.dirname(files.absolute(__file__)), "configs", "experiments")


class ConfigError(ValueError):
    """A config that cannot be used; the message names the key and where it came from."""


def _field(default, help, *, min=None, max=None, choices=None, factory=None, item=None):
    metadata = dict(help=help, min=min, max=max, choices=choices, item=item)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


# === Sections ===


@dataclasses.dataclass
class ModelConfig:
    """What to build and where its weights and vocabulary come from."""

    preset: str = _field("bert_base", "a zoo.models preset: a size (bert_base, ...), alone "
                         "(no init_checkpoint) random initialization; or a pretrained one "
                         "(bert_base_uncased, ...: `zoo presets`), its checkpoint's weights and "
                         "tokenizer")
    init_checkpoint: str | None = _field(None, "a .keras file, a zoo run directory, a Hugging "
                                         "Face folder, a Google BERT checkpoint (directory "
                                         "or bert_model.ckpt prefix), hf://ORG/NAME[@REVISION] "
                                         "or a pretrained preset name")
    vocabulary: str | None = _field(None, "vocabulary directory (zoo data vocab or Hugging "
                                    "Face files); default: the init checkpoint's")
    backbone: dict = _field(None, "backbone constructor overrides, e.g. {num_layers: 2}",
                            factory=dict)
    dropout: float = _field(0.1, "dropout before the classifier (BERT 4.1, GPT-1 4.1: 0.1)",
                            min=0.0, max=1.0)
    next_sentence: bool = _field(True, "pretraining: the next-sentence head (BERT Table 5 "
                                 "'No NSP': false)")
    features: str | None = _field(None, "feature-based NER (BERT Table 7): the frozen encoder's "
                                  "features fed to a BiLSTM; null: fine-tune the encoder",
                                  choices=FEATURES)
    lstm_units: int = _field(768, "BiLSTM units per direction: feature-based NER (BERT 5.3), "
                             "model.bilstm", min=1)
    bilstm: bool = _field(False, "BERT classification and span QA: a randomly initialized "
                          "BiLSTM over the encoder's token vectors under the classifier or "
                          "the span layer (BERT Table 5, 'LTR & No NSP + BiLSTM')")
    transfer_layers: int | None = _field(None, "GPT-1 Figure 2 (left): copy only the embeddings "
                                         "and the first K blocks from init_checkpoint; null: "
                                         "all", min=0)
    pooling: str | None = _field(None, "sentence_embedding: the pooling of the token vectors "
                                 "(mean, cls or max); null: the init checkpoint's "
                                 "sentence-transformers folder's (1_Pooling/config.json), "
                                 "else mean", choices=("mean", "cls", "max"))
    normalize: bool | None = _field(None, "sentence_embedding: L2-normalize the vectors; null: "
                                    "as the init checkpoint's sentence-transformers folder "
                                    "(a Normalize module), else false")


@dataclasses.dataclass
class PhaseConfig:
    """One pretraining phase: a sequence length for a fraction of the steps (BERT A.2)."""

    sequence_length: int = _field(128, "tokens per sequence in this phase", min=8)
    fraction: float = _field(1.0, "fraction of train.steps spent in this phase", min=0.0,
                             max=1.0)


@dataclasses.dataclass
class DataConfig:
    """Where the benchmark files are and how they become model inputs."""

    dir: str | None = _field(None, "directory holding the task's official files (train.tsv, "
                             "dev.tsv ...; pretraining: the seq<L> shard folders)")
    sequence_length: int = _field(128, "tokens per sequence (truncated / padded)", min=8)
    pad_to_multiple_of: int | None = _field(None, "dynamic padding: pad each batch to its "
                                            "longest sequence rounded up to a multiple of "
                                            "this (compilations <= sequence_length / it); 0: "
                                            "to sequence_length (the papers); null: "
                                            "8, or sequence_length / 4 under XLA / on JAX", min=0)
    sort_by_length: bool = _field(True, "evaluation and prediction: batch the examples by "
                                  "length (little padding); results stay in file order")
    skip_bad_rows: bool = _field(False, "skip, count and report malformed rows instead of "
                                 "stopping at the first")
    # Your own data (text_classification): files of any name, columns by name, any labels.
    train_file: str | None = _field(None, "your own data: the training file (.csv, .tsv, "
                                    ".jsonl, .parquet) or folder of class folders of .txt files")
    dev_file: str | None = _field(None, "your own data: the file evaluated during training and "
                                  "by zoo evaluate")
    test_file: str | None = _field(None, "your own data: a test file (labels optional)")
    format: str | None = _field(None, "your own data: csv, tsv, jsonl, parquet or folder "
                                "(text_classification), conll or jsonl "
                                "(token_classification); default: from the file's extension "
                                "(a directory: folder)",
                                choices=("csv", "tsv", "jsonl", "parquet", "folder", "conll"))
    text_column: str = _field("text", "your own data: the column of the text")
    text_pair_column: str | None = _field(None, "your own data: the column of the second text "
                                          "of a pair (BERT: segment B; GPT-1: the entailment "
                                          "form); null: one text")
    label_column: str = _field("label", "your own data: the column of the label(s)")
    tokens_column: str = _field("tokens", "token_classification, JSON lines: the field of a "
                                "sentence's list of words")
    tags_column: str = _field("tags", "token_classification, JSON lines: the field of its "
                              "list of tags, one a word")
    id_column: str | None = _field(None, "your own data: a column of example ids; null: the "
                                   "line (CSV, TSV, JSONL), row (Parquet) or file (folder)")
    labels: list | None = _field(None, "your own data: the label (or tag) names in label-id "
                                 "order; null: every label of the training file, sorted "
                                 "(numerically when all are integers; tags: O first, then by "
                                 "type), written here in the run's config.yaml; with a "
                                 "folder, class folders not listed are skipped and counted",
                                 item=str)
    regression: bool = _field(False, "your own data: the labels are numbers (a score out, "
                              "squared error)")
    multi_label: bool = _field(False, "your own data: each row has any number of labels (a "
                               "list in JSONL / Parquet, label_separator in CSV / TSV); "
                               "sigmoid outputs")
    label_separator: str = _field(",", "your own data, multi_label: what separates the labels "
                                  "of a CSV / TSV cell and of a predictions file's")
    threshold: float = _field(0.5, "your own data, multi_label: a label is predicted when its "
                              "probability is at least this", min=0.0, max=1.0)
    version_2: bool | None = _field(None, "question_answering: SQuAD 2.0 (unanswerable "
                                    "questions, a tuned no-answer threshold) or 1.1; null: "
                                    "detected from the training file and written here")
    mask_selection_rate: float = _field(0.15, "masked LM: fraction of tokens predicted "
                                        "(BERT 3.1)", min=0.0, max=1.0)
    mask_token_rate: float = _field(0.8, "masked LM: of those, replaced by [MASK] (Table 8)",
                                    min=0.0, max=1.0)
    random_token_rate: float = _field(0.1, "masked LM: of those, replaced by a random token",
                                      min=0.0, max=1.0)
    phases: list = _field(None, "pretraining phases [{sequence_length, fraction}, ...]; empty:"
                          " one phase at sequence_length", factory=list, item="PhaseConfig")
    doc_stride: int = _field(128, "SQuAD: tokens between the starts of a context's windows "
                             "(run_squad.py)", min=1)
    max_query_length: int = _field(64, "SQuAD: questions are cut to this many tokens", min=1)
    n_best_size: int = _field(20, "SQuAD: start and end candidates per window (BERT 4.2)",
                              min=1)
    max_answer_length: int = _field(30, "SQuAD: longest predicted answer, in tokens", min=1)


# tf.distribute strategies, then keras.distribution over JAX devices (zoo.training).
STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu",
              "jax_data_parallel", "jax_model_parallel")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
# train.lora_targets: a block's attention projections and feed-forward layers (zoo.lora).
LORA_TARGETS = ("query", "key", "value", "output", "ffn_intermediate", "ffn_output")


@dataclasses.dataclass
class TrainConfig:
    """Optimization, schedule, distribution and bookkeeping of `model.fit`."""

    batch_size: int = _field(32, "global batch size (all replicas together)", min=1)
    learning_rate: float = _field(2e-5, "peak learning rate of the schedule", min=0.0)
    epochs: float = _field(3.0, "passes over the training data (ignored when steps is set)",
                           min=0.0)
    steps: int | None = _field(None, "total optimizer steps; default: from epochs", min=1)
    warmup_fraction: float = _field(0.1, "fraction of the steps with linear warmup",
                                    min=0.0, max=1.0)
    warmup_steps: int | None = _field(None, "warmup steps; overrides warmup_fraction", min=0)
    schedule: str = _field("linear", "decay after warmup: linear (BERT) or cosine (GPT-1 "
                           "pretraining)", choices=("linear", "cosine"))
    weight_decay: float = _field(0.01, "AdamW decoupled weight decay; never on LayerNorm or "
                                 "biases", min=0.0)
    clip_norm: float = _field(1.0, "global gradient-norm clipping (0: off)", min=0.0)
    adam_epsilon: float = _field(1e-6, "Adam epsilon (BERT's optimizer: 1e-6)", min=0.0)
    optimizer: str = _field("adamw", "adamw (BERT, GPT-1) or sgd with momentum (ViT "
                            "fine-tuning, appendix B.1.1)", choices=("adamw", "sgd"))
    momentum: float = _field(0.9, "sgd: momentum", min=0.0, max=1.0)
    lm_weight: float = _field(0.5, "GPT-1 fine-tuning: lambda of the auxiliary LM loss "
                              "(L3 = L2 + lambda L1); 0 turns it off", min=0.0)
    eval_every: int | None = _field(None, "steps between evaluations and backups; default: "
                                    "one epoch", min=1)
    log_every: int = _field(10, "steps between TensorBoard training scalars", min=1)
    keep_checkpoints: bool = _field(False, "also keep the model of every evaluation as "
                                    "checkpoints/step_<N>.keras in the run directory (e.g. "
                                    "zero-shot over pre-training updates, GPT-1 Figure 2 right)")
    seed: int = _field(0, "seed of weights, data order, dropout and masks", min=0)
    deterministic: bool = _field(True, "deterministic TF ops (exact resume, slower)")
    strategy: str = _field("default", "how training is spread over devices: a tf.distribute "
                           "strategy (default, one_device, mirrored, multi_worker_mirrored, tpu;"
                           " KERAS_BACKEND=tensorflow) or keras.distribution over JAX devices "
                           "(KERAS_BACKEND=jax): jax_data_parallel (DataParallel, each device "
                           "a slice of the batch) or jax_model_parallel (ModelParallel on a "
                           "(devices / model_parallel) x model_parallel ('batch', 'model') mesh: "
                           "attention and feed-forward kernels split Megatron-style over "
                           "'model', see zoo/models/layout.py, the batch split over 'batch')",
                           choices=STRATEGIES)
    devices: int | None = _field(None, "mirrored on CPU: split the CPU into this many logical "
                                 "devices; jax_*: use the first this many JAX devices "
                                 "(default: all; on CPU, XLA_FLAGS="
                                 "--xla_force_host_platform_device_count=N makes N)", min=1)
    model_parallel: int | None = _field(None, "jax_model_parallel: size of the mesh's 'model' "
                                        "axis (devices sharing each kernel); must divide "
                                        "devices, which give devices / model_parallel batch "
                                        "slices (data x model parallelism); default: all "
                                        "devices (one batch slice)", min=1)
    tpu: str = _field("", "TPU name or address for strategy=tpu ('' = local)")
    mixed_precision: str = _field("float32", "Keras dtype policy", choices=PRECISIONS)
    jit_compile: bool = _field(False, "compile train/predict steps with XLA")
    eval_examples: int = _field(4, "dev examples shown in TensorBoard's text tab", min=0)
    lora_rank: int | None = _field(None, "fine-tuning: LoRA of this rank on lora_targets "
                                   "(only the adapters, the task head and the LayerNorms "
                                   "train; docs/lora.md); null or 0: every weight trains",
                                   min=0)
    lora_alpha: float | None = _field(None, "LoRA: the update is scaled by lora_alpha / "
                                      "lora_rank; null: the rank (a scale of 1)", min=0.0)
    lora_targets: list | None = _field(None, "LoRA: the Dense layers of every block it adapts, "
                                       f"of {', '.join(LORA_TARGETS)}; null: [query, value] "
                                       "(LoRA paper 7.1)", item=str)


@dataclasses.dataclass
class Experiment:
    """One experiment: the task and its four sections."""

    task: str = _field("", "task name, e.g. glue/mrpc (see `zoo_tasks.TASKS`)")
    model: ModelConfig = _field(None, "model section", factory=ModelConfig)
    data: DataConfig = _field(None, "data section", factory=DataConfig)
    train: TrainConfig = _field(None, "train section", factory=TrainConfig)
    sweep: dict = _field(None, "run one sub-run per value: {dotted key: [values]}, e.g. "
                         "{model.features: [last, sum_all]}; results in sweep.json and "
                         "table.md", factory=dict)


# === Loading and checking ===


def experiment_path(name):
    """The YAML file of `name`: a path to a .yaml file, or `family/task` under configs/."""
    if name.endswith((".yaml", ".yml")) or os.sep in name and files.isfile(name):
        if not files.isfile(name):
            raise ConfigError(f"--experiment {name}: no such file")
        return name
    path = os.path.join(CONFIG_ROOT, name + ".yaml")
    if not files.isfile(path):
        known = sorted(os.path.relpath(os.path.join(root, f), CONFIG_ROOT)[:-5]
                       for root, _, names in files.walk(CONFIG_ROOT) for f in names
                       if f.endswith(".yaml"))
        raise ConfigError(f"--experiment {name}: no {path}; known experiments: "
                          f"{', '.join(known)}")
    return path


def resolve(experiment=None, overrides=()):
    """Defaults, then the experiment's YAML (if any), then `key=value` overrides.

    Args:
        experiment: an experiment name (`bert/glue_mrpc`), a YAML path, a dict, or None.
        overrides: strings `section.key=value`; values are parsed as YAML (`3e-5`, `true`,
            `[1, 2]`, `null`).

    Examples:
        >>> config = resolve({"task": "glue/mrpc"}, ["train.learning_rate=3e-5"])
        >>> config.train.learning_rate, config.model.preset
        (3e-05, 'bert_base')
    """
    source = "defaults"
    data = {}
    if isinstance(experiment, dict):
        data, source = experiment, "experiment"
    elif experiment:
        source = experiment_path(experiment)
        with files.open(source, encoding="utf-8") as file:
            try:
                data = yaml.safe_load(file) or {}
            except yaml.YAMLError as error:
                raise ConfigError(f"{source}: invalid YAML: {error}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping of sections, found "
                              f"{type(data).__name__}")
    config = _build(Experiment, data, "", source)
    for override in overrides:
        key, sep, text = override.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {override}: expected key=value, e.g. "
                              "train.learning_rate=3e-5")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        _set(config, key.strip(), value, f"--set {override}")
    check(config)
    config.data.pad_to_multiple_of = _pad_multiple(config)
    return config


def _pad_multiple(config):
    """`data.pad_to_multiple_of`, null resolved: 8 where a new batch shape costs nothing; 1/4
    of sequence_length (a multiple of 8) where each compiles (XLA, JAX) (docs/training.md)."""
    if config.data.pad_to_multiple_of is not None:
        return config.data.pad_to_multiple_of
    backend = (sys.modules["keras"].config.backend() if "keras" in sys.modules  # imported
               else os.environ.get("KERAS_BACKEND", "tensorflow"))
    if not (config.train.jit_compile or backend == "jax"):
        return 8
    quarter = -(-config.data.sequence_length // 4)  # rounded up, then up to a multiple of 8
    return max(8, -(-quarter // 8) * 8)


def check(config, where="config"):
    """Cross-field checks that single fields cannot express."""
    if not config.task:
        raise ConfigError(f"{where}: task: missing; e.g. task: glue/mrpc")
    data = config.data
    if data.mask_token_rate + data.random_token_rate > 1:
        raise ConfigError(f"{where}: data.mask_token_rate + data.random_token_rate must be "
                          f"<= 1, found {data.mask_token_rate} + {data.random_token_rate}")
    if data.phases and abs(sum(p.fraction for p in data.phases) - 1) > 1e-6:
        raise ConfigError(f"{where}: data.phases: fractions must add up to 1, found "
                          f"{[p.fraction for p in data.phases]}")
    if data.regression and data.multi_label:
        raise ConfigError(f"{where}: data.regression and data.multi_label: one or the other")
    if data.regression and data.labels:
        raise ConfigError(f"{where}: data.labels: a regression has no label names")
    train = config.train
    if train.model_parallel is not None and train.strategy != "jax_model_parallel":
        raise ConfigError(f"{where}: train.model_parallel {train.model_parallel}: only for "
                          f"train.strategy=jax_model_parallel, found {train.strategy}")
    _check_lora(config, where)
    for key, values in config.sweep.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}: sweep.{key}: expected a non-empty list of values, "
                              f"found {values!r}")
        if key.split(".")[0] in ("task", "sweep"):
            raise ConfigError(f"{where}: sweep.{key}: the task and the sweep cannot be swept")
        for value in values:  # each value must be valid for its key
            _set(copy.deepcopy(config), key, value, f"{where}: sweep.{key}")


def _check_lora(config, where):
    train = config.train
    unknown = [name for name in train.lora_targets or () if name not in LORA_TARGETS]
    if unknown:
        raise ConfigError(f"{where}: train.lora_targets: unknown layer {unknown[0]!r}; "
                          f"expected some of {', '.join(LORA_TARGETS)}")
    if train.lora_targets == []:
        raise ConfigError(f"{where}: train.lora_targets: empty; null means [query, value]")
    if not train.lora_rank:
        if train.lora_alpha is not None:
            raise ConfigError(f"{where}: train.lora_alpha {train.lora_alpha}: only with "
                              "train.lora_rank")
        return
    if config.task.startswith("pretrain/"):
        raise ConfigError(f"{where}: train.lora_rank: LoRA is for fine-tuning; {config.task} "
                          "trains every weight")
    if train.lora_alpha == 0:
        raise ConfigError(f"{where}: train.lora_alpha: must be > 0 (null: the rank)")


def sweep_runs(config):
    """The sub-runs of `config.sweep`: [(name, config)], one per value (keys in turn).

    Examples:
        >>> config = resolve({"task": "conll2003",
        ...                   "sweep": {"model.features": ["last", "sum_all"]}})
        >>> [(name, c.model.features, c.sweep) for name, c in sweep_runs(config)]
        [('model.features=last', 'last', {}), ('model.features=sum_all', 'sum_all', {})]
    """
    runs = []
    for key, values in config.sweep.items():
        for value in values:
            sub = copy.deepcopy(config)
            sub.sweep = {}
            _set(sub, key, value, f"sweep.{key}")
            runs.append((f"{key}={value}", sub))
    return runs


def to_dict(config):
    """Plain data (for config.yaml and comparisons)."""
    return dataclasses.asdict(config)


def from_dict(data, source):
    """An `Experiment` from plain data, e.g. a run directory's config.yaml."""
    config = _build(Experiment, data, "", source)
    check(config, source)
    return config


def _build(cls, data, prefix, source):
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: {prefix.rstrip('.') or 'top level'}: expected a mapping, "
                          f"found {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{source}: unknown key {prefix}{unknown[0]}; {cls.__name__} keys: "
                          f"{', '.join(fields)}")
    config = cls()
    for name, value in data.items():
        setattr(config, name, _value(fields[name], value, prefix + name, source))
    return config


def _set(config, dotted, value, source):
    parts = dotted.split(".")
    target = config
    for i, part in enumerate(parts):
        fields = {f.name: f for f in dataclasses.fields(target)}
        key = ".".join(parts[:i + 1])
        if part not in fields:
            raise ConfigError(f"{source}: unknown key {key}; {type(target).__name__} keys: "
                              f"{', '.join(fields)}")
        field = fields[part]
        if i == len(parts) - 1:
            setattr(target, part, _value(field, value, key, source))
        elif dataclasses.is_dataclass(getattr(target, part)):
            target = getattr(target, part)
        elif _base_type(field.type) is dict:
            mapping = dict(getattr(target, part))
            mapping[".".join(parts[i + 1:])] = value
            setattr(target, part, mapping)
            return
        else:
            raise ConfigError(f"{source}: {key} is a value, not a section")


def _base_type(annotation):
    """`int | None` -> int; `list` -> list."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0]
    return annotation


def _value(field, value, key, source):
    annotation = field.type
    optional = isinstance(annotation, types.UnionType) and type(None) in typing.get_args(
        annotation)
    kind = _base_type(annotation)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{source}: {key}: expected {kind.__name__}, found null")
    if dataclasses.is_dataclass(kind):
        return _build(kind, value, key + ".", source)
    if kind is list:  # pretraining phases (PhaseConfig), label names (str)
        if not isinstance(value, list):
            raise ConfigError(f"{source}: {key}: expected a list, found {value!r}")
        if field.metadata["item"] == "PhaseConfig":
            return [_build(PhaseConfig, item, f"{key}[{i}].", source)
                    for i, item in enumerate(value)]
        items = []
        for i, item in enumerate(value):  # YAML reads labels 0 and 1 as integers
            if isinstance(item, bool) or not isinstance(item, (str, int)) or item == "":
                raise ConfigError(f"{source}: {key}[{i}]: expected a name, found {item!r}")
            items.append(str(item))
        if len(set(items)) != len(items):
            raise ConfigError(f"{source}: {key}: each name once, found {items}")
        return items
    if kind is float and isinstance(value, str):
        try:  # YAML 1.1 reads "3e-5" (no dot) as a string
            value = float(value)
        except ValueError:
            pass
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{source}: {key}: expected {kind.__name__}, found "
                          f"{type(value).__name__} {value!r}")
    meta = field.metadata
    if meta.get("choices") and value not in meta["choices"]:
        raise ConfigError(f"{source}: {key}: expected one of {', '.join(meta['choices'])}, "
                          f"found {value!r}")
    if meta.get("min") is not None and value < meta["min"]:
        raise ConfigError(f"{source}: {key}: must be >= {meta['min']}, found {value!r}")
    if meta.get("max") is not None and value > meta["max"]:
        raise ConfigError(f"{source}: {key}: must be <= {meta['max']}, found {value!r}")
    return value
