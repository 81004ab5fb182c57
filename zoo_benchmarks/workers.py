"""The worker processes of `models` and `finetune`, and the alternated timing across them
(`alternate`: serving's contenders too).

Each contender (a library on a backend) runs in its own interpreter, as a server would: in one
process, TensorFlow's spinning thread pools slowed torch down (see serving.py). The parent starts
the workers, then asks them in turn for one timed call each, so a drift in machine load falls
on all of them alike; between two calls it sleeps briefly so that the previous worker's thread
pools stop spinning. All workers load the same weights and inputs, and the outputs are compared
before anything is timed.
"""

import contextlib
import os
import statistics
import sys
import tempfile
import time

from zoo_benchmarks.common import FAMILIES, child_environment
from zoo_benchmarks.contenders import (
    keras_contenders,
    onnxruntime_contenders,
    transformers_contenders,
)

PAUSE = 0.2  # seconds between two timed calls of different workers


def worker():
    """A benchmark worker: builds its contenders, then times one call per request on stdin.

    An "add" request builds the contenders of another spec (another kind) in the same process:
    `--tiny` runs reuse one worker per library and backend for `models` and `finetune`.
    """
    import json

    spec = json.loads(sys.argv[1])
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the replies
    fns, last = {}, {}

    def add(spec):
        library = spec["library"]
        if library in ("zoo", "keras-hub"):
            built = keras_contenders(spec, library)
        elif library == "transformers":
            built = transformers_contenders(spec)
        else:
            built = onnxruntime_contenders(spec)
        for name, fn in built.items():  # the first calls trace or compile: not timed
            fns[(spec["kind"], name)] = fn
            last[(spec["kind"], name)] = fn()
            fn()
        replies.write(json.dumps({"ready": list(built)}) + "\n")

    add(spec)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "add":
            add(request["spec"])
            continue
        key = (request["kind"], request["name"])
        if request["op"] == "time":
            start = time.perf_counter()
            last[key] = fns[key]()
            replies.write(json.dumps({"seconds": time.perf_counter() - start}) + "\n")
        else:  # "output": a corner of the sequence output, or the loss
            value = last[key]
            if not isinstance(value, float):
                value = [value[0, :4, :8].tolist(), value[-1, -4:, -8:].tolist()]
            replies.write(json.dumps({"output": value}) + "\n")


