"""SavedModel export: one model per task, raw inputs in, final answers out, for TF Serving.

`write_version(task, model, base, version)` writes `base/<version>/`, TF Serving's versioned
layout (`zoo export`, `zoo_tasks.runs.export_run`, exports a run directory through it):

    base/3/saved_model.pb      the graph: tokenizer, packing, model, post-processing
    base/3/variables/          the weights
    base/3/zoo_export.json     what was exported: task, run, checkpoint, signatures

Each task describes its serving once (`task.serving(model, run_dir)`: a dict of `Signature`s,
at least `serving_default` on raw inputs and `serving_ids` on token ids or pixels); this module
turns the description into SavedModel signatures. Everything in them is TensorFlow or
tensorflow-text ops, which the stock TF Serving build links; no `tf.py_function`, so a process
that imports only tensorflow and tensorflow_text serves it.

The version is written to a temporary directory beside the versions (`.tmp-<version>-<pid>`,
a name TF Serving ignores: it loads only numeric directories) and renamed at the end, so an
interrupted export never leaves a half-written version; leftovers of dead exports are removed
by the next one. `quantize="int8"` serves the Dense layers in int8: `zoo.export.int8`, beside
this module; otherwise the float32 Dense layers are written with their weights as graph
constants, which oneDNN reorders once instead of at every request: `zoo.export.constant`.
"""

import contextlib
import dataclasses
import functools
import json
import os
import re

import keras
import tensorflow as tf

from zoo import files, hardware, lora
from zoo.config import PRECISIONS
from zoo.export import constant, dtype, int8
from zoo.layers import PatchEmbedding, PositionEmbedding
from zoo.storage import storage_operation

METADATA = "zoo_export.json"
DEFAULT, IDS = "serving_default", "serving_ids"
# Raw-input signatures pad each batch only to its longest sequence, whatever the run trained
# with (data.pad_to_multiple_of): a SavedModel's graph takes any length at no cost, and served
# batches of short texts are mostly padding otherwise (1.7x texts/s against a width of 16 on
# `zoo benchmark serving`'s texts, docs/measurements.md). The tasks whose outputs on real
# tokens do not depend on the padding use it.
PAD_TO_MULTIPLE_OF = 1
_TEMPORARY = re.compile(r"^\.tmp-(\d+)-(\d+)-")


@dataclasses.dataclass
class Signature:
    """One serving signature: named inputs, a function of them, and its named outputs.

    Args:
        inputs: {name: tf.TensorSpec}; the names are the signature's input names (an API).
        fn: `fn(**inputs) -> {name: tensor}` built from TF / tensorflow-text ops.
        outputs: the output names `fn` returns (checked at export).
        doc: one line for `zoo_export.json` and the README: what goes in and comes out.
    """

    inputs: dict
    fn: callable
    outputs: tuple
    doc: str = ""


def text(name):
    """The spec of a [batch] string input."""
    return tf.TensorSpec([None], tf.string, name=name)


def model_inputs(model):
    """{name: TensorSpec} of a Keras model's inputs, batch dimension free (for `serving_ids`)."""
    specs = {}
    for tensor in model.inputs:
        name = tensor.name.split(":")[0]
        specs[name] = tf.TensorSpec([None, *tensor.shape[1:]], tensor.dtype, name=name)
    return specs


def float32(outputs):
    """Float outputs as float32 (a mixed-precision model may give float16 or bfloat16)."""
    return {key: tf.cast(value, tf.float32) if value.dtype.is_floating else value
            for key, value in outputs.items()}


def ids_signature(model, outputs, doc="the model's outputs on packed token ids"):
    """`serving_ids`: the model itself on its input tensors; `outputs` names the kept ones."""
    def fn(**inputs):
        result = model(inputs, training=False)
        if not isinstance(result, dict):
            result = {outputs[0]: result}
        return float32({key: result[key] for key in outputs})

    return Signature(model_inputs(model), fn, tuple(outputs), doc)


def next_version(base):
    """One more than the highest numeric version directory under `base` (1 if none)."""
    versions = [int(name) for name in files.listdir(base) if name.isdigit()] \
        if files.isdir(base) else []
    return max(versions, default=0) + 1


def _remove_dead_leftovers(base):
    for name in files.listdir(base):
        match = _TEMPORARY.match(name)
        if not match:
            continue
        pid = int(match.group(2))
        try:
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
        if not alive:
            files.remove_quietly(os.path.join(base, name))


