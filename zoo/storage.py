"""Storage faults as one clear error: `StorageError` and `storage_operation(operation, path)`.

A write that fails because of the storage (no space left, no permission, a read-only file
system, a directory that vanished underneath) reaches zoo in many forms: an `OSError` from
Python, a `tf.errors.OpError` from TensorFlow's file systems (`ResourceExhaustedError:
.../variables_temp/part-00000...; No space left on device [Op:SaveV2]`, which is no OSError),
an OSError or RuntimeError from h5py or Keras's saving code, a Beam pipeline's error carrying a
worker's. Their messages rarely say what zoo was doing. Every place that writes a user's
output wraps the write:

    from zoo.storage import storage_operation

    with storage_operation("writing the export", target):
        archive.write_out(staging)

and a storage fault inside the block comes out as a `StorageError` (an `OSError`) whose
message is one line, "{operation} {path}: {reason}", e.g. "writing the export exports/mrpc/3:
no space left on device"; the original error stays attached as `__cause__` (the traceback
`ZOO_TRACEBACK=1` shows). Any other error (a bad value, a TensorFlow out-of-memory, which is
also a ResourceExhaustedError) passes through unchanged, and so does a `StorageError` raised
by an inner, more precise `storage_operation`. The command line (zoo_cli/main.py) prints a
storage fault as `zoo CMD: error: <message>` and exits 1; `storage_message` gives that line
for a fault raised outside any `storage_operation`.

Wrapped so far: `zoo export` (zoo.export: "writing the export BASE/N"), `zoo data vocab`
("writing the vocabulary OUT"; "reading the corpus FILE" for its input), `zoo data pretrain`
("writing the pretraining data OUT"), `zoo convert` ("writing the conversion DST"),
`zoo predict` and `zoo evaluate` ("writing the predictions PATH"). A model saved during
training is wrapped the same way, e.g. `with storage_operation("saving the model", path):
model.save(tmp)`, in zoo.training.

The block is where the reason is read, not where the write is undone: each writer keeps
its own temporary file or directory and removes it on failure (`zoo.files.atomic_path`), so the
last good output stays in place.
"""

import contextlib
import errno
import os
import re
import sys

from zoo import files

# The short reasons, by errno; the same texts are searched for in the messages of errors that
# carry no errno (TensorFlow's "...; No space left on device", h5py's "error message = '...'").
REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "not a directory",
    errno.EIO: "input/output error",
    errno.ESTALE: "stale file handle",
    errno.EFBIG: "file too large",
}
_TEXTS = [(code, os.strerror(code).lower()) for code in REASONS]
# TensorFlow's decorations around a file system's message: "{{function_node ...}} " before
# it, " [Op:SaveV2]" after it.
# Libraries whose own error types may carry an OS error's text (safetensors' SafetensorError
# "IoError(Os { code: 28, ... message: \"No space left on device\" })" is a bare Exception).
_LIBRARIES = ("h5py", "safetensors", "apache_beam", "keras", "tensorflow")
_TF_DECORATIONS = re.compile(r"^\{\{function_node [^}]*\}\}\s*|\s*\[Op:\w+\]\s*$")


class StorageError(OSError):
    """A write that failed for a reason of the storage: "{operation} {path}: {reason}".

    Attributes: `operation` (what zoo was doing, e.g. "writing the export"), `path` (the
    output it was writing), `reason` (short: "no space left on device", "permission denied",
    "read-only file system", "no such file or directory", ...); `errno` as the original error
    had it (None when the original was TensorFlow's or h5py's). The original error is the
    `__cause__`.

    Examples:
        >>> error = StorageError("writing the export", "exports/mrpc/3", "no space left on device")
        >>> str(error)
        'writing the export exports/mrpc/3: no space left on device'
        >>> isinstance(error, OSError)
        True
    """

    def __init__(self, operation, path, reason, code=None):
        super().__init__(f"{operation} {os.fspath(path)}: {reason}")
        self.operation, self.path, self.reason = operation, os.fspath(path), reason
        self.errno = code

    def __reduce__(self):  # pickled across processes (Beam workers): the fields, not `args`
        return type(self), (self.operation, self.path, self.reason, self.errno)


def _op_error(error):
    """Whether `error` is a `tf.errors.OpError` (TensorFlow is never imported for the check:
    without it loaded there are no such errors)."""
    tf = sys.modules.get("tensorflow")
    errors = getattr(tf, "errors", None)
    return errors is not None and isinstance(error, errors.OpError)


def _reason_in_text(text):
    text = text.lower()
    for code, reason_text in _TEXTS:
        if reason_text in text:
            return code, REASONS[code]
    return None


