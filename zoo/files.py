"""Every file zoo reads or writes, on a local disk or any TensorFlow filesystem (`gs://`,
`s3://`, `hdfs://`, `ram://`), and atomic writes on both.

A path with a scheme goes through `tf.io.gfile`; a local path through Python's own calls, which
read line by line faster and keep light commands (`zoo --help`, `zoo score`) free of a
TensorFlow import. Code under zoo/, zoo_tasks/ and zoo_cli/ reaches user paths only through this
module (tests/test_files.py walks the AST; the few local-only places are listed there with
their reasons), so `gs://bucket/...` works wherever a local path does.

Atomic writes (`write_text`, `write_bytes`, `atomic_path`): locally a temporary file in the
target's directory, then `os.replace`, so a reader sees the old file or the new one, never
half. An object store has no atomic rename (on GCS `gfile.rename` is a copy, then a delete), but
it makes an object visible only once its upload has finished, which TensorFlow's GCS and S3
filesystems do at `close()`: the new content is written to a temporary object first and copied
over the target only when complete, so a reader never sees a half-written file and a failed
write never replaces a good one; the temporary object is deleted either way.
"""

import builtins
import contextlib
import errno
import glob as _glob
import io
import os
import shutil
import tempfile
import uuid


def is_remote(path):
    """Whether `path` names a file on a filesystem with a scheme (`gs://b/x`, `ram://x`)."""
    return "://" in os.fspath(path)


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def absolute(path):
    """`os.path.abspath` for local paths; a remote path is already absolute."""
    path = os.fspath(path)
    return path if is_remote(path) else os.path.abspath(path)


class _GFileRaw(io.RawIOBase):
    """A `tf.io.gfile.GFile` as a raw byte stream, for io's buffered and text wrappers."""

    def __init__(self, path, mode):
        self._mode = mode
        self._file = _gfile().GFile(path, mode)

    def readable(self):
        return "r" in self._mode

    def writable(self):
        return "w" in self._mode or "a" in self._mode

    def seekable(self):
        return self.readable()  # reading from a byte offset (corpus chunks)

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR:
            offset += self._file.tell()
        elif whence == io.SEEK_END:
            offset += self._file.size()
        self._file.seek(offset)
        return self._file.tell()

    def tell(self):
        return self._file.tell()

    def readinto(self, buffer):
        data = self._file.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def write(self, data):
        self._file.write(bytes(data))
        return len(data)

    def close(self):
        if not self.closed:
            self._file.close()
        super().close()


def open(path, mode="r", encoding="utf-8", errors="strict", newline=None):
    """`builtins.open` for local paths; for remote ones a GFile with the same interface
    (text decoded with `encoding` and `errors`, universal newlines as `open` has them)."""
    path = os.fspath(path)
    if not is_remote(path):
        if "b" in mode:
            return builtins.open(path, mode)
        return builtins.open(path, mode, encoding=encoding, errors=errors, newline=newline)
    binary = mode.replace("t", "").replace("b", "") + "b"
    if "r" in binary and not _gfile().exists(path):  # as open() does, not tf's NotFoundError
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    raw = _GFileRaw(path, binary)
    buffered = io.BufferedReader(raw) if "r" in binary else io.BufferedWriter(raw)
    if "b" in mode:
        return buffered
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline=newline)


def exists(path):
    path = os.fspath(path)
    return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path):
    path = os.fspath(path)
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def isfile(path):
    path = os.fspath(path)
    if is_remote(path):
        return _gfile().exists(path) and not _gfile().isdir(path)
    return os.path.isfile(path)


def listdir(path):
    """Names in a directory (no trailing "/" on subdirectories, as `os.listdir`)."""
    path = os.fspath(path)
    if is_remote(path):
        return [name.rstrip("/") for name in _gfile().listdir(path)]
    return os.listdir(path)


def makedirs(path):
    """The directory and its parents; no error when it exists."""
    path = os.fspath(path)
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def glob(pattern):
    """Sorted paths matching a pattern (`*`, `?`, `[...]`)."""
    pattern = os.fspath(pattern)
    return sorted(_gfile().glob(pattern) if is_remote(pattern) else _glob.glob(pattern))


def walk(path):
    """`os.walk` (top-down) for local and remote directories."""
    path = os.fspath(path)
    if not is_remote(path):
        yield from os.walk(path)
        return
    # By hand rather than gfile.walk, so that a caller can prune `dirs` in place as with
    # os.walk; names sorted (object stores list in key order anyway).
    names = sorted(listdir(path))
    dirs = [name for name in names if isdir(os.path.join(path, name))]
    yield path, dirs, [name for name in names if name not in dirs]
    for name in dirs:
        yield from walk(os.path.join(path, name))


def getsize(path):
    path = os.fspath(path)
    return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def remove(path):
    path = os.fspath(path)
    if is_remote(path):
        _gfile().remove(path)
    else:
        os.remove(path)