def build_archive(task, model, run_dir):
    """A keras ExportArchive with the task's signatures, and the signatures' descriptions.

    The SavedModel holds the variables the signatures read, each once. The model is not
    `track`ed: with Keras 3.15.1 on TensorFlow, ExportArchive then stores every weight twice
    (the `keras.Variable`s that `track` lists and the `tf.Variable`s the traced functions
    capture: two objects TensorFlow does not unify, keras-team/keras#23553, open), doubling
    the export and the memory of every server that loads it. Re-check on a Keras upgrade:
    tests/test_export.py counts the stored values. An int8 export (`zoo.export.int8`) thus holds
    its int8 kernels and not the float32 ones they replace."""

    signatures = task.serving(model, run_dir)
    missing = {DEFAULT, IDS} - set(signatures)
    if missing:
        raise ValueError(f"{type(task).__name__}.serving: no {', '.join(sorted(missing))}")
    archive = keras.export.ExportArchive()
    if task.tokenizer is not None:
        archive.track(task.tokenizer)
    described = {}
    for name, signature in signatures.items():
        archive.add_endpoint(name, _endpoint(name, signature),
                             input_signature=list(signature.inputs.values()))
        described[name] = {
            "inputs": {key: {"dtype": spec.dtype.name, "shape": _shape(spec)}
                       for key, spec in signature.inputs.items()},
            "outputs": list(signature.outputs), "doc": signature.doc}
    return archive, described


def write_out(archive, path):
    """`archive.write_out(path)`, each signature traced once instead of twice.

    Why: Keras (3.15.1, `_filter_and_track_resources`) traces every endpoint to list the
    variables it reads, outside TensorFlow's save context, and `tf.saved_model.save` then
    traces each again, because TensorFlow (2.21) keys a trace on whether it is under a save
    context (function_context's `variable_policy`): an export built its signatures, the
    tokenizer's graph and the model's, twice. Keras's step runs here under the save options
    `save` then uses, so `save` finds the traces made. tests/test_export.py counts the traces.
    """
    from tensorflow.python.saved_model import save_context

    options = tf.saved_model.SaveOptions()
    list_resources = archive._filter_and_track_resources

    def under_save_options():
        with save_context.save_context(options):
            list_resources()

    archive._filter_and_track_resources = under_save_options
    archive.write_out(path, options=options, verbose=False)


def _shape(spec):
    return None if spec.shape.rank is None else [d if d is not None else -1
                                                 for d in spec.shape.as_list()]


def _endpoint(name, signature):
    names = list(signature.inputs)

    batched = [key for key, spec in signature.inputs.items() if spec.shape.rank]

    def endpoint(*args):
        inputs = dict(zip(names, args))
        # Inputs with a batch axis must agree on it: TF Serving's row format guarantees that,
        # the columnar format and gRPC do not.
        checks = [tf.debugging.assert_equal(
            tf.shape(inputs[key])[0], tf.shape(inputs[batched[0]])[0],
            message=f"inputs {batched[0]} and {key} differ in batch size")
            for key in batched[1:]]
        with tf.control_dependencies(checks):
            inputs = {key: tf.identity(value) for key, value in inputs.items()}
        outputs = signature.fn(**inputs)
        if set(outputs) != set(signature.outputs):
            raise ValueError(f"signature {name}: outputs {sorted(outputs)}, described as "
                             f"{sorted(signature.outputs)}")
        return outputs

    return endpoint


def with_dtype_policy(model, policy):
    """A copy of `model` computing under the Keras dtype policy `policy` (same weights).

    The policy of every layer in the saved configuration is replaced and the model rebuilt
    with `policy` as the global policy too, so that layers built without an explicit dtype
    (the task heads) follow it as they do in a run trained under it; the weights are then
    copied, cast to each new variable's dtype. `policy` is a name ("mixed_bfloat16": variables
    stay float32) or a `keras.dtype_policies.DTypePolicyMap` (see `with_bfloat16_weights`).
    """

    policy = keras.dtype_policies.get(policy)
    serialized = keras.dtype_policies.serialize(policy)

    def replace(node):
        if isinstance(node, dict):
            if node.get("class_name") in ("DTypePolicy", "DTypePolicyMap") and \
                    node.get("module") == "keras":
                return serialized
            return {key: replace(value) for key, value in node.items()}
        if isinstance(node, list):
            return [replace(value) for value in node]
        return node

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        clone = keras.saving.deserialize_keras_object(
            replace(keras.saving.serialize_keras_object(model)))
    finally:
        keras.config.set_dtype_policy(previous)
    for source, target in zip(model.weights, clone.weights, strict=True):
        if not _same_weight(source, target):
            raise ValueError(f"with_dtype_policy: the rebuilt model's weight {target.path} "
                             f"{tuple(target.shape)} stands where {model.name} has "
                             f"{source.path} {tuple(source.shape)}")
        target.assign(keras.ops.cast(source, target.dtype))
    return clone


