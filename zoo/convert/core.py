"""What every converter shares: explicit weight maps, tensor sources, checks, atomic output.

A weight map is a list of `Port`s, one per source tensor, each naming the Keras variables it
sets and how the array is laid out on each side (keras-hub's `port_weight`, nanoGPT's
transpose list). `load_weights` applies a map with every check up front: each mapped tensor
present with the expected shape, each source tensor used (or explicitly skipped), each model
variable set exactly once. `export_weights` runs the same map backwards.
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import tempfile
from typing import Callable

import keras
import numpy as np

from zoo import files as files_lib
from zoo.progress import bar as progress_bar
from zoo.storage import storage_operation


class ConversionError(ValueError):
    """A checkpoint or model that cannot be converted; the message names the key or file."""


@dataclasses.dataclass(frozen=True, eq=False)
class Port:
    """One weight-map entry: source tensor `key` <-> the Keras `variables` it sets.

    `to_keras(array)` returns one array per variable; `to_source(arrays)` is its inverse, used
    when writing a checkpoint. `key=None` sets the variables to zeros: a tensor the source
    architecture does not have (ViT query/key/value biases when `qkv_bias=False`). `aliases`
    are older spellings of the same tensor (LayerNorm `gamma`/`beta`), accepted when reading.
    `unused`: with `key=None`, variables the target architecture leaves out when writing
    because the model's outputs never read them (a pooler under a span-QA head).
    """

    key: str | None
    variables: tuple
    to_keras: Callable
    to_source: Callable
    aliases: tuple = ()
    unused: bool = False

    def source_shape(self):
        """The shape the source tensor must have, derived from the variables' shapes."""
        # Zero-stride views: no memory for the (vocab, hidden) tables of large models.
        views = [np.broadcast_to(np.float32(0), tuple(v.shape)) for v in self.variables]
        return tuple(self.to_source(views).shape)


def same(variable, key, aliases=()):
    """The tensor is stored with the variable's layout."""
    return Port(key, (variable,), lambda a: [a], lambda arrays: arrays[0], aliases)


def permuted(variable, key, axes):
    """The variable is `np.transpose(tensor, axes)` (e.g. (1, 0) for a torch Linear weight)."""
    inverse = tuple(np.argsort(axes))
    return Port(key, (variable,), lambda a: [np.transpose(a, axes)],
                lambda arrays: np.transpose(arrays[0], inverse))


def reshaped(variable, key, source_shape):
    """The tensor holds the variable's values in another shape (per-head attention kernels)."""
    source_shape = tuple(source_shape)
    return Port(key, (variable,), lambda a: [np.reshape(a, tuple(variable.shape))],
                lambda arrays: np.reshape(arrays[0], source_shape))


def split(variables, key, axis=-1):
    """The tensor is the variables concatenated along `axis` (a fused query/key/value)."""
    return Port(key, tuple(variables), lambda a: np.split(a, len(variables), axis=axis),
                lambda arrays: np.concatenate(arrays, axis=axis))


def zeros(variable):
    """The source has no such tensor; the variable is set to zeros (an absent bias)."""
    return Port(None, (variable,), lambda _: [np.zeros(tuple(variable.shape), "float32")],
                lambda arrays: arrays[0])


def dense_ports(dense, name, kernel_axes=(1, 0), bias=True):
    """A Dense layer from `name.weight` / `name.bias` (torch Linear layout unless told)."""
    ports = [permuted(dense.kernel, f"{name}.weight", kernel_axes)]
    ports.append(same(dense.bias, f"{name}.bias") if bias else zeros(dense.bias))
    return ports


def layer_norm_ports(norm, name):
    """A LayerNormalization from `name.weight` / `name.bias` (older files: gamma / beta)."""
    return [same(norm.gamma, f"{name}.weight", aliases=(f"{name}.gamma",)),
            same(norm.beta, f"{name}.bias", aliases=(f"{name}.beta",))]


