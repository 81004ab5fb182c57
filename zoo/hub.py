"""Checkpoints by name: `hf://ORG/NAME[@REVISION]` and the pretrained presets of
`zoo.models.pretrained_presets` (`bert_base_uncased`, or `bert_base_uncased@REVISION`).

huggingface_hub does the downloading, as transformers and keras-hub use it: its cache
(`HF_HOME`, `HF_HUB_CACHE`), offline mode (`HF_HUB_OFFLINE=1`), its token (`HF_TOKEN` or `hf auth
login`), its endpoint (`HF_ENDPOINT`), and its writes (each file downloaded to a temporary name and
renamed when complete, so a download cut off is never trusted by a later run). This module picks
the files zoo reads, checks a checkpoint before its weights are downloaded (config.json's
`model_type`, safetensors present: a repo with only `pytorch_model.bin` is refused without
downloading it) and turns huggingface_hub's exceptions, by their classes, into one line naming
the repo. `resolve(source)` gives the local folder; `checkpoint(source)` also the commit.
"""

import contextlib
import dataclasses
import functools
import json
import os

import httpx2
import huggingface_hub
from huggingface_hub import constants, errors
from huggingface_hub.file_download import repo_folder_name

from zoo import files
from zoo import progress as progress_lib
from zoo.models.presets import PRESETS
from zoo.models.pretrained_presets import PRETRAINED

PREFIX = "hf://"

# The files zoo reads from a Hugging Face folder: the model (config.json, safetensors, shards'
# index), the tokenizer, ViT's image processor, and sentence-transformers' module settings
# (modules.json, sentence_bert_config.json, 1_Pooling/config.json, ...). Nothing else is
# downloaded: not pytorch_model.bin, not the ONNX or TensorFlow copies many repos also hold.
ALLOW_PATTERNS = (
    "config.json", "*.safetensors", "model.safetensors.index.json", "tokenizer.json",
    "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt", "special_tokens_map.json",
    "preprocessor_config.json", "modules.json", "sentence_bert_config.json",
    "config_sentence_transformers.json", "*/config.json",
)
# A keras-hub preset kept on the Hugging Face Hub (what keras-hub's `save_to_preset` writes).
KERAS_HUB_PATTERNS = ("config.json", "metadata.json", "tokenizer.json", "preprocessor.json",
                      "task.json", "*.weights.h5", "assets/*")

# config.json's model_type -> the zoo backbone that zoo.convert.huggingface builds from it.
MODEL_TYPES = {"bert": "BertBackbone", "openai-gpt": "GPTBackbone", "vit": "ViTBackbone"}

_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
_PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5",
            "flax_model.msgpack")


