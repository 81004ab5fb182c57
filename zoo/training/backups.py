"""Backups of a training run: everything a resume reads, committed atomically, two kept.

    backup/step_<N>/model.weights.h5   weights and optimizer state (`model.save_weights`)
    backup/step_<N>/random_state.npz   the layers' `SeedGenerator` states (dropout masks)
    backup/step_<N>/lora.npz           LoRA runs: the adapters and unmerged kernels, which
                                       `save_weights` merges and drops (`zoo.lora.state`)
    backup/step_<N>/state.json         {"step": N}, written last: the commit marker

A backup is written whole into a temporary directory beside the others
(`backup/.tmp-step_<N>-<pid>-...`) and renamed into place (on an object store, where there is
no directory rename, its files are moved one by one and state.json last, as Orbax commits a
checkpoint), so a kill, a preemption or a full disk during the write leaves the previous
backup as it was. Only once the new one is committed is the one before the previous removed:
there are always one or two complete backups. The data order needs no state: it is a pure
function of the seed and the step (`zoo_tasks.data_order`).

Why not `keras.callbacks.BackupAndRestore`: it writes `latest.weights.h5` in place under the
same name every time (its `double_checkpoint` copies the old file to `.bkp` first, which a
full disk tears as well), and reads back only after an `OSError`, while a torn HDF5 file
raises `RuntimeError` from h5py. HDF5 itself writes the weights into this machine's temporary
directory here; the finished file is then copied into the staging directory with plain writes,
so a full run directory is an `OSError` naming the path, not a fault inside the HDF5 library.

`restore` takes the newest committed backup that reads, says which it skipped and why, and
fails with what to do when none does.
"""

import functools
import io
import json
import os
import re
import tempfile

import keras
import numpy as np

from zoo import files, lora
from zoo.storage import storage_operation

WEIGHTS, RANDOM_STATE, STATE = "model.weights.h5", "random_state.npz", "state.json"
LORA = "lora.npz"
_NAME = re.compile(r"^step_(\d+)$")
_TEMPORARY = re.compile(r"^\.tmp-step_\d+-(\d+)-")


class BackupError(OSError):
    """No backup of a run can be read; the message says which and what to do."""


def _random_states(model):
    return [v for v in model.variables if "seed_generator_state" in v.path]


def committed(backup_dir):
    """[(step, path)] of the committed backups in `backup_dir`, newest first."""
    if not files.isdir(backup_dir):
        return []
    found = []
    for name in files.listdir(backup_dir):
        match = _NAME.match(name)
        path = os.path.join(backup_dir, name)
        if match and files.isfile(os.path.join(path, STATE)):
            found.append((int(match.group(1)), path))
    return sorted(found, reverse=True)


def latest_step(backup_dir):
    """The step of the newest committed backup (0 without one)."""
    found = committed(backup_dir)
    return found[0][0] if found else 0


def save(model, backup_dir, step):
    """Commit a backup of `model` after `step` updates, then drop all but it and the previous
    committed one (and temporaries of dead processes). Returns its path."""
    target = os.path.join(backup_dir, f"step_{step}")
    with storage_operation("writing the backup", target):
        files.makedirs(backup_dir)
        _remove_dead_temporaries(backup_dir)
        staging = files.scratch_directory(backup_dir, f".tmp-step_{step}-{os.getpid()}-")
        _write(model, staging, target, step)
    keep = {path for _, path in committed(backup_dir)[:2]} | {target}
    for name in files.listdir(backup_dir):
        path = os.path.join(backup_dir, name)
        if _NAME.match(name) and path not in keep:
            files.remove_quietly(path)
    return target


def _write(model, staging, target, step):
    """The backup written into `staging`, then committed as `target`."""
    try:
        with tempfile.TemporaryDirectory(prefix="zoo-backup-") as local:
            weights = os.path.join(local, WEIGHTS)
            model.save_weights(weights)
            files.copy(weights, os.path.join(staging, WEIGHTS))
        data = io.BytesIO()
        np.savez(data, **{v.path: keras.ops.convert_to_numpy(v) for v in _random_states(model)})
        files.write_bytes(os.path.join(staging, RANDOM_STATE), data.getvalue())
        adapters = lora.state(model)
        if adapters:
            data = io.BytesIO()
            np.savez(data, **adapters)
            files.write_bytes(os.path.join(staging, LORA), data.getvalue())
        files.write_text(os.path.join(staging, STATE), json.dumps({"step": step}) + "\n")
        if files.exists(target):  # the same step again (a replayed round): replace it
            files.rmtree(target)
        files.move_directory(staging, target, last=(STATE,))
    except BaseException:
        files.remove_quietly(staging)
        raise


def restore(model, backup_dir, log=functools.partial(print, flush=True)):
    """Load the newest readable committed backup into `model` (built, optimizer built);
    returns its step, 0 when there is none. An unreadable one is skipped with a message
    naming it; when every one is unreadable, or the only backup is an older zoo's
    `latest.weights.h5`, a `BackupError` says what to delete."""
    found = committed(backup_dir)
    skipped = []
    for step, path in found:
        try:
            model.load_weights(os.path.join(path, WEIGHTS))
            with files.open(os.path.join(path, RANDOM_STATE), "rb") as file:
                data = io.BytesIO(file.read())  # np.load seeks in an .npz; a GFile cannot
            with np.load(data) as saved:
                for variable in _random_states(model):
                    variable.assign(saved[variable.path])
            if lora.lora_layers(model):
                with files.open(os.path.join(path, LORA), "rb") as file:
                    data = io.BytesIO(file.read())
                with np.load(data) as saved:
                    lora.restore_state(model, saved)
        except Exception as error:  # a torn or damaged file: h5py, numpy, zipfile, KeyError
            reason = " ".join(str(error).split())[:200] or type(error).__name__
            log(f"backup {path}: unreadable ({reason}); trying an older one")
            skipped.append(path)
            continue
        return step
    if skipped:
        raise BackupError(f"no readable backup in {backup_dir} ({', '.join(skipped)}): delete "
                          f"{backup_dir} to train this run again from step 0, or put back a "
                          "copy of it")
    old = os.path.join(backup_dir, "latest.weights.h5")
    if files.exists(old):  # keras.callbacks.BackupAndRestore's, as zoo wrote it before #40
        raise BackupError(f"{old} is a backup in the layout of an older zoo, which lacks the "
                          f"random state this one resumes; delete {backup_dir} to train this "
                          "run again from step 0, or finish it with the zoo that wrote it")
    return 0


def _remove_dead_temporaries(backup_dir):
    """Remove staging directories left by processes that are gone (killed mid-write)."""
    for name in files.listdir(backup_dir):
        match = _TEMPORARY.match(name)
        if not match:
            continue
        pid = int(match.group(1))
        if pid != os.getpid():
            try:
                os.kill(pid, 0)
                continue  # alive: another process (a worker) is writing it
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
        files.remove_quietly(os.path.join(backup_dir, name))