def _same_weight(source, target):
    """Whether `target` of a rebuilt model is the weight `source`: the same shape and path,
    except for the `_N` that Keras appends to the inner layers of a `Bidirectional`
    ("forward_lstm", "backward_lstm") whenever one is built again in the same process
    (`bilstm/forward_lstm_1/...` rebuilt as `bilstm/forward_lstm_3/...`)."""
    import re

    def name(part):
        return re.sub(r"_\d+$", "", part) if part.startswith(("forward_", "backward_")) else part

    ours, theirs = source.path.split("/"), target.path.split("/")
    return (tuple(source.shape) == tuple(target.shape) and len(ours) == len(theirs) and
            all(name(a) == name(b) for a, b in zip(ours, theirs)))


def _read_in_compute_dtype(layer):
    """Whether every use of the layer's weights is after a cast to its compute dtype.

    Under mixed_bfloat16 these layers cast their float32 weights to bfloat16 on every call
    (Dense and Conv2D kernels and biases, embedding tables, the ViT class token and positions)
    and compute in bfloat16; LayerNormalization computes in float32 and is not one of them.
    """

    return isinstance(layer, (keras.layers.Dense, keras.layers.Conv2D, keras.layers.Embedding,
                              PatchEmbedding, PositionEmbedding))


def with_bfloat16_weights(model):
    """A copy of `model` for mixed_bfloat16 inference, its dense and embedding weights bfloat16.

    Under mixed_bfloat16 every dense kernel and embedding table is stored in float32 and cast
    to bfloat16 on every call (on BERT-base, 147 Cast ops a forward pass). Rounded to bfloat16
    once, here, a weight has the value that cast gives it, so the outputs are the same bit for
    bit (tests/test_backbones.py checks BERT, GPT-1 and ViT, eager, graph and XLA) without the
    casts, and these weights take half the memory. The layers that only read their weights
    after that cast (`_read_in_compute_dtype`) get the policy "bfloat16" through a
    `DTypePolicyMap` over their paths; every other layer keeps "mixed_bfloat16", LayerNorm
    (which computes in float32) and the masked-LM output bias keep float32 weights. For
    inference only: training needs float32 master weights. `export` serves every
    mixed_bfloat16 model this way.

    Examples:
        >>> import zoo
        >>> model = zoo.models.create("bert_tiny", num_layers=1)
        >>> served = with_bfloat16_weights(model)
        >>> served.get_layer("token_embedding").embeddings.dtype, served.compute_dtype
        ('bfloat16', 'bfloat16')
        >>> served.get_layer("embeddings_norm").gamma.dtype
        'float32'
    """

    stored = {layer.path: keras.dtype_policies.DTypePolicy("bfloat16")
              for layer in model._flatten_layers() if _read_in_compute_dtype(layer)}
    return with_dtype_policy(model, keras.dtype_policies.DTypePolicyMap("mixed_bfloat16",
                                                                        stored))


def new_version(base, version=None):
    """The version `write_version` will write under `base`, checked: `version`, or one more
    than the highest there. Creates `base` and removes leftovers of dead exports."""

    if keras.backend.backend() != "tensorflow":
        raise ValueError(f"export builds a TensorFlow graph: run it with KERAS_BACKEND="
                         f"tensorflow (found {keras.backend.backend()!r}); runs trained on "
                         "any backend export through their .keras file")
    with storage_operation("writing the export", base):  # a read-only or vanished BASE
        files.makedirs(base)
        _remove_dead_leftovers(base)
    version = next_version(base) if version is None else int(version)
    if version < 1:
        raise ValueError(f"--version {version}: TF Serving versions are positive integers")
    target = os.path.join(base, str(version))
    if files.exists(target):
        raise FileExistsError(f"{target} exists; versions are never overwritten (pass another "
                              "--version, or leave it out for the next one)")
    return version