class HubError(ValueError):
    """A checkpoint name that cannot be had; the message (one line) names the repo."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """What a name resolved to: the repo, the revision asked for, the commit it was, the
    folder (a snapshot in huggingface_hub's cache), and the preset name if one was given."""

    source: str
    repo: str
    revision: str
    commit: str
    folder: str
    preset: str | None = None
    format: str = "huggingface"  # or "keras-hub"

    def record(self):
        """The JSON-able record of a run's starting point (the folder is this machine's)."""
        return {"source": self.source, "repo": self.repo, "revision": self.revision,
                "commit": self.commit, "preset": self.preset, "format": self.format,
                "endpoint": constants.ENDPOINT}


_RESOLVED = {}  # (source, cache, endpoint, offline) -> Checkpoint, for this process


def is_hub(source):
    """Whether `source` names a checkpoint on the hub: `hf://ORG/NAME[@REVISION]` or a
    pretrained preset name (`bert_base_uncased[@REVISION]`; a local file or folder of that
    name is the folder, not the preset).

    Examples:
        >>> is_hub("hf://google-bert/bert-base-uncased"), is_hub("bert_base_uncased")
        (True, True)
        >>> is_hub("bert_base"), is_hub("runs/mrpc")
        (False, False)
    """
    if not isinstance(source, str):
        return False
    if source.startswith(PREFIX):
        return True
    return source.partition("@")[0] in PRETRAINED and not files.exists(source)


def parse(source):
    """(repo, revision, preset name or None) of a hub name; the revision defaults to the
    preset's, else "main".

    Examples:
        >>> parse("hf://google-bert/bert-base-uncased@v1.0")
        ('google-bert/bert-base-uncased', 'v1.0', None)
        >>> parse("bert_base_uncased")
        ('google-bert/bert-base-uncased', 'main', 'bert_base_uncased')
    """
    name, at, revision = source.partition("@")
    if at and not revision:
        raise HubError(f"{source}: an empty revision after '@'")
    if name.startswith(PREFIX):
        repo = name[len(PREFIX):].strip("/")
        if not repo:
            raise HubError(f"{source}: no repo after {PREFIX} (expected {PREFIX}ORG/NAME)")
        return repo, revision or constants.DEFAULT_REVISION, None
    if name not in PRETRAINED:
        raise HubError(f"{source}: not a pretrained preset ({', '.join(PRETRAINED)}) nor an "
                       f"{PREFIX}ORG/NAME repo")
    entry = PRETRAINED[name]
    return entry["repo"], revision or entry["revision"], name


def resolve(source, progress=True):
    """The local folder of `source`: a hub name downloaded (or found in the cache); anything
    else (a folder, a file, gs://...) is returned unchanged.

    Args:
        source: `hf://ORG/NAME[@REVISION]`, a pretrained preset name, or any path.
        progress: show the download's progress (zoo.progress).
    """
    return checkpoint(source, progress=progress).folder if is_hub(source) else source


def checkpoint(source, progress=True):
    """The `Checkpoint` of a hub name: downloaded once, then the cache (offline too). A name
    is asked of the hub once a process (for the same cache and endpoint), so that a run's
    tokenizer and weights come from one commit even if the branch moves meanwhile."""
    key = (source, constants.HF_HUB_CACHE, constants.ENDPOINT, constants.is_offline_mode())
    if key not in _RESOLVED:
        _RESOLVED[key] = _download(source, progress)
    return _RESOLVED[key]


def cached(source):
    """Whether a hub name's config.json and weights are in the cache (nothing is downloaded).

    Examples:
        >>> import tempfile
        >>> from huggingface_hub import constants
        >>> constants.HF_HUB_CACHE, before = tempfile.mkdtemp(), constants.HF_HUB_CACHE
        >>> cached("bert_base_uncased")
        False
        >>> constants.HF_HUB_CACHE = before
    """
    repo, revision, _ = parse(source)
    found = [huggingface_hub.try_to_load_from_cache(repo, name, revision=revision)
             for name in ("config.json", *_WEIGHTS)]
    return isinstance(found[0], str) and any(isinstance(path, str) for path in found[1:])


def download_command(repo, revision):
    """The `hf download` command that fetches what zoo reads of `repo`, into the same cache."""
    return (f"hf download {repo} --revision {revision} --include '*.json' "
            "--include '*.safetensors' --include '*.txt'")


def _download(source, progress):
    repo, revision, preset = parse(source)
    name = f"{PREFIX}{repo}@{revision}" if preset is None else f"{source} ({repo}@{revision})"
    # First config.json alone: the architecture and the weights' format are checked before
    # the weights are downloaded.
    with _errors(name, repo, revision):
        first = _snapshot(repo, revision, ["config.json", "metadata.json"], progress=False)
    commit = os.path.basename(first)
    listing = _listing(repo, commit)
    config_path = os.path.join(first, "config.json")
    if not os.path.isfile(config_path):
        raise HubError(f"{name}: no config.json in the repo{_files(listing)}")
    with open(config_path, encoding="utf-8") as file:
        try:
            config = json.load(file)
        except ValueError as error:
            raise HubError(f"{name}: config.json is not JSON ({error})") from None
    if (os.path.isfile(os.path.join(first, "metadata.json"))
            and str(config.get("registered_name", "")).startswith("keras_hub>")):
        form, patterns = "keras-hub", KERAS_HUB_PATTERNS
    else:
        form, patterns = "huggingface", ALLOW_PATTERNS
        _check(name, config, listing, preset)
    with _errors(name, repo, revision, commit):
        folder = _snapshot(repo, commit, list(patterns), progress=progress)
    return Checkpoint(source=source, repo=repo, revision=revision, commit=commit, folder=folder,
                      preset=preset, format=form)


def _check(name, config, listing, preset):
    model_type = config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise HubError(f"{name}: model_type {model_type!r} (config.json) is not an architecture "
                       f"zoo has; it reads {', '.join(sorted(MODEL_TYPES))}")
    if preset is not None:
        size = PRETRAINED[preset]["size"]
        expected = PRESETS[size][0]
        if MODEL_TYPES[model_type] != expected:
            raise HubError(f"{name}: a {model_type} checkpoint, but preset {preset} is a "
                           f"{expected} ({size})")
    if listing is not None and not any(weights in listing for weights in _WEIGHTS):
        pickles = [file for file in _PICKLES if file in listing]
        if pickles:
            raise HubError(
                f"{name}: holds only {', '.join(pickles)} for weights{_files(listing)}; zoo "
                "reads safetensors only and never unpickles a download (a pickle can run code "
                "when loaded): convert it where you trust it, or pick a revision with "
                "model.safetensors")
        raise HubError(f"{name}: no model.safetensors or model.safetensors.index.json"
                       f"{_files(listing)}")


def _files(listing):
    if listing is None:
        return ""
    shown = sorted(listing)
    more = f", ... ({len(shown) - 12} more)" if len(shown) > 12 else ""
    return f" (its files: {', '.join(shown[:12])}{more})"


def _listing(repo, commit):
    """The repo's file names at `commit` from huggingface_hub's cached tree listing (written
    by snapshot_download), or None where it has none (no request is made)."""
    try:
        return {entry.path for entry in huggingface_hub.get_cached_repo_tree(repo, revision=commit)}
    except errors.CachedRepoTreeNotFoundError:
        return None


def _snapshot(repo, revision, patterns, progress):
    bars = functools.partial(_progress_bar, f"download {repo}") if progress else _no_bar
    # (The label is bound by position: huggingface_hub passes its own `desc`.)
    return huggingface_hub.snapshot_download(
        repo, revision=revision, allow_patterns=patterns, tqdm_class=bars, library_name="zoo")


def _progress_bar(label, *args, **kwargs):
    """One of huggingface_hub's progress bars, drawn by zoo.progress (on a terminal, or a line
    every 10 s in a log); snapshot_download takes any callable that makes tqdm-like bars. Of
    its three bars only the bytes written is shown (the files bar moves once a file, and
    "Downloading bytes" repeats the bytes for a plain HTTP download), and only after a second,
    so that a cached checkpoint shows none."""
    kwargs.pop("name", None)
    if not str(kwargs.get("desc", "")).startswith("Reconstructing"):
        return _no_bar(*args, **kwargs)
    bar = progress_lib.bar(*args, **{**kwargs, "desc": label, "delay": 1.0})
    # It keeps our label: huggingface_hub renames it "Reconstruction complete" at the end, which
    # would draw a cached checkpoint's empty bar.
    bar.set_description = lambda *args, **kwargs: None
    return bar


def _no_bar(*args, **kwargs):
    kwargs.pop("name", None)
    return progress_lib.bar(*args, **{**kwargs, "disable": True})


@contextlib.contextmanager
def _errors(name, repo, revision, commit=None):
    """huggingface_hub's exceptions, by class, as one HubError line naming the repo (`commit`:
    the one being downloaded, once known)."""
    try:
        yield
    except errors.GatedRepoError:
        if huggingface_hub.get_token() is None:
            raise HubError(f"{name}: a gated repo; accept its terms on its page and give a "
                           "token with access (HF_TOKEN, or `hf auth login`)") from None
        raise HubError(f"{name}: a gated repo that the token given (HF_TOKEN or `hf auth "
                       "login`) has no access to; accept its terms on its page") from None
    except errors.RepositoryNotFoundError:
        raise HubError(f"{name}: no such repo on {constants.ENDPOINT} (a private one needs a "
                       "token: HF_TOKEN or `hf auth login`)") from None
    except errors.RevisionNotFoundError:
        raise HubError(f"{name}: repo {repo} has no revision {revision!r} (a branch, tag or "
                       "commit hash)") from None
    except errors.RemoteEntryNotFoundError as error:
        file = str(error.response.url).partition("/resolve/")[2].partition("/")[2]
        raise HubError(f"{name}: file {file or '?'} not found in the repo") from None
    except errors.LocalEntryNotFoundError as error:
        folder = repo_folder_name(repo_id=repo, repo_type="model")
        where = os.path.join(constants.HF_HUB_CACHE, folder)
        why = ("HF_HUB_OFFLINE is set" if constants.is_offline_mode()
               else f"{constants.ENDPOINT} cannot be reached")
        partial = isinstance(error, errors.IncompleteSnapshotError) or os.path.isdir(
            os.path.join(where, "snapshots", str(commit)))
        what = "is only partly in the cache" if partial else "is not in the cache"
        raise HubError(
            f"{name}: {what} ({where}) and {why}; where the hub is reachable, run `"
            f"{download_command(repo, revision)}` and copy the {folder} folder it fills (in "
            f"that machine's HF_HOME, default ~/.cache/huggingface, under hub/) to "
            f"{constants.HF_HUB_CACHE}; or give a local folder holding config.json and "
            "model.safetensors") from None
    except errors.HFValidationError as error:
        raise HubError(f"{name}: not a repo id ({error})".replace("\n", " ")) from None
    except errors.HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "?"
        raise HubError(f"{name}: {constants.ENDPOINT} answered HTTP {status}") from None
    except httpx2.TransportError as error:
        raise HubError(f"{name}: the download from {constants.ENDPOINT} was cut off "
                       f"({type(error).__name__}); run it again: the cache keeps only complete "
                       "files") from None