class WorkerProcess:
    """One worker process: `(library, backend)`; its contenders are named "mode policy batch"
    within a kind ("forward" or "train"); `names` are those of the last spec built. `entry`:
    the Python code the process runs (another benchmark's worker of the same protocol, e.g.
    zoo_benchmarks.generate's); `settings`: more environment variables."""

    def __init__(self, library, backend, spec,
                 entry="import zoo_benchmarks.workers as w; w.worker()", **settings):
        import json
        import subprocess

        self.label = library if backend is None else f"{library} {backend}"
        env = child_environment(TF_CPP_MIN_LOG_LEVEL="3", **settings)
        if backend:
            env["KERAS_BACKEND"] = backend
        spec = dict(spec, library=library)
        self.library, self.kind = library, spec["kind"]
        self.log = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-c", entry, json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.names = self._reply()["ready"]

    def _reply(self):
        import json

        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.log.seek(0)
            killed = " (killed: out of memory?)" if self.process.returncode == -9 else ""
            raise RuntimeError(f"benchmark worker {self.label} exited with "
                               f"{self.process.returncode}{killed}:\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def _send(self, request):
        import json

        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # the worker died: _reply reports its log
        return self._reply()

    def ask(self, op, name):
        return self._send({"op": op, "kind": self.kind, "name": name})

    def add(self, spec):
        """Builds the contenders of another spec in this process; they replace `names`."""
        self.kind = spec["kind"]
        self.names = self._send({"op": "add", "spec": dict(spec, library=self.library)})["ready"]

    def close(self):
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except Exception:
            self.process.kill()
            self.process.wait()
        self.log.close()


def alternate(measures, repeats, pause=PAUSE, progress=None):
    """{name: [seconds of each repeat]} from `measures` ({name: a callable timing one call,
    returning seconds}), each contender warmed up beforehand: repeat r of every contender, in
    turn, before repeat r + 1 of any, the order rotated by one each round (each contender opens
    a round in turn), `pause` seconds before each call. `serving` times its
    contenders so; `time_family` keeps its own fixed order."""
    names = list(measures)
    times = {name: [] for name in names}
    for round_ in range(repeats):
        if progress:
            progress(f"  timing: pass {round_ + 1} of {repeats}, each contender in turn")
        shift = round_ % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            time.sleep(pause)
            times[name].append(measures[name]())
    return times


def _groups(family, kind, backends, bf16, tiny=False):
    """Lists of (library, backend, policies, modes) workers that are timed in alternation.

    Forward models are small: every contender of a family runs at once. A training worker
    holds a model, its gradients and two AdamW slots (gigabytes for BERT-base), so
    fine-tuning alternates zoo and keras-hub one backend and mode at a time;
    with --tiny (two-layer models, a few MB) one worker per library and backend holds every
    mode: three interpreters instead of five on TensorFlow, transformers' included.
    Pretraining times every contender in one group (five BERT-base models in training, about
    10 GB), so that every ratio is taken in alternation.
    """
    keras_libraries = ["zoo"] + (["keras-hub"] if FAMILIES[family][1] else [])
    if kind == "pretrain":  # zoo and transformers only (keras-hub's BERT has no NSP head)
        return [[("zoo", backend, ["float32"], ["graph", "xla"] if backend == "tensorflow"
                  else ["jit"]) for backend in backends]
                + [("transformers", None, ["float32"], ["eager", "compile"])]]
    if kind == "train" and tiny:
        # torch.compile is left to `pretrain` here (the same step function).
        return [[(library, backend, ["float32"], ["graph", "xla"] if backend == "tensorflow"
                  else ["jit"]) for backend in backends for library in keras_libraries]
                + [("transformers", None, ["float32"], ["eager"])]]
    if kind == "train":
        groups = [[(library, backend, ["float32"], [mode]) for library in keras_libraries]
                  for backend in backends
                  for mode in (["graph", "xla"] if backend == "tensorflow" else ["jit"])]
        return groups + [[("transformers", None, ["float32"], ["eager", "compile"])]]
    policies = ["float32"] + (["mixed_bfloat16"] if bf16 else [])
    group = [(library, backend, policies + (["bfloat16"] if bf16 and library == "zoo" else []),
              None) for backend in backends for library in keras_libraries]
    return [group + [("transformers", None, ["float32"], None),
                     ("onnxruntime", None, ["float32"], None)]]


def time_family(root, family, kind, batches, length, backends, bf16, repeats, progress,
                tiny=False, libraries=None, pool=None):
    """{(worker label, contender name): (median seconds, check)}.

    The check is, for a forward pass, the largest absolute difference from transformers'
    output; for a training step, the last loss. `libraries` (default: all) limits the
    workers started; a forward check needs "transformers" among them. With a `pool` (a dict
    the caller closes with `close_pool`), a worker of the same library and backend started
    by an earlier call builds the new contenders instead of a new process: three
    interpreters fewer for `zoo benchmark all --tiny`, whose figures mean nothing anyway.
    """
    import numpy as np

    results = {}
    for group in _groups(family, kind, backends, bf16, tiny):
        workers = []
        try:
            for library, backend, policies, modes in group:
                if libraries is not None and library not in libraries:
                    continue
                spec = dict(root=root, family=family, kind=kind, batches=batches,
                            length=length, policies=policies, modes=modes, tiny=tiny)
                reused = pool is not None and (library, backend) in pool
                progress(f"  {'reusing' if reused else 'starting'} {library}"
                         f"{' ' + backend if backend else ''} {' '.join(modes or [])} "
                         f"({family}, {kind})")
                if reused:
                    pool[(library, backend)].add(spec)
                    workers.append(pool[(library, backend)])
                else:
                    workers.append(WorkerProcess(library, backend, spec))
                    if pool is not None:
                        pool[(library, backend)] = workers[-1]
            for batch in batches:
                calls = [(w, n) for w in workers for n in w.names if n.endswith(f" {batch}")]
                times = {key: [] for key in calls}
                for _ in range(repeats):
                    for w, name in calls:
                        time.sleep(PAUSE)
                        times[(w, name)].append(w.ask("time", name)["seconds"])
                outputs = {(w, n): w.ask("output", n)["output"] for w, n in calls}
                reference = next((v for (w, n), v in outputs.items()
                                  if w.label == "transformers"), None)
                for (w, name), seconds in times.items():
                    value = outputs[(w, name)]
                    if kind == "forward":
                        value = float(np.max(np.abs(np.asarray(value) - np.asarray(reference))))
                    results[(w.label, name)] = (statistics.median(seconds), value)
        finally:
            for w in workers:
                if pool is None:
                    w.close()
    return results


def close_pool(pool):
    """Ends the workers of a `time_family` pool."""
    for w in pool.values():
        w.close()
    pool.clear()
