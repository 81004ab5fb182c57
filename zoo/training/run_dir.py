"""Run directories: their layout, the checks before writing one, atomic files, backups.

    run_dir/config.yaml      the resolved experiment (written first; a different one is refused)
    run_dir/vocabulary/      the tokenizer files, so the run is self-contained (text tasks)
    run_dir/logs/            TensorBoard: train/ (loss, learning rate, per log_every steps),
                             eval/ (dev metrics, dev examples as text), hparams
    run_dir/backup/          step_<N>/: the last one or two committed backups while training
                             runs (zoo.training.backups), removed once the run is complete
    run_dir/best.keras       the model at the best main dev metric so far (LoRA: merged)
    run_dir/adapters/        LoRA runs (train.lora_rank): best.keras's adapters alone, a PEFT
                             folder (adapter_model.safetensors, adapter_config.json)
    run_dir/final.keras      the model after the last step (its presence = run complete); a
                             hard link to best.keras when that was written after the last step
    run_dir/checkpoints/     step_<N>.keras, the model at every evaluation (train.keep_checkpoints)
    run_dir/metrics.json     every evaluation: {"step": ..., metrics ...}, in order
    run_dir/predictions/     what `zoo evaluate` writes, in the format `zoo score` reads
    run_dir/zoo.lock         host and pid of the `zoo train` writing it, while it runs

Every file is written to a temporary name and renamed.
"""

import json
import os
import re
import uuid

import keras
import yaml

from zoo import config as config_lib
from zoo import files, lora
from zoo.files import write_text
from zoo.storage import storage_operation
from zoo.training.run_lock import LOCK

RUN_FILES = ("config.yaml", "vocabulary", "logs", "backup", "best.keras", "final.keras",
             "checkpoints", "metrics.json", "predictions", "adapters", "hub.json")


def checkpoint_path(run_dir, step):
    """Where `train.keep_checkpoints` keeps the model after `step` updates."""
    return os.path.join(run_dir, "checkpoints", f"step_{step}.keras")


def run_dir_of(path):
    """The zoo run directory `path` is, or whose `checkpoints/step_<N>.keras` it is; None for
    anything else (a `.keras` file elsewhere, a Hugging Face folder, a Google checkpoint)."""
    if files.isfile(os.path.join(path, "config.yaml")):
        return path
    parent = os.path.dirname(files.absolute(path))
    run_dir = os.path.dirname(parent)
    if (os.path.basename(parent) == "checkpoints"
            and files.isfile(os.path.join(run_dir, "config.yaml"))):
        return run_dir
    return None


def save_model(model, path):
    """`model.save(path)` through a temporary `.keras` file and a rename (local or remote;
    keras writes `gs://` paths itself).

    A LoRA model (`train.lora_rank`) is saved merged and plain (`zoo.lora.merged`), without
    its optimizer state, whose variables a plain model does not have: the file is what
    exports read; a resume reads the backup, which keeps the adapters and the optimizer.
    """
    model = lora.merged(model, reuse=True)  # a run saves it again and again: built once
    directory = os.path.dirname(files.absolute(path))
    # keras.saving wants the `.keras` suffix, so not files.atomic_path's `.tmp` name.
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.keras")
    try:
        with storage_operation("saving the model", path):
            model.save(tmp)
            files.rename(tmp, path, overwrite=True)
    except BaseException:
        if files.exists(tmp):
            files.remove(tmp)
        raise


def read_metrics(run_dir):
    """The evaluations recorded in `run_dir/metrics.json` (a list, empty if none)."""
    path = os.path.join(run_dir, "metrics.json")
    if not files.exists(path):
        return []
    with files.open(path, encoding="utf-8") as file:
        return json.load(file)


