"""What the task families share: the `BaseTask` class and the GPT-1 fine-tuning helpers.

A family file (classification.py, span_qa.py, ...) subclasses `BaseTask` and writes out what its
paper section says: how a file's examples are read (`read`) and packed (`dataset`), the model
and its head, its losses and metrics (`losses_and_metrics`), prediction, post-processing and
the predictions files; its serving description is beside it, in zoo_tasks/serving/, named by
the class's `signatures`. `BaseTask` is the contract `zoo.training.Task` (what `fit`, the
evaluation callback and the export call) plus the plumbing that is the same in every family:
the official file of a split under `data.dir`, each file read once, steps per epoch, batching
in `zoo_tasks.data_order`'s example order through a traced encoder, the single training
phase, `serving` (the call of that description) and the markdown table of `describe`
(`prediction_table`).

The helpers serve the families that fine-tune GPT-1 as well as BERT (classification, multiple
choice): `is_gpt`, GPT-1's auxiliary language-model loss and targets (section 3.2) and
`inference_model`, the model without that training-only output.
"""

import os

import keras
import tensorflow as tf

from zoo import config as config_lib
from zoo import training
from zoo.data import prefetched, read_examples
from zoo.data.benchmarks import BENCHMARKS
from zoo.models.presets import PRESETS
from zoo_tasks import data_order


