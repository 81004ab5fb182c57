"""The lock of a run directory: one `zoo train` process writes it at a time.

    run_dir/zoo.lock    {"host": ..., "pid": ..., "started": ...} of the process training it

A second process on the same directory is refused with the holder's host and pid. A lock
left by a process that is gone (same host, pid no longer running) is taken over with a
message; a lock from another host cannot be checked from here, so it is refused, saying
which file to delete once that process is known to be gone.

On a local disk the lock is a complete temporary file hard-linked to `zoo.lock`: link()
fails when the name exists, so exactly one process gets it, and a reader never sees a
half-written lock. Object stores (gs://, s3://) have no exclusive create through
`tf.io.gfile`: the lock is written only if absent, with a token of its own, and read back;
a process that reads another's token has lost. Two processes that both find no lock before
either has written one (a window of one small write) both go on: the lock guards against
a second command started by mistake, not against two started in the same instant.

Under multi_worker_mirrored each process locks the directory it writes: the chief the run
directory, every other worker its own `workers/<name>/` inside it.
"""

import contextlib
import datetime
import json
import os
import socket
import tempfile
import uuid

LOCK = "zoo.lock"


class RunDirLocked(FileExistsError):
    """Another live process holds the run directory."""


def _remote(path):
    return "://" in str(path)


def _alive(pid):
    """Whether process `pid` of this host is running (a zombie, killed but not yet reaped by
    its parent, counts as gone: it writes nothing more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


_UNREADABLE = {}


def _read(path):
    """The holder written in a lock file: None if there is no lock, `_UNREADABLE` if the file
    is not a lock zoo wrote."""
    import tensorflow as tf

    try:
        with tf.io.gfile.GFile(path, "r") as file:
            holder = json.loads(file.read())
    except (tf.errors.NotFoundError, FileNotFoundError):
        return None
    except ValueError:
        return _UNREADABLE
    return holder if isinstance(holder, dict) else _UNREADABLE


def _create(path, text):
    """Create `path` holding `text` unless it exists; whether this call created it."""
    import tensorflow as tf

    if _remote(path):
        # No exclusive create on an object store: write, then read back (see the docstring).
        if tf.io.gfile.exists(path):
            return False
        with tf.io.gfile.GFile(path, "w") as file:
            file.write(text)
        return _read(path) == json.loads(text)
    # A complete temporary file hard-linked to the lock's name: link() fails if the name
    # exists, and a reader never sees a half-written lock.
    fd, tmp = tempfile.mkstemp(prefix=f".{LOCK}.", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # a filesystem without hard links: an exclusive create, then the text
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        return True
    finally:
        os.remove(tmp)


@contextlib.contextmanager
def locked(run_dir, progress=print):
    """Hold `run_dir/zoo.lock` for the duration; raise RunDirLocked if a live process holds it.

    The directory is created if missing and removed again on the way out if nothing else was
    written to it, so a refused config leaves nothing behind.
    """
    import tensorflow as tf

    path = os.path.join(run_dir, LOCK)
    created = not tf.io.gfile.exists(run_dir)
    tf.io.gfile.makedirs(run_dir)
    me = {"host": socket.gethostname(), "pid": os.getpid(),
          "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
          "token": uuid.uuid4().hex}
    try:
        _acquire(run_dir, path, me, progress)
        yield
    finally:
        if (_read(path) or {}).get("token") == me["token"]:
            tf.io.gfile.remove(path)
        if created and tf.io.gfile.isdir(run_dir) and not tf.io.gfile.listdir(run_dir):
            tf.io.gfile.rmtree(run_dir)


def check_unlocked(directory):
    """Raise RunDirLocked if a live `zoo train` holds a run directory in `directory`'s tree
    (before `--overwrite` deletes a whole seeds or sweep directory)."""
    import tensorflow as tf

    if not tf.io.gfile.isdir(directory):
        return
    for root, _, files in tf.io.gfile.walk(directory):
        if LOCK not in files:
            continue
        holder = _read(os.path.join(root, LOCK))
        if not isinstance(holder, dict) or not holder:
            continue
        host, pid = holder.get("host"), holder.get("pid")
        if host != socket.gethostname() or (isinstance(pid, int) and _alive(pid)):
            raise RunDirLocked(
                f"--run-dir {directory}: {root} is in use by process {pid} on {host} since "
                f"{holder.get('started')}; --overwrite would delete it under that process. "
                f"Wait for it to end; if it is gone, delete {os.path.join(root, LOCK)}")


def _acquire(run_dir, path, me, progress):
    import tensorflow as tf

    for _ in range(3):
        if _create(path, json.dumps(me)):
            return
        holder = _read(path)
        if holder is None:  # released between the two calls: try again
            continue
        if holder is _UNREADABLE:
            raise RunDirLocked(f"--run-dir {run_dir}: {path} is not a lock zoo wrote (no JSON "
                               "host and pid); delete it if no zoo train is writing there")
        host, pid, started = holder.get("host"), holder.get("pid"), holder.get("started")
        if host == me["host"] and isinstance(pid, int) and not _alive(pid):
            progress(f"{run_dir}: taking over the lock of process {pid} on {host} (started "
                     f"{started}), which is no longer running")
            # Removed only if it is still that lock: another process taking it over at the
            # same moment may already have put its own there.
            if _read(path) == holder:
                with contextlib.suppress(tf.errors.NotFoundError, FileNotFoundError):
                    tf.io.gfile.remove(path)
            continue
        if host == me["host"] and pid == me["pid"]:
            raise RunDirLocked(f"--run-dir {run_dir}: this process is already training "
                               "into it")
        raise RunDirLocked(
            f"--run-dir {run_dir}: in use by process {pid} on {host} since {started} "
            f"({path}). Wait for it to end or choose another --run-dir; if that process is "
            f"gone (another host's cannot be checked from here), delete {path}")
    raise RunDirLocked(f"--run-dir {run_dir}: could not take {path} (other processes keep "
                       "taking it); try again")