def write_version(task, model, base, version, policy, mixed_precision=None, run_dir=None,
                  checkpoint=None, progress=print, quantize=None, source=None):
    """Write `model` with `task`'s signatures to `base/<version>/`; returns the path.

    `policy` is the dtype policy the model was trained under; `mixed_precision` another one
    to serve under ("float32", "mixed_bfloat16", "mixed_float16"), or "auto": the faster of
    float32 and mixed_bfloat16 on this machine, timed on the model's forward pass
    (`zoo.export.dtype`; the choice and timings go to `zoo_export.json` as `dtype_auto`). A
    model served under mixed_bfloat16 is written with its dense and embedding weights in
    bfloat16 (`with_bfloat16_weights`: the same answers); asked for on a CPU where it is
    slower (`dtype.bfloat16_fast`: no AMX on Intel), it is served with a warning through
    `progress`. `run_dir` is what the task's serving may read besides the model (SQuAD
    v2.0's null threshold); it and `checkpoint` are recorded in `zoo_export.json`.
    `quantize="int8"` serves every Dense layer in int8 (`zoo.export.int8`: int8 weights,
    activations quantized per call, one fused oneDNN kernel a layer; computed under float32
    otherwise), and only the int8 kernels are saved. Without it, the float32 Dense layers'
    weights are graph constants in saved_model.pb, not variables (`zoo.export.constant`: the
    same answers, oneDNN's weight reorder done once). `zoo_tasks.runs.export_run`
    (`zoo export`) calls this with a run's task and model. A model with LoRA layers
    (`train.lora_rank`) is exported merged (`zoo.lora.merged`): no LoRA variables, the same
    signatures; a run's own .keras files are merged already. `source`: where a model loaded
    by name came from (`zoo.loading.Source.origin`: repo, revision, commit), recorded as
    `source` in `zoo_export.json` (None for a run).
    """
    model = lora.merged(model)
    target = os.path.join(base, str(version))
    if quantize not in (None, "int8"):
        raise ValueError(f"--quantize {quantize!r}: only int8")
    if quantize and mixed_precision not in (None, "float32"):
        raise ValueError(f"--quantize {quantize} computes float32 around its int8 products; "
                         f"it does not combine with --mixed-precision {mixed_precision}")
    if quantize and policy != "float32":
        progress(f"computing under float32 around the int8 products (the run trained under "
                 f"{policy})")
        mixed_precision = "float32"
    auto = None
    if mixed_precision == dtype.AUTO:  # the faster of float32 and bfloat16 on this machine
        forms = {dtype.FLOAT32: model if policy == "float32" else
                 with_dtype_policy(model, "float32"),
                 dtype.BFLOAT16: with_bfloat16_weights(model)}
        policy, auto = dtype.pick(forms, min(dtype.LENGTH, task.config.data.sequence_length),
                                  progress)
        model, mixed_precision = forms[policy], None
    if mixed_precision and mixed_precision != policy:
        if mixed_precision not in PRECISIONS:
            raise ValueError(f"--mixed-precision {mixed_precision!r}: one of "
                             f"{', '.join(PRECISIONS)}")
        progress(f"computing under {mixed_precision} (the run trained under {policy})")
        if mixed_precision != "mixed_bfloat16":
            model = with_dtype_policy(model, mixed_precision)
        policy = mixed_precision
    if policy == "mixed_bfloat16" and auto is None:
        warning = dtype.bfloat16_warning(hardware.cpu())
        if warning:
            progress(warning)
        progress("storing the dense kernels and embedding tables in bfloat16")
        model = with_bfloat16_weights(model)
    # A full disk, a read-only or vanished BASE: one StorageError naming the export.
    writing = functools.partial(storage_operation, "writing the export", target)
    with writing():
        staging = files.scratch_directory(base, f".tmp-{version}-{os.getpid()}-")
        if not files.is_remote(staging):
            os.chmod(staging, 0o755)  # mkdtemp's 0700 would outlive the rename
    try:
        with contextlib.ExitStack() as stack:
            if quantize:
                weights = stack.enter_context(int8.serving_form(model))
                progress(f"quantizing {len(weights.layers) + 3 * len(weights.heads)} dense "
                         f"layers to int8 ({len(weights.heads)} attentions' query, key and "
                         f"value as one product each; {weights.norms} LayerNorms in oneDNN's "
                         f"kernel)")
            else:  # float32 Dense layers: their weights as graph constants (zoo.export.constant)
                count = stack.enter_context(constant.dense_constants(model, progress))
                if count:
                    progress(f"writing {count} float32 dense layers' weights into the graph "
                             "(reordered once by oneDNN, not at every request)")
            progress(f"tracing the {task.name} signatures")
            archive, described = build_archive(task, model, run_dir)
            progress(f"writing {target}")
            with writing():
                write_out(archive, staging)  # traces the signatures
        metadata = {"task": task.name,
                    "run_dir": run_dir and files.absolute(run_dir),
                    "checkpoint": checkpoint, "source": source, "version": version,
                    "dtype_policy": policy, "dtype_auto": auto, "quantize": quantize,
                    "signatures": described}
        with writing():
            with files.open(os.path.join(staging, METADATA), "w", encoding="utf-8") as file:
                json.dump(metadata, file, indent=1)
            files.move_directory(staging, target, last=("saved_model.pb",))
    except BaseException:
        files.remove_quietly(staging)
        raise
    return target


def serving_command(base, name):
    """The `docker run tensorflow/serving` command serving the versions under `base`."""
    base = files.absolute(base)
    return (f"docker run --rm -p 8501:8501 -v {base}:/models/{name} -e MODEL_NAME={name} "
            "tensorflow/serving")


__all__ = ["Signature", "ids_signature", "model_inputs", "new_version", "next_version",
           "serving_command", "text", "with_bfloat16_weights", "with_dtype_policy",
           "write_version"]