class BaseTask(training.Task):
    """The plumbing of a task family around its own data, model, losses and metrics.

    A subclass defines `read(path)` (a file's examples, cached by `examples`), `dataset`,
    `build_model`, `losses_and_metrics`, `predict`, `evaluate`, `write_predictions` and
    `describe` (a call of `prediction_table`), and names its serving function in `signatures`.

    Args:
        name: the task name, a key of `zoo_tasks.TASKS`.
        config: a `zoo.config.Experiment`.
    """

    # Whether the family's BERT model can put a BiLSTM under its head (`model.bilstm`).
    bilstm_head = False
    # Label names in label-id order, where the task's labels have names (`zoo convert`'s
    # id2label); None for scores, choice indices and pretraining.
    labels = None
    # Whether each example has any number of these labels (a sigmoid a label): your own data's
    # data.multi_label.
    multi_label = False
    # The family's serving function in zoo_tasks/serving/, `signatures(task, model, run_dir)`
    # -> {name: zoo.export.Signature}, which `serving` calls; None: the task has no export.
    signatures = None

    def __init__(self, name, config):
        super().__init__(name, config)
        self._cache = {}
        self._traced_encoders = {}
        if config.model.bilstm and not (self.bilstm_head and not is_gpt(config.model.preset)):
            raise config_lib.ConfigError(
                f"model.bilstm: {name} with {config.model.preset} has no BiLSTM head; it is "
                "for BERT classification and span QA (BERT Table 5, 'LTR & No NSP + BiLSTM')")

    # --- Data ---

    def path(self, split):
        """The official file (or directory) of `split` under `data.dir`, as the benchmark's
        record lays it out (`zoo.data.benchmarks`: `layout`, `splits`)."""
        benchmark = BENCHMARKS[self.name]
        layout = benchmark.layout
        splits = benchmark.splits or {s: s for s in layout}
        if not self.config.data.dir:
            raise config_lib.ConfigError(f"data.dir: missing; the directory holding the "
                                         f"{self.name} files")
        if split not in splits:
            raise config_lib.ConfigError(f"{self.name} has no split {split!r}; splits: "
                                         f"{', '.join(splits)}")
        return os.path.join(self.config.data.dir, os.path.basename(layout[splits[split]]))

    def examples(self, split, path=None):
        """What `read` returns for a split (or a file), read once."""
        path = path or self.path(split)
        if path not in self._cache:
            self._cache[path] = self.read(path)
        return self._cache[path]

    def read_rows(self, path, **options):
        """(rows, report) of a file: `zoo.data.read_examples` with `data.skip_bad_rows`."""
        examples = read_examples(self.name, path, skip_bad_rows=self.config.data.skip_bad_rows,
                                 **options)
        return list(examples), examples.report

    def num_examples(self, split):
        """How many examples `dataset(split)` batches: one per label of `examples(split)`."""
        return len(self.examples(split)["label"])

    def steps_per_epoch(self):
        """Optimizer steps in one pass over the training examples (the last batch short)."""
        return -(-self.num_examples("train") // self.config.train.batch_size)

    def batches(self, split, tensors, encode, repeat=False, skip_batches=0, batch_size=None,
                order=None, key=()):
        """Batches `encode(*(t[indices] for t in tensors))` of a split's examples.

        The order is `data_order.example_order`'s: the train split shuffled, with `repeat=True`
        as an endless stream whose order is a pure function of (train.seed, position), so
        `skip_batches` resumes it exactly, otherwise one pass reshuffled at every iteration;
        other splits in file order, or `order` (`data_order.length_order`). `encode` (TF ops)
        is traced once per task, config and `key` (`data_order.traced_encoder`).
        """
        batch_size = batch_size or self.config.train.batch_size
        indices = data_order.example_order(tensors[0].shape[0], split, self.config.train.seed,
                                           batch_size, repeat, skip_batches, order)
        encode = data_order.traced_encoder(self._traced_encoders, self.config, encode, *key)
        ds = indices.batch(batch_size).map(
            lambda i: encode(*(tf.gather(t, i) for t in tensors)),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return prefetched(ds)

    # --- Training ---

    def phases(self, counts):
        """One phase: the whole run on the shuffled train stream."""
        return [training.Phase(0, counts.rounds,
                               lambda skip: self.dataset("train", repeat=True,
                                                         skip_batches=skip))]

    # --- Export ---

    def serving(self, model, run_dir=None):
        """{name: `zoo.export.Signature`}: the family's `signatures` (zoo_tasks/serving/)."""
        if self.signatures is None:
            return super().serving(model, run_dir)
        return self.signatures(model, run_dir)  # a function of the class: called with self

    # --- Evaluation ---

    def predicted_logits(self, model, split="dev", path=None):
        """The `logits` of `inference_model(model)` on a split or file, in file order (the
        batches in `data.sort_by_length` order)."""
        order = data_order.length_order(self, split, path)
        ds = data_order.evaluation_inputs(
            self, ("logits", split, path), order,
            lambda: self.dataset(split, path, order=order).map(lambda x, *_: x))
        model = traced_for(inference_model(model), ds.element_spec)
        logits = model.predict(ds, verbose=0)["logits"]
        return data_order.in_file_order(logits, order)


# The splits of your own data: the files `data.train_file`, `data.dev_file`, `data.test_file`.
OWN_SPLITS = ("train", "dev", "test")


def own_data_file(task, split, kinds):
    """The file of `split` of your own data (`data.<split>_file`); `kinds` says what it may be
    in the error when it is missing ("a SQuAD-format .json file")."""
    if split not in OWN_SPLITS:
        raise config_lib.ConfigError(f"{task.name} has no split {split!r}; splits: "
                                     f"{', '.join(OWN_SPLITS)}")
    path = getattr(task.config.data, f"{split}_file")
    if not path:
        raise config_lib.ConfigError(f"data.{split}_file: missing; the {split} file of your data "
                                     f"({kinds})")
    return path


def prediction_table(predictions, limit, header, row):
    """The markdown table of `describe`: `row(columns, predicted, i)` (a list of cells) for the
    first `limit` examples of the first evaluation set in `predictions` ({name: (columns,
    predicted, ...)}, as `evaluate(return_predictions=True)` gives it; MNLI: the matched set).

    Examples:
        >>> predictions = {"dev": ({"text": ["a", "b"]}, [1, 0])}
        >>> print(prediction_table(predictions, 1, ["text", "predicted"],
        ...                        lambda columns, predicted, i: [columns["text"][i],
        ...                                                       predicted[i]]))
        | text | predicted |
        |---|---|
        | a | 1 |
    """
    columns, predicted = next(iter(predictions.values()))[:2]
    return markdown_table(header, [row(columns, predicted, i)
                                   for i in range(min(limit, len(predicted)))])


def markdown_table(header, rows):
    """A markdown table of `rows` (lists of cells, `|` escaped) under `header`, for `describe`.

    Examples:
        >>> print(markdown_table(["a", "b"], [[1, "x|y"]]))
        | a | b |
        |---|---|
        | 1 | x\\|y |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
              for cells in rows]
    return "\n".join(lines)


def is_gpt(preset):
    """Whether `model.preset` is a GPT-1 preset, the Transformer or the LSTM of GPT-1 Table 5
    (GPT-1's tokenizer, input transformations and auxiliary LM), else a BERT or ViT one;
    unknown: ConfigError."""

    if preset not in PRESETS:
        raise config_lib.ConfigError(f"model.preset: unknown preset {preset!r}; known: "
                                     f"{', '.join(PRESETS)}")
    return PRESETS[preset][0] in ("GPTBackbone", "LSTMBackbone")


def lm_targets(x):
    """GPT-1's language-model targets on packed inputs `x` (TF ops): position t predicts token
    t + 1 (section 3.1, eq. 1), weighted 1 where that token is real, 0 on padding and at the
    end. Returns (targets, weights), each shaped like `x["token_ids"]`."""
    ids, mask = x["token_ids"], x["padding_mask"]
    pad = tf.zeros_like(ids[..., :1])
    return (tf.concat([ids[..., 1:], pad], axis=-1),
            tf.cast(tf.concat([mask[..., 1:], pad], axis=-1), tf.float32))


def with_lm_loss(model, losses, lm_weight):
    """`losses` (on "logits", weight 1) plus, when `model` has an "lm" output, GPT-1's
    auxiliary language-model loss weighted `lm_weight` (section 3.2: L3 = L2 + lambda * L1).
    The LM loss is the mean over the batch's real next-token predictions.

    Returns:
        (losses, loss_weights), for `model.compile`.
    """
    weights = {"logits": 1.0}
    if "lm" in model.output:
        losses = {**losses, "lm": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")}
        weights["lm"] = lm_weight
    return losses, weights


def traced_for(model, spec, on_batch=False):
    """`model`, its predict function traced once for every batch of inputs of `spec` (a
    dataset's element spec: any batch size, any padded length), if it was not traced yet;
    `on_batch`: for `predict_on_batch`, which calls it with another structure than `predict`.

    Keras traces predict for the first batch's exact shape, then again, relaxed, at the next
    shapes (`reduce_retracing`): dynamically padded batches and a short last one cost three
    traces (docs/measurements.md). Traced up front for the spec's unknown dimensions, one
    serves them all. One replica and the TensorFlow backend only: several replicas' predict
    takes distributed values, and the other backends trace no tf.function.
    """
    if (keras.backend.backend() != "tensorflow" or model.run_eagerly
            or model.steps_per_execution != 1
            or model.distribute_strategy.num_replicas_in_sync != 1):
        return model
    model.make_predict_function()
    model.predict_function.get_concrete_function([(spec,)] if on_batch else [spec])
    return model


def inference_model(model):
    """The model without its training-only outputs (GPT-1's LM logits), built once per model.

    The sub-model shares the weights; keeping it on the model keeps Keras from tracing a new
    predict function at every evaluation.
    """
    if set(model.output) == {"logits"}:
        return model
    if getattr(model, "_zoo_inference", None) is None:
        model._zoo_inference = keras.Model(model.input, {"logits": model.output["logits"]})
    return model._zoo_inference