def check_run_dir(config, run_dir, overwrite):
    """Whether `run_dir` resumes this experiment; raise if it holds something else.

    Writes nothing: an empty or missing directory starts a new run, one with the same
    config.yaml and no final.keras resumes, anything else is refused unless `overwrite`.
    """
    if overwrite or not files.isdir(run_dir) or _is_new(run_dir):
        return False
    config_path = os.path.join(run_dir, "config.yaml")
    if not files.isfile(config_path):
        raise FileExistsError(f"--run-dir {run_dir}: exists and is not a zoo run directory "
                              "(no config.yaml); choose another or pass --overwrite")
    with files.open(config_path, encoding="utf-8") as file:
        existing = yaml.safe_load(file)
    differences = _differences(existing, config_lib.to_dict(config))
    if differences:
        raise FileExistsError(f"--run-dir {run_dir}: holds a different experiment ("
                              f"{'; '.join(differences[:5])}); pass --overwrite to replace it "
                              "or choose another --run-dir")
    if files.isfile(os.path.join(run_dir, "final.keras")):
        raise FileExistsError(f"--run-dir {run_dir}: this run is complete (final.keras); "
                              "pass --overwrite to train it again")
    return True


def _entries(run_dir):
    """What `run_dir` holds besides the lock of the process training it (`run_lock`)."""
    return [name for name in files.listdir(run_dir) if name != LOCK]


def _is_new(run_dir):
    """Whether `run_dir` holds no run yet: nothing but the lock and, under
    multi_worker_mirrored, `workers/`, which the other workers lock (and so create) while the
    chief checks the directory."""
    return not set(_entries(run_dir)) - {"workers"}


def create_run_dir(config, run_dir, overwrite):
    """Start a new run directory (replacing an old one with `overwrite`, all but the lock this
    process holds): config.yaml first."""
    if files.isdir(run_dir) and overwrite:
        for name in _entries(run_dir):
            path = os.path.join(run_dir, name)
            if files.isdir(path) and not os.path.islink(path):
                files.rmtree(path)
            else:
                files.remove(path)
    files.makedirs(run_dir)
    write_text(os.path.join(run_dir, "config.yaml"),
               yaml.safe_dump(config_lib.to_dict(config), sort_keys=False))


def _differences(old, new, prefix=""):
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} there, {b!r} now")
    return out


def load_run(run_dir, checkpoint="best"):
    """The experiment and model of a run directory (`best` falls back to `final`)."""
    config_path = os.path.join(run_dir, "config.yaml")
    if not files.isfile(config_path):
        raise FileNotFoundError(f"--run-dir {run_dir}: not a zoo run directory (no "
                                "config.yaml)")
    with files.open(config_path, encoding="utf-8") as file:
        config = config_lib.from_dict(yaml.safe_load(file), config_path)
    names = [f"{checkpoint}.keras"] + (["final.keras"] if checkpoint == "best" else [])
    for name in names:
        path = os.path.join(run_dir, name)
        if files.isfile(path):
            return config, keras.saving.load_model(path)
    raise FileNotFoundError(f"--run-dir {run_dir}: no {' or '.join(names)} (has it trained?)")


# A temporary file of an atomic write of a run file: `save_model`'s `.NAME.<id>.keras`,
# `zoo.files.write_text`'s `.NAME.<random>`, `zoo.files.atomic_path`'s `.NAME.<id>.tmp`.
_TEMPORARY = re.compile(r"^\.(metrics\.json|config\.yaml|best\.keras|final\.keras|"
                        r"step_\d+\.keras|events\.out\.tfevents\..+)\.[0-9a-z_]+(\.keras|\.tmp)?$")


def remove_temporaries(run_dir):
    """Remove what writes killed half-way left in a run directory (temporary files, never
    renamed into place); called on resume, by the process holding the run's lock. Returns
    their paths."""
    removed = []
    for folder in (run_dir, os.path.join(run_dir, "checkpoints"),
                   os.path.join(run_dir, "logs", "train"), os.path.join(run_dir, "logs", "eval")):
        if not files.isdir(folder):
            continue
        for name in files.listdir(folder):
            path = os.path.join(folder, name)
            if _TEMPORARY.match(name) and files.isfile(path):
                files.remove(path)
                removed.append(path)
    return removed


# === Backups (zoo.training.backups) ===


def copy_backup(source, target):
    """Replace `target` with a copy of the backup in `source`; False if there is none."""
    if not files.isdir(source):
        return False
    staging = target + ".copy"
    files.remove_quietly(staging)
    files.copytree(source, staging)
    files.remove_quietly(target)
    files.move_directory(staging, target)
    return True