def storage_reason(error):
    """(errno or None, short reason) when `error` is a storage fault, else None.

    A storage fault is an `OSError` with an errno (or whose message names a storage reason),
    a `tf.errors.OpError` whose message does (any `PermissionDeniedError` too), a
    RuntimeError or an error of h5py, safetensors, Beam or Keras whose message does, or any
    error raised `from` one of those. A TensorFlow out-of-memory `ResourceExhaustedError` or
    a `NotFoundError` for a missing op names no file system reason and is not one.

    Examples:
        >>> storage_reason(OSError(28, "No space left on device"))
        (28, 'no space left on device')
        >>> storage_reason(RuntimeError("Can't write data (errno = 30, error message = "
        ...                             "'Read-only file system')"))
        (30, 'read-only file system')
        >>> storage_reason(ValueError("No such file or directory")) is None
        True
    """
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, StorageError):
            return error.errno, error.reason
        if isinstance(error, OSError) and error.errno:
            code = error.errno
            return code, REASONS.get(code, os.strerror(code).lower())
        if _op_error(error):
            found = _reason_in_text(error.message)
            if found is None and type(error).__name__ == "PermissionDeniedError":
                found = errno.EACCES, REASONS[errno.EACCES]
            if found:
                return found
        elif isinstance(error, (OSError, RuntimeError)) or \
                type(error).__module__.startswith(_LIBRARIES):
            found = _reason_in_text(str(error))
            if found:
                return found
        error, seen = error.__cause__, seen + 1
    return None


def storage_message(error):
    """The one-line message of a storage fault raised outside any `storage_operation` (the
    first line of its own message, TensorFlow's decorations removed, the reason added when it
    does not already say it); None for any other error.

    Examples:
        >>> storage_message(RuntimeError("{{function_node __wrapped__SaveV2}} /runs/a/x.tmp; "
        ...                              "No space left on device [Op:SaveV2]\\nmore"))
        '/runs/a/x.tmp; No space left on device'
        >>> storage_message(ValueError("bad value")) is None
        True
    """
    found = storage_reason(error)
    if found is None:
        return None
    if isinstance(error, StorageError):
        return str(error)
    text = error.message if _op_error(error) else str(error)
    lines = text.strip().splitlines() or [type(error).__name__]
    line = _TF_DECORATIONS.sub("", lines[0]).strip()
    return line if found[1] in line.lower() else f"{line}: {found[1]}"


@contextlib.contextmanager
def storage_operation(operation, path):
    """Raise a storage fault inside the block as a `StorageError` "{operation} {path}: {reason}".

    Args:
        operation: what the block does, as a verb phrase: "writing the export", "writing the
            predictions", "saving the model".
        path: the output the block writes (its final path, not a temporary one).

    Every other error passes through unchanged, and so does a `StorageError` from an inner
    block; so does a missing file or a permission error that does not name `path` or its
    folder (the block may read as well: a conversion's source that is not there is not a
    fault of its output). The caller keeps its writes atomic (a temporary file renamed at the
    end, removed on failure); this only names the fault.

    Examples:
        >>> try:
        ...     with storage_operation("writing the predictions", "/run/predictions/dev.tsv"):
        ...         raise OSError(30, "Read-only file system", "/run/predictions/.dev.tsv.x1")
        ... except StorageError as error:
        ...     print(error)
        writing the predictions /run/predictions/dev.tsv: read-only file system
    """
    try:
        yield
    except StorageError:
        raise
    except Exception as error:  # OSError, tf.errors.OpError, h5py's RuntimeError
        found = storage_reason(error)
        if found is None or (found[0] in _AMBIGUOUS and not _names(error, path)):
            raise
        raise StorageError(operation, path, found[1], found[0]) from error


# Reasons a read meets as well as a write: inside a block that also reads (a conversion reads
# its source), they are the block's write fault only when the error names the output's folder.
_AMBIGUOUS = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENOTDIR}


def _names(error, path):
    """Whether `error` (or what it was raised from) names `path`'s folder or a path in it."""
    path = os.fspath(path)
    names = {path, os.path.dirname(path), os.path.dirname(files.absolute(path))} - {""}
    seen = 0
    while error is not None and seen < 8:
        parts = (error, getattr(error, "filename", None), getattr(error, "filename2", None))
        text = " ".join(str(part) for part in parts if part)
        if any(name in text for name in names):
            return True
        error, seen = error.__cause__, seen + 1
    return False


__all__ = ["REASONS", "StorageError", "storage_message", "storage_operation", "storage_reason"]