class SafetensorsSource:
    """The tensors of one or more .safetensors files, read one tensor at a time.

    Args:
        files: paths of the files (several for a sharded checkpoint).
        name: how errors refer to the checkpoint (default: the only file, or its folder).
    """

    def __init__(self, files, name=None):
        from safetensors import SafetensorError, safe_open

        self._safe_open = safe_open
        self.name = name or str(files[0] if len(files) == 1 else pathlib.Path(files[0]).parent)
        self._file, self._shape = {}, {}
        for path in files:
            try:
                with safe_open(str(path), framework="numpy") as handle:
                    for key in handle.keys():
                        if key in self._file:
                            raise ConversionError(
                                f"{key}: stored in both {self._file[key]} and {path}; "
                                "a sharded checkpoint holds each tensor once")
                        self._file[key] = path
                        self._shape[key] = tuple(handle.get_slice(key).get_shape())
            except (SafetensorError, OSError) as error:
                raise ConversionError(
                    f"{path}: not a readable safetensors file ({error}); it is truncated, "
                    "corrupt or not safetensors at all"
                ) from error

    def keys(self):
        return list(self._file)

    def shape(self, key):
        return self._shape[key]

    def get(self, key):
        path = self._file[key]
        try:
            with self._safe_open(str(path), framework="numpy") as handle:
                return handle.get_tensor(key)
        except Exception as error:  # safetensors raises several types for damaged data
            raise ConversionError(f"{path}: cannot read tensor {key!r}: {error}") from error


class ArraySource:
    """Tensors already in memory: a dict of name -> array (e.g. a keras-hub model's variables).

    Args:
        name: how errors refer to the source.
        arrays: name -> numpy array (or a callable returning it, to defer the copy).
    """

    def __init__(self, name, arrays):
        self.name = name
        self._arrays = arrays

    def keys(self):
        return list(self._arrays)

    def shape(self, key):
        return tuple(self._value(key).shape)

    def get(self, key):
        return np.asarray(self._value(key))

    def _value(self, key):
        value = self._arrays[key]
        return value() if callable(value) else value


def check_coverage(model, ports):
    """Every variable of `model` set by exactly one port, else a ConversionError listing them."""
    count = {}
    for port in ports:
        for variable in port.variables:
            count[id(variable)] = count.get(id(variable), 0) + 1
    twice = [v.path for v in model.weights if count.get(id(v), 0) > 1]
    unset = [v.path for v in model.weights if id(v) not in count]
    if twice:
        raise ConversionError(f"{model.name}: variable(s) set by more than one tensor: "
                              + ", ".join(twice))
    if unset:
        raise ConversionError(f"{model.name}: {len(unset)} variable(s) not set by the weight "
                              "map: " + ", ".join(unset))


def load_weights(model, ports, source, skipped=(), duplicates=(), progress=False):
    """Set every variable of `model` from `source` through `ports`; check everything first.

    Args:
        model: the freshly built Keras model.
        ports: its weight map.
        source: a tensor source (`SafetensorsSource`, `ArraySource`, ...).
        skipped: source keys known to hold no weights of this model (buffers such as
            `position_ids`, optimizer slots, task heads that were not asked for); skipped
            only if present.
        duplicates: (key, original_key) pairs for tied copies saved twice (an LM decoder
            equal to the token embedding); each copy must equal its original.
        progress: show a tqdm progress bar over the tensors.
    """
    keys = set(source.keys())
    resolved = []
    missing = []
    for port in ports:
        names = (port.key, *port.aliases) if port.key is not None else ()
        found = next((name for name in names if name in keys), None)
        if port.key is not None and found is None:
            missing.append(port.key)
        resolved.append(found)
    if missing:
        raise ConversionError(f"{source.name}: {len(missing)} tensor(s) missing for "
                              f"{model.name}: " + ", ".join(missing))
    wrong = [f"{key}: expected {port.source_shape()}, found {source.shape(key)}"
             for port, key in zip(ports, resolved)
             if key is not None and source.shape(key) != port.source_shape()]
    wrong += [f"{copy}: expected {source.shape(original)} (tied to {original}), "
              f"found {source.shape(copy)}" for copy, original in duplicates
              if copy in keys and source.shape(copy) != source.shape(original)]
    if wrong:
        raise ConversionError(f"{source.name}: shape mismatch (expected from the config, "
                              "found in the checkpoint): " + "; ".join(wrong))
    used = set(resolved) | {copy for copy, _ in duplicates} | set(skipped)
    unused = sorted(keys - used)
    if unused:
        raise ConversionError(f"{source.name}: {len(unused)} tensor(s) with no place in "
                              f"{model.name}: " + ", ".join(unused))
    check_coverage(model, ports)
    for copy, original in duplicates:
        if copy in keys and not np.array_equal(source.get(copy), source.get(original)):
            raise ConversionError(f"{source.name}: {copy} should be tied to {original} "
                                  "but holds different values")

    for port, key in progress_bar(list(zip(ports, resolved)), desc=f"loading {model.name}",
                                  unit="tensor", disable=not progress):
        arrays = port.to_keras(source.get(key) if key is not None else None)
        for variable, array in zip(port.variables, arrays):
            variable.assign(np.asarray(array, keras.backend.standardize_dtype(variable.dtype)))


