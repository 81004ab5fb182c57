"""The one shared test harness: checks every backbone family runs through, plus a runner for
executing a function under another Keras backend in a subprocess.

Backends cannot be switched inside one process, so `run_in_backend` starts
`python -m tests.harness BACKEND module:function ARGS...` with KERAS_BACKEND set; the function
returns a dict of arrays which comes back through an .npz file.
"""

import importlib
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ("tensorflow", "jax", "torch")


def shared_run(tmp_path_factory, worker_id, name, config):
    """A run directory trained once for the whole session, whichever test file asks first.

    For tests in different files that read the same trained run (e.g. a task's evaluation and
    its export): under pytest-xdist the first worker to ask trains it while holding a file
    lock, the others wait and reuse it (the pytest-xdist docs' FileLock recipe, as for
    `sample_data`). Returns (run_dir, the last evaluation's metrics). Tests may write into
    the run directory (predictions) but must not change its checkpoints.
    """
    import json

    from filelock import FileLock

    from zoo_tasks import runs

    # One folder per pytest run: the workers' basetemp's parent under xdist, basetemp without
    # (a test file that imports another's fixture makes pytest set it up twice: the second
    # finds the run done).
    shared = tmp_path_factory.getbasetemp()
    base = (shared if worker_id == "master" else shared.parent) / "shared_runs" / name
    base.mkdir(parents=True, exist_ok=True)
    run_dir = base / "run"
    with FileLock(str(base) + ".lock"):
        if not (base / "done").exists():
            runs.train(config, str(run_dir))
            (base / "done").touch()
    history = json.loads((run_dir / "metrics.json").read_text())
    return run_dir, {k: v for k, v in history[-1].items() if k != "step"}


def wait_for_backup(proc, backup_dir, step, timeout):
    """Wait until the run of `proc` has committed a backup of `step` or later
    (`backup_dir/step_<N>/state.json`, zoo.training.backups); fail if `proc` ends first or
    `timeout` seconds pass. The caller then kills it mid-round."""
    import time

    from zoo.training import backups

    deadline = time.monotonic() + timeout
    while backups.latest_step(str(backup_dir)) < step:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, f"no backup of step {step} within {timeout} s"
        time.sleep(0.05)


def run_in_backend(backend, function, *args, timeout=900, env=None):
    """Run `module:function(*args)` under `backend` in a fresh process; return its dict of arrays.

    `env` adds variables to the process's environment (e.g. XLA_FLAGS for JAX devices).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npz")
        env = dict(os.environ, **(env or {}), KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run(
            [sys.executable, "-m", "tests.harness", out, function, *map(str, args)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
        )
        if proc.returncode:
            raise AssertionError(
                f"{function} failed under KERAS_BACKEND={backend}:\n{proc.stderr[-4000:]}"
            )
        with np.load(out) as data:
            return {key: data[key] for key in data.files}


def to_numpy(outputs):
    import keras

    return {key: keras.ops.convert_to_numpy(value) for key, value in outputs.items()}


def forward_saved_model(model_path, inputs_path):
    """Load a `.keras` file and run it on the arrays of an .npz file (used by `run_in_backend`)."""
    import keras

    import zoo  # noqa: F401  (registers the zoo layers for deserialization)

    model = keras.saving.load_model(model_path)
    with np.load(inputs_path) as data:
        inputs = {key: data[key] for key in data.files}
    return to_numpy(model(inputs, training=False))


# The serving process: a fresh interpreter that imports only tensorflow and tensorflow_text
# (what TF Serving has), started once per test process and reused (each start costs ~5 s of
# CPU, TensorFlow's import; ~40 calls in a run of the suite). Each request file names the
# SavedModels to call: each is loaded from disk for that request alone, one signature called
# per input (an op error is returned, not raised), and the loaded models dropped afterwards;
# nothing of one request is kept for the next. A line "served PATH" on stdout answers it.
_SERVE = """
import contextlib, gc, io, pickle, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
from tensorflow.python.tools import saved_model_cli


def serve(requests, show):
    models, results = {}, []
    for path, signature, inputs in requests:
        if path not in models:
            models[path] = tf.saved_model.load(path)
        function = models[path].signatures[signature]
        specs = function.structured_input_signature[1]
        try:
            outputs = function(**{k: tf.constant(v, specs[k].dtype) for k, v in inputs.items()})
            results.append({k: v.numpy() for k, v in outputs.items()})
        except tf.errors.OpError as error:
            results.append({"error": type(error).__name__ + ": " + error.message})
    shown = {}
    for path in show:  # `saved_model_cli show --dir PATH --all`: the console script's main()
        sys.argv, buffer = ["saved_model_cli", "show", "--dir", path, "--all"], io.StringIO()
        with contextlib.redirect_stdout(buffer):
            try:
                saved_model_cli.main()
            except SystemExit as exit:  # absl's app.run ends with sys.exit
                assert not exit.code, f"saved_model_cli show --dir {path} exited {exit.code}"
        shown[path] = buffer.getvalue()
    return results, shown


for line in sys.stdin:
    requests_path, out_path = line.rstrip("\\n").split("\\t")
    with open(requests_path, "rb") as f:
        requests, show = pickle.load(f)
    results, shown = serve(requests, show)
    gc.collect()
    leaked = sorted(m for m in sys.modules
                    if m.split(".")[0] in ("zoo", "zoo_tasks", "zoo_cli", "tests"))
    with open(out_path, "wb") as f:
        pickle.dump({"results": results, "shown": shown, "leaked": leaked}, f)
    print("served", out_path, flush=True)