def rmtree(path):
    """Deletes a directory and everything in it."""
    path = os.fspath(path)
    if is_remote(path):
        _gfile().rmtree(path)
    else:
        shutil.rmtree(path)


def rename(source, target, overwrite=False):
    """Moves a file or directory; with `overwrite` a file replaces an existing target file."""
    source, target = os.fspath(source), os.fspath(target)
    if is_remote(source) or is_remote(target):
        _gfile().rename(source, target, overwrite=overwrite)
    elif overwrite:
        os.replace(source, target)
    else:
        if os.path.exists(target):
            raise FileExistsError(f"{target} exists")
        os.rename(source, target)


def copy(source, target):
    """Copies a file (between any two filesystems); the target is written atomically."""
    with open(source, "rb") as file:
        write_bytes(target, file.read())


def link(source, target):
    """Makes `target` hold what the file `source` holds: a hard link where both are local and
    one filesystem allows it (no second write of the bytes), a copy otherwise; an existing
    `target` is replaced, atomically either way. Later writes here replace files by rename,
    so the two names never change each other."""
    source, target = os.fspath(source), os.fspath(target)
    if not (is_remote(source) or is_remote(target)):
        directory, name = os.path.split(os.path.abspath(target))
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            os.link(source, tmp)
        except OSError:  # another filesystem, or one without hard links: copy below
            pass
        else:
            try:
                os.replace(tmp, target)
            except BaseException:
                os.remove(tmp)
                raise
            return
    copy(source, target)


def copytree(source, target):
    """Copies a directory tree file by file (between any two filesystems)."""
    source, target = os.fspath(source), os.fspath(target)
    if not (is_remote(source) or is_remote(target)):
        shutil.copytree(source, target, dirs_exist_ok=True)
        return
    for root, _, names in walk(source):
        relative = os.path.relpath(root, source) if root != source else ""
        makedirs(os.path.join(target, relative))
        for name in names:
            copy(os.path.join(root, name), os.path.join(target, relative, name))


def scratch_directory(parent, prefix):
    """A new, empty directory `parent/prefix...` (`tempfile.mkdtemp` locally, so mode 0700)."""
    if not is_remote(parent):
        return tempfile.mkdtemp(prefix=prefix, dir=parent)
    directory = os.path.join(parent, f"{prefix}{uuid.uuid4().hex[:12]}")
    makedirs(directory)
    return directory


def move_directory(source, target, last=()):
    """Rename the directory `source` to `target` (which must not exist).

    Locally one rename: atomic, `target` appears whole or not at all. A remote filesystem has
    no directory rename (GCS renames object by object; `ram://` would move only the directory
    entry), so there the files are renamed one by one into `target`, those named in `last`
    after all others (`saved_model.pb`: TF Serving loads a version only once it is there),
    and `source` is then removed.
    """
    source, target = os.fspath(source), os.fspath(target)
    if not (is_remote(source) or is_remote(target)):
        rename(source, target)
        return
    if exists(target):
        raise FileExistsError(f"{target} exists")
    moves = []
    for root, _, names in walk(source):
        relative = os.path.relpath(root, source) if root.rstrip("/") != source.rstrip("/") else ""
        makedirs(os.path.join(target, relative))
        moves += [(name in last, os.path.join(root, name), os.path.join(target, relative, name))
                  for name in names]
    for _, old, new in sorted(moves, key=lambda move: move[0]):
        rename(old, new, overwrite=True)
    rmtree(source)


def remove_quietly(directory):
    """Delete `directory` if it is there, ignoring errors: best-effort cleanup."""
    try:
        if exists(directory):
            rmtree(directory)
    except Exception:  # best-effort cleanup: OSError or tf.errors.OpError
        pass


@contextlib.contextmanager
def atomic_path(path):
    """A temporary path beside `path` to write to; moved over `path` when the block ends
    without an error, deleted otherwise. For writers that take a path (TFRecordWriter,
    h5py, a library's `save`), not a file object."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    makedirs(directory or ".")
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield tmp
        rename(tmp, path, overwrite=True)
    finally:
        if exists(tmp):
            remove(tmp)


def write_bytes(path, data):
    """Writes `data` to `path` atomically (see the module docstring); parents are made."""
    path = os.fspath(path)
    if is_remote(path):
        with atomic_path(path) as tmp:
            with _gfile().GFile(tmp, "wb") as file:
                file.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the result is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_text(path, text):
    """Write `text` (UTF-8, "\\n" line ends as given) to `path` atomically; parents are made.

    Examples:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/out/config.yaml"
        >>> write_text(path, "task: glue/mrpc\\n")
        >>> open(path).read()
        'task: glue/mrpc\\n'
    """
    write_bytes(path, text.encode("utf-8"))