def export_weights(model, ports, progress=False):
    """The tensors of `model` under the names of its weight map: a dict of name -> array."""
    check_coverage(model, ports)
    tensors = {}
    for port in progress_bar(ports, desc=f"writing {model.name}", unit="tensor",
                             disable=not progress):
        arrays = [keras.ops.convert_to_numpy(v) for v in port.variables]
        if port.key is None and port.unused:
            continue
        if port.key is None:
            # The target format has no such tensor (e.g. an absent bias): only zeros can be
            # dropped without losing what the model learned.
            if any(np.any(a) for a in arrays):
                raise ConversionError(
                    f"{', '.join(v.path for v in port.variables)}: non-zero values, but the "
                    "target format has no tensor for them")
            continue
        # safetensors stores C-ordered bytes; transposed views must be copied.
        tensors[port.key] = np.ascontiguousarray(port.to_source(arrays))
    return tensors


def read_json(path):
    """A JSON file as a dict; a ConversionError naming the file if it is missing or invalid."""
    if files_lib.is_remote(path) and not files_lib.exists(path):
        raise ConversionError(f"{path}: file not found")
    try:
        with files_lib.open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as error:
        raise ConversionError(f"{path}: file not found") from error
    except json.JSONDecodeError as error:
        raise ConversionError(f"{path}: not valid JSON ({error})") from error


WRITING = "writing the conversion"  # `storage_operation`'s name for a failed write


@contextlib.contextmanager
def atomic_output(path):
    """Yield a staging path next to `path`; move it to `path` only if the block succeeds.

    The caller writes a file or a directory at the staging path (a local `pathlib.Path`, as
    safetensors and h5py need). On any error the staging area is removed and nothing appears
    at `path`; `path` must not exist beforehand, so a failed conversion never damages an
    earlier result either. A remote `path` (`gs://...`) is staged in a local temporary
    folder and uploaded when complete: each file appears whole, the folder file by file.
    A storage fault (a full or read-only destination) is a `zoo.storage.StorageError`
    "writing the conversion DST: <reason>".
    """
    if files_lib.is_remote(path):
        path = os.fspath(path)
        if files_lib.exists(path):
            raise ConversionError(f"{path}: already exists; choose a new destination")
        parent = os.path.dirname(path.rstrip("/"))
        if not files_lib.isdir(parent):
            raise ConversionError(f"{parent}: destination folder does not exist")
        staging = pathlib.Path(tempfile.mkdtemp(suffix=".tmp"))
        try:
            staged = staging / os.path.basename(path.rstrip("/"))
            with storage_operation(WRITING, path):
                yield staged
                if staged.is_dir():
                    files_lib.copytree(staged, path)
                else:
                    files_lib.copy(staged, path)
        finally:
            files_lib.rmtree(staging)
        return
    path = pathlib.Path(path)
    if path.exists():
        raise ConversionError(f"{path}: already exists; choose a new destination")
    if not path.parent.is_dir():
        raise ConversionError(f"{path.parent}: destination folder does not exist")
    with storage_operation(WRITING, path):  # a read-only or full destination folder
        staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp",
                                                dir=path.parent))
    try:
        staged = staging / path.name
        with storage_operation(WRITING, path):
            yield staged
            files_lib.rename(staged, path)  # atomic within one file system
    finally:
        if files_lib.isdir(staging):
            files_lib.rmtree(staging)
