"""Where the time of one `zoo train` goes: start-up, the checkpoint, the data, the steps, the
evaluations and the files written (docs/measurements.md, "A fine-tuning run, phase by phase").

  python -m zoo_benchmarks.profile_train [--json OUT] --experiment E [--set k=v ...] --run-dir R

Trains as `zoo train` does (`zoo_tasks.runs.train`, the same flags) in this process, its phases
timed by wrapping
the functions that do them, and prints a table of wall-clock and CPU seconds (the CPU seconds
of every thread: on a shared machine the wall time stretches, the CPU time much less). The
first training step (tracing the step function) is timed apart from the others.
"""

import argparse
import contextlib
import json
import sys
import time

_STARTED = time.perf_counter(), time.process_time()


class Clock:
    """Totals of (wall, cpu, calls) per phase; `timed` wraps a function into a phase."""

    def __init__(self):
        self.totals = {}
        self.open = []  # the phases under way, innermost last: inner time is not counted twice
        self.steps = []  # (wall, cpu) at the end of every training batch

    def add(self, phase, wall, cpu):
        total = self.totals.setdefault(phase, [0.0, 0.0, 0])
        total[0] += wall
        total[1] += cpu
        total[2] += 1

    @contextlib.contextmanager
    def phase(self, name):
        start = time.perf_counter(), time.process_time()
        self.open.append([name, 0.0, 0.0])
        try:
            yield
        finally:
            _, inner_wall, inner_cpu = self.open.pop()
            wall = time.perf_counter() - start[0]
            cpu = time.process_time() - start[1]
            self.add(name, wall - inner_wall, cpu - inner_cpu)
            if self.open:
                self.open[-1][1] += wall
                self.open[-1][2] += cpu

    def timed(self, owner, attribute, name):
        original = getattr(owner, attribute)

        def wrapper(*args, **kwargs):
            with self.phase(name):
                return original(*args, **kwargs)

        setattr(owner, attribute, wrapper)


def instrument(clock):
    """Wrap the functions of a `zoo train` run into the clock's phases."""
    # lazy: TensorFlow's import is timed as a phase of its own
    import keras

    import zoo_tasks  # lazy: as above
    from zoo.training import (  # lazy: as above
        backups,
        callbacks,
        loop,
        run_dir,
        starting_points,
    )

    create = zoo_tasks.create

    def created(*args, **kwargs):
        with clock.phase("task: tokenizer and files"):
            made = create(*args, **kwargs)
        clock.timed(made, "evaluate", "evaluation: dev predictions and metrics")
        clock.timed(made, "build_model", "model: built, the checkpoint read and converted")
        return made

    zoo_tasks.create = created
    clock.timed(loop, "compile_model", "model: compile")
    clock.timed(loop, "_build", "model: optimizer variables")
    clock.timed(loop, "_train", "training steps, after the first")
    clock.timed(run_dir, "save_model", "files: final.keras")
    clock.timed(callbacks, "save_model", "files: best.keras")
    clock.timed(backups, "save", "files: backup")
    clock.timed(run_dir, "create_run_dir", "files: run directory")
    clock.timed(starting_points, "copy_vocabulary", "files: run directory")
    clock.timed(callbacks, "write_hparams", "files: run directory")
    original_fit = keras.Model.fit

    def fit(self, *args, **kwargs):
        clock.fit_started = time.perf_counter(), time.process_time()
        clock.steps.clear()
        result = original_fit(self, *args, **kwargs)
        if clock.steps:  # the first step of each fit traces: moved to its own phase
            wall, cpu = (clock.steps[0][i] - clock.fit_started[i] for i in (0, 1))
            clock.add("training: first step (tracing)", wall, cpu)
            clock.open[-1][1] += wall
            clock.open[-1][2] += cpu
            clock.step_count = getattr(clock, "step_count", 0) + len(clock.steps) - 1
        return result

    keras.Model.fit = fit
    original_end = callbacks.StopAt.on_train_batch_end

    def on_train_batch_end(self, batch, logs=None):
        clock.steps.append((time.perf_counter(), time.process_time()))
        return original_end(self, batch, logs)

    callbacks.StopAt.on_train_batch_end = on_train_batch_end


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m zoo_benchmarks.profile_train",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the phases as JSON to this file")
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    clock = Clock()
    with clock.phase("start-up: imports"):
        # lazy: the imports are the first phase timed
        import tensorflow  # noqa: F401

        import zoo_tasks.runs  # lazy: as above
        from zoo import config as config_lib  # lazy: as above
    instrument(clock)
    with clock.phase("the rest (config, logs, progress, exit)"):
        config = config_lib.resolve(args.experiment, args.overrides)
        zoo_tasks.runs.train(config, args.run_dir, overwrite=args.overwrite)
        status = 0
    total = time.perf_counter() - _STARTED[0], time.process_time() - _STARTED[1]
    rows = sorted(clock.totals.items(), key=lambda item: -item[1][0])
    print("\n| phase | wall s | CPU s | calls |\n| --- | --- | --- | --- |")
    for name, (wall, cpu, calls) in rows:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {calls} |")
    print(f"| total (from the interpreter's start) | {total[0]:.1f} | {total[1]:.1f} | |")
    steps = getattr(clock, "step_count", 0)
    if steps and "training steps, after the first" in clock.totals:
        wall = clock.totals["training steps, after the first"][0]
        print(f"\n{steps} steps after the first: {wall / steps:.3f} s a step")
    if args.json:
        from zoo.files import write_text  # lazy: after the timing

        write_text(args.json, json.dumps({
            "phases": {k: {"wall": v[0], "cpu": v[1], "calls": v[2]}
                       for k, v in clock.totals.items()},
            "total": {"wall": total[0], "cpu": total[1]}, "steps": steps}, indent=1) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
