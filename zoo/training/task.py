"""The task contract: what the training loop, its callbacks and the export call on a task.

`fit` (loop.py), the `Evaluator` callback (callbacks.py) and `zoo.export` know a task only
through this class; the task families in zoo_tasks/ subclass it (through
`zoo_tasks.base.BaseTask`). As in Model Garden's `base_task.Task`, the contract sits beside the
trainer that calls it and holds only what `model.fit` and the run directory need:

    required                         who calls it
    name, config, main_metric        fit, Evaluator (the metric best.keras is kept by)
    build_model()                    fit, under the distribution scope
    steps_per_epoch()                fit, for the `StepCounts` (total steps, warmup, rounds)
    losses_and_metrics(model)        `compile`: the task's own part of `model.compile`
    phases(counts)                   fit: the training data of each span of rounds, resumable
    evaluate(model, split, ...)      Evaluator after every round, `zoo evaluate`

    optional, with defaults here     default
    tokenizer                        None: no vocabulary to copy into the run or export
    describe(predictions, limit)     "": no example table in TensorBoard
    save_extras(run_dir, metrics)    nothing: no file beside best.keras (SQuAD 2.0 writes tau)
    serving(model, run_dir)          an error: the task cannot be exported

The optimizer and its schedule are not the task's: `compile` builds them from `config.train`
and the `StepCounts`, then adds the task's losses and metrics. Where the examples of a resumed
run start is asked of the task through `phases`: each `Phase` builds its dataset from the
number of batches already trained.
"""

import abc
import dataclasses

from zoo.training import loop


@dataclasses.dataclass
class Phase:
    """Rounds [first_round, last_round) trained on `dataset(skip_batches)`; a `dataset` that
    also takes `input_context` is built once per worker (`distribution.distributed_dataset`)."""

    first_round: int
    last_round: int
    dataset: object


class Task(abc.ABC):
    """What a task provides to `fit`, the evaluation callback and the export.

    Args:
        name: the task name (an experiment's `task`).
        config: a `zoo.config.Experiment`.
    """

    # The dev metric best.keras is kept by (a key of `evaluate`'s metrics; higher is better).
    main_metric: str = None
    # The tokenizer whose vocabulary a run copies and an export carries; None: images.
    tokenizer = None

    def __init__(self, name, config):
        self.name, self.config = name, config

    # --- Required ---

    @abc.abstractmethod
    def build_model(self):
        """The Keras model: backbone (a preset, `model.init_checkpoint`) and the task's head."""

    @abc.abstractmethod
    def steps_per_epoch(self):
        """Optimizer steps in one pass over the training data (`train.epochs` counts these)."""

    @abc.abstractmethod
    def losses_and_metrics(self, model):
        """The task's keyword arguments of `model.compile`: `loss` and `metrics` (or
        `weighted_metrics`), with `loss_weights` where there are several losses."""

    @abc.abstractmethod
    def phases(self, counts):
        """The `Phase`s of a run cut into `counts.rounds` rounds (`counts`: its `StepCounts`),
        in order."""

    @abc.abstractmethod
    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """Metrics of `model` on a split (or the file `path`): a dict, or (metrics,
        predictions) with `return_predictions`, predictions a dict of name -> what
        `describe` and the task's predictions files take."""

    # --- Optional ---

    def describe(self, predictions, limit):
        """A markdown table of up to `limit` predictions for TensorBoard; "" for none."""
        return ""

    def save_extras(self, run_dir, metrics):
        """Write what an export needs besides the weights, next to best.keras."""

    def serving(self, model, run_dir=None):
        """{name: `zoo.export.Signature`}: at least `serving_default` and `serving_ids`."""
        raise ValueError(f"task {self.name}: no serving description ({type(self).__name__} "
                         "has no `serving` method), so it cannot be exported")

    # --- Given ---

    def compile(self, model, total_steps=None, warmup_steps=None):
        """`model.compile` with the task's losses and metrics and the optimizer of `train`
        (those of `StepCounts` unless given), as `fit` compiles it."""
        if total_steps is None:
            counts = loop.StepCounts(self.config.train, self.steps_per_epoch())
            total_steps, warmup_steps = counts.total, counts.warmup
        loop.compile_model(model, self, total_steps, warmup_steps)
