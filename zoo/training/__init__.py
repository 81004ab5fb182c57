"""The mechanisms of training with `model.fit`, one concern a module.

    run_dir.py          run-directory layout and checks, atomic model files, metrics, backups
    run_lock.py         one `zoo train` process per run directory (zoo.lock: host and pid)
    starting_points.py  the task's tokenizer and vocabulary files, the backbone to start from
    distribution.py     devices, tf.distribute strategies, the Keras 3.15.1 multi-worker patch
                        (keras-team/keras#20585), TF_CONFIG clusters, JAX distributions
    data_order.py       the resumable order of examples, evaluation by length, traced encoders
    callbacks.py        progress and TensorBoard, step limit, random state, evaluation rounds
    loop.py             step counts, the optimizer every task compiles with, the fit loop

This package knows no task: what runs an experiment end to end (`zoo train`, seeds, sweeps,
`zoo evaluate`, export of a run) is `tasks.runs`, which builds the task and calls `fit`. The
names task files use are importable from here (`from zoo import training`;
`training.load_backbone(...)`).
"""

from zoo.training.callbacks import TrainingError
from zoo.training.data_order import example_order, in_file_order, length_order, traced_encoder
from zoo.training.distribution import jax_distribution, join_cluster
from zoo.training.loop import Phase, Schedule, fit, optimizer
from zoo.training.run_dir import (RUN_FILES, check_run_dir, checkpoint_path, create_run_dir,
                                  load_run, read_metrics, save_model)
from zoo.training.run_lock import check_unlocked
from zoo.training.starting_points import (copy_vocabulary, load_backbone, load_tokenizer,
                                          vocabulary_path)

__all__ = ["RUN_FILES", "Phase", "Schedule", "TrainingError", "check_run_dir", "check_unlocked",
           "checkpoint_path", "copy_vocabulary", "create_run_dir", "example_order", "fit",
           "in_file_order", "jax_distribution", "join_cluster", "length_order", "load_backbone",
           "load_run", "load_tokenizer", "optimizer", "read_metrics", "save_model",
           "traced_encoder", "vocabulary_path"]
