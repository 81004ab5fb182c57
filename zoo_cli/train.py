"""`zoo train`: train an experiment with model.fit into a run directory.

  zoo train --experiment bert/glue_mrpc --set data.dir=/data/MRPC --run-dir runs/mrpc
  zoo train --experiment bert/glue_rte --set data.dir=/data/RTE --run-dir runs/rte --seeds 5
  zoo train --experiment bert/conll2003_feature_based --set data.dir=/data/conll2003 \
      --run-dir runs/ner_features        # the experiment's `sweep`: one sub-run per value

The experiment is a YAML file under configs/experiments (named without .yaml) or a path;
`--set section.key=value` overrides any key. An experiment with a `sweep` key
({dotted.key: [values]}) trains one sub-run per value in DIR/<key>=<value>/ and writes
DIR/sweep.json and DIR/table.md. Running the same command again resumes an
interrupted run; a run directory holding another experiment, or a finished run, is refused
unless --overwrite is given.
"""

import json
import os
import sys

from zoo_cli.arguments import add_command, add_overrides, add_overwrite, add_run_dir


def register(subparsers):
    parser = add_command(subparsers, "train", "train an experiment (model.fit)", __doc__, run)
    parser.add_argument("--experiment", required=True,
                        help="configs/experiments/<family>/<task> name, or a YAML path")
    add_overrides(parser, help="override a config key, e.g. train.learning_rate=3e-5 "
                               "(repeatable)")
    add_run_dir(parser)
    parser.add_argument("--seeds", type=int, default=1,
                        help="repeat with N seeds (train.seed, +1, ...) in DIR/seed_<s> and "
                             "report mean and std of each metric")
    add_overwrite(parser)


def run(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import config as config_lib
    from zoo import files, training  # lazy: as above
    from zoo_tasks import runs  # lazy: as above

    config = config_lib.resolve(args.experiment, args.overrides)
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if config.sweep and args.seeds > 1:
        raise ValueError("--seeds and a sweep (the experiment's `sweep` key) do not combine; "
                         "run the sweep once per seed with --set train.seed=N")
    try:
        if config.sweep:
            result = runs.train_sweep(config, args.run_dir, args.overwrite)
            with files.open(os.path.join(args.run_dir, "table.md"), encoding="utf-8") as table:
                print(table.read(), end="")
        elif args.seeds > 1:
            result = runs.train_seeds(config, args.run_dir, args.seeds, args.overwrite)
            shown = {k: v for k, v in result.items() if isinstance(v, dict) and "mean" in v}
            for name, stats in shown.items():
                print(f"{name}: {stats['mean']:.4f} ± {stats['std']:.4f} "
                      f"(min {stats['min']:.4f}, max {stats['max']:.4f}, {args.seeds} seeds)")
        else:
            result = runs.train(config, args.run_dir, overwrite=args.overwrite)
            print(json.dumps(result, sort_keys=True))
    except training.TrainingError as error:
        print(f"zoo train: error: {error}", file=sys.stderr)
        return 1
    print(f"run directory: {args.run_dir}\n"
          f"TensorBoard:   tensorboard --logdir {args.run_dir}")
    return 0