"""
# `saved_model_cli show --all` output of the exports a serving process was asked to show.
_SHOWN = {}
_SERVER = {}  # this test process's serving process: {"proc": Popen, "dir": its folder}


def _server():
    """The serving process (started when there is none or it has exited)."""
    proc = _SERVER.get("proc")
    if proc is not None and proc.poll() is None:
        return _SERVER
    import atexit

    folder = tempfile.mkdtemp(prefix="serving_")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    errors = open(os.path.join(folder, "stderr.txt"), "w+", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-c", _SERVE], cwd=folder, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
    if not _SERVER:
        atexit.register(lambda: _SERVER["proc"].poll() is None and _SERVER["proc"].kill())
    import queue
    import threading

    lines = queue.Queue()  # its stdout, line by line ("" at its end), read by a thread

    def read(stdout=proc.stdout):
        for line in stdout:
            lines.put(line)
        lines.put("")
    threading.Thread(target=read, daemon=True).start()
    _SERVER.update(proc=proc, dir=folder, stderr=errors, calls=0, lines=lines)
    return _SERVER


def _crashed(server, why):
    server["proc"].kill()
    server["proc"].wait()
    server["stderr"].seek(0)
    return f"the serving process {why}:\n{server['stderr'].read()[-4000:]}"


def serve_fresh(saved_model, requests, signature="serving_default", timeout=600, show=False):
    """Call a SavedModel in a fresh process that imports only tensorflow and tensorflow_text.

    Args:
        saved_model: an export version directory.
        requests: a list of {input name: array-like}, or of (signature, inputs) pairs, or of
            (saved_model, signature, inputs) triples for other exports served by the same
            call.
        signature: the signature of requests given without one.
        show: also run `saved_model_cli show --dir saved_model --all` in that process (after
            the requests), through the `saved_model_cli` console script's own entry point;
            `saved_model_signatures(saved_model)` then reads its output instead of starting
            a process of its own.

    The process is this test process's serving process (`_SERVE`: started once, reused, each
    call's SavedModels loaded from disk for it alone); it must never import project code.

    Returns:
        One {output name: numpy array} per request, or {"error": "InvalidArgumentError: ..."}
        when the graph rejected it (the process itself must not crash).
    """
    import pickle
    import queue
    import time

    triples = [(saved_model, signature, r) if not isinstance(r, tuple) else
               (saved_model, *r) if len(r) == 2 else r for r in requests]
    triples = [(str(path), s, {k: np.asarray(v, dtype=object if _is_text(v) else None)
                               for k, v in inputs.items()}) for path, s, inputs in triples]
    server = _server()
    server["calls"] += 1
    requests_path = os.path.join(server["dir"], f"in_{server['calls']}.pkl")
    out = os.path.join(server["dir"], f"out_{server['calls']}.pkl")
    with open(requests_path, "wb") as f:
        pickle.dump((triples, [str(saved_model)] if show else []), f)
    proc, deadline = server["proc"], time.monotonic() + timeout
    proc.stdin.write(f"{requests_path}\t{out}\n")
    proc.stdin.flush()
    while True:  # TensorFlow may print lines of its own on stdout: wait for the answer's
        try:
            line = server["lines"].get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            raise AssertionError(_crashed(server, f"did not answer in {timeout} s")) from None
        assert line, _crashed(server, f"crashed (exit {proc.wait()})")
        if line == f"served {out}\n":
            break
    with open(out, "rb") as f:
        result = pickle.load(f)
    os.remove(requests_path)
    os.remove(out)
    assert not result["leaked"], f"the SavedModel imported project code: {result['leaked']}"
    _SHOWN.update(result["shown"])
    return result["results"]


def _is_text(value):
    flat = np.asarray(value, dtype=object).ravel()
    return flat.size > 0 and isinstance(flat[0], (str, bytes))


def saved_model_signatures(saved_model):
    """`saved_model_cli show --all` parsed to {signature: (inputs, outputs)} name sets: the
    output of `serve_fresh(saved_model, ..., show=True)` if it ran, else of the command."""
    import re

    shown = _SHOWN.get(str(saved_model))
    if shown is None:
        cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
        proc = subprocess.run([cli, "show", "--dir", str(saved_model), "--all"],
                              capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        assert proc.returncode == 0, proc.stderr[-3000:]
        shown = proc.stdout
    signatures = {}
    for block in re.split(r"\nsignature_def\['", shown)[1:]:
        name = block.split("'", 1)[0]
        inputs_part, _, outputs_part = block.partition("contains the following output(s):")
        signatures[name] = (set(re.findall(r"inputs\['([^']+)'\]", inputs_part)),
                            set(re.findall(r"outputs\['([^']+)'\]", outputs_part)))
    return signatures


def assert_outputs_close(actual, expected, atol, where=""):
    assert set(actual) == set(expected), f"{where}: output keys {set(actual)} != {set(expected)}"
    for key in expected:
        a, e = np.asarray(actual[key], "float32"), np.asarray(expected[key], "float32")
        assert a.shape == e.shape, f"{where} {key}: shape {a.shape} != {e.shape}"
        diff = float(np.max(np.abs(a - e))) if a.size else 0.0
        assert diff <= atol, f"{where} {key}: max abs diff {diff:.3g} > {atol}"


def copy_weights(source, target):
    """Copy weights between two models of the same architecture (by variable path)."""
    weights = {w.path: w for w in source.weights}
    for w in target.weights:
        w.assign(weights[w.path])


if __name__ == "__main__":
    out_path, function, *call_args = sys.argv[1:]
    module, name = function.split(":")
    result = getattr(importlib.import_module(module), name)(*call_args)
    np.savez(out_path, **{key: np.asarray(value) for key, value in result.items()})
