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


def run_in_backend(backend, function, *args, timeout=900):
    """Run `module:function(*args)` under `backend` in a fresh process; return its dict of arrays."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npz")
        env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
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
