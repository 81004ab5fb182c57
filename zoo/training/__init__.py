"""The mechanisms of training with `model.fit`, one concern a module.

    run_dir.py          run-directory layout and checks, atomic model files, metrics
    backups.py          backups committed atomically, two kept; the newest readable restored
    preemption.py       SIGTERM / SIGINT: a backup of the step under way, then a clean stop
    run_lock.py         one `zoo train` process per run directory (zoo.lock: host and pid)
    starting_points.py  the task's tokenizer and vocabulary files, the backbone to start from
    distribution.py     devices, tf.distribute strategies, the Keras 3.15.1 multi-worker patch
                        (keras-team/keras#20585), TF_CONFIG clusters, JAX distributions
    task.py             the task contract: what fit, its callbacks and the export call on a task
    callbacks.py        progress and TensorBoard, step limit, evaluation rounds, backups
    loop.py             step counts, the optimizer and compile, the fit loop

This package knows no task family: it calls a task only through the contract of `task.py`
(`Task`, which zoo_tasks.base.BaseTask subclasses). What runs an experiment end to end (`zoo train`,
seeds, sweeps, `zoo evaluate`, export of a run) is `zoo_tasks.runs`, which builds the task and
calls `fit`; the order of examples a task feeds to `fit` is its own (`zoo_tasks.data_order`).
The names task files use are importable from here (`from zoo import training`;
`training.load_backbone(...)`).
"""

from zoo.training.callbacks import TrainingError
from zoo.training.distribution import jax_distribution, join_cluster
from zoo.training.loop import Schedule, StepCounts, compile_model, fit, optimizer
from zoo.training.run_dir import (
    RUN_FILES,
    check_run_dir,
    checkpoint_path,
    create_run_dir,
    load_run,
    read_metrics,
    save_model,
)
from zoo.training.run_lock import check_unlocked
from zoo.training.starting_points import (
    copy_vocabulary,
    load_backbone,
    load_tokenizer,
    vocabulary_path,
)
from zoo.training.task import Phase, Task

# Also importable, not in __all__: `Schedule`, the deprecated former name of `StepCounts`.
__all__ = ["RUN_FILES", "Phase", "StepCounts", "Task", "TrainingError", "check_run_dir",
           "check_unlocked", "checkpoint_path", "compile_model", "copy_vocabulary",
           "create_run_dir", "fit", "jax_distribution", "join_cluster", "load_backbone",
           "load_run", "load_tokenizer", "optimizer", "read_metrics", "save_model",
           "vocabulary_path"]
