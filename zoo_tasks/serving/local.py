"""A task's serving signatures called in this process: the functions an export holds, traced
once here, so `predict` in Python and `zoo predict --model` answer as the SavedModel does
(`zoo_tasks.LoadedRun.predict`), with no export written."""

import numpy as np
import tensorflow as tf

from zoo import export


class LocalSignature:
    """One of `task.serving(model)`'s signatures as a callable: `signature(**tensors)` gives
    its outputs as tensors, traced once for its input specs (as the export traces it).

    Attributes:
        specs: {input name: tf.TensorSpec}, the signature's inputs (`zoo predict`'s keys).
        outputs: the output names.
    """

    def __init__(self, task, model, name=export.DEFAULT, run_dir=None):
        signatures = task.serving(model, run_dir)
        if name not in signatures:
            raise KeyError(f"--signature {name}: the {task.name} task serves "
                           f"{', '.join(sorted(signatures))}")
        signature = signatures[name]
        self.specs, self.outputs = dict(signature.inputs), signature.outputs
        names = list(self.specs)
        self._traced = tf.function(
            lambda *args: signature.fn(**dict(zip(names, args))),
            input_signature=[self.specs[key] for key in names])
        self._names = names

    def __call__(self, **tensors):
        return self._traced(*(tensors[key] for key in self._names))


def run_rows(signature, rows):
    """The signature on a list of input dicts (one a row, raw Python values: str, bytes,
    numbers, lists): a list of output dicts of Python values, one a row."""
    if not rows:
        return []
    tensors = {}
    for key, spec in signature.specs.items():
        values = [row[key] for row in rows]
        dtype = object if spec.dtype == tf.string else spec.dtype.as_numpy_dtype
        tensors[key] = tf.constant(np.array(values, dtype=dtype))
    outputs = {key: value.numpy().tolist() for key, value in signature(**tensors).items()}
    return [{key: _python(value[i]) for key, value in outputs.items()}
            for i in range(len(rows))]


def _python(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_python(v) for v in value]
    return value
