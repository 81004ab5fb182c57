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

    from tasks import runs

    base = (tmp_path_factory.mktemp(name) if worker_id == "master"
            else tmp_path_factory.getbasetemp().parent / "shared_runs" / name)
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


# Runs in a fresh interpreter: imports only tensorflow and tensorflow_text (what TF Serving has),
# loads each SavedModel once and calls one signature per request; an op error is returned, not
# raised.
_SERVE = """
import pickle, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
requests_path, out_path = sys.argv[1:]
with open(requests_path, "rb") as f:
    requests, show = pickle.load(f)
models = {}
results = []
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
for path in show:  # `saved_model_cli show --dir PATH --all`: the console script's own main()
    import contextlib, io
    from tensorflow.python.tools import saved_model_cli
    sys.argv, buffer = ["saved_model_cli", "show", "--dir", path, "--all"], io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            saved_model_cli.main()
        except SystemExit as exit:  # absl's app.run ends with sys.exit
            assert not exit.code, f"saved_model_cli show --dir {path} exited with {exit.code}"
    shown[path] = buffer.getvalue()
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("zoo", "tasks", "tools", "tests"))
with open(out_path, "wb") as f:
    pickle.dump({"results": results, "shown": shown, "leaked": leaked}, f)
"""
# `saved_model_cli show --all` output of the exports a serving process was asked to show.
_SHOWN = {}


def serve_fresh(saved_model, requests, signature="serving_default", timeout=600, show=False):
    """Call a SavedModel in a fresh process that imports only tensorflow and tensorflow_text.

    Args:
        saved_model: an export version directory.
        requests: a list of {input name: array-like}, or of (signature, inputs) pairs, or of
            (saved_model, signature, inputs) triples for other exports served by the same
            process (one TensorFlow start-up for all).
        signature: the signature of requests given without one.
        show: also run `saved_model_cli show --dir saved_model --all` in that process (after
            the requests), through the `saved_model_cli` console script's own entry point;
            `saved_model_signatures(saved_model)` then reads its output instead of starting
            a process of its own (another TensorFlow start-up, ~3 s).

    Returns:
        One {output name: numpy array} per request, or {"error": "InvalidArgumentError: ..."}
        when the graph rejected it (the process itself must not crash).
    """
    import pickle

    triples = [(saved_model, signature, r) if not isinstance(r, tuple) else
               (saved_model, *r) if len(r) == 2 else r for r in requests]
    triples = [(str(path), s, {k: np.asarray(v, dtype=object if _is_text(v) else None)
                               for k, v in inputs.items()}) for path, s, inputs in triples]
    with tempfile.TemporaryDirectory() as tmp:
        requests_path, out = os.path.join(tmp, "in.pkl"), os.path.join(tmp, "out.pkl")
        with open(requests_path, "wb") as f:
            pickle.dump((triples, [str(saved_model)] if show else []), f)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        proc = subprocess.run([sys.executable, "-c", _SERVE, requests_path, out], cwd=tmp,
                              env=env, capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, f"the serving process crashed:\n{proc.stderr[-4000:]}"
        with open(out, "rb") as f:
            result = pickle.load(f)
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
