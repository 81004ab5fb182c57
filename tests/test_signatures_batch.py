"""Every signature of every task family's export batches: each input's first dimension is free
(-1), as TF Serving's batching (`--enable_batching`) needs to stack requests along it.

One random tiny model a family (no training: the shapes of a signature do not depend on the
weights), exported with `zoo.export.write_version` as `zoo export` does; the shapes are read
from the SavedModel's own signature definitions (saved_model.pb, what TF Serving reads) and
from zoo_export.json, which must say the same. The inputs that take "a scalar or one value a
row" (the causal LM's generation options, unknown rank) cannot batch: they are listed in
UNBATCHED, and the test fails if another input joins them or one of them leaves.
"""

import json
import os

import pytest

from tests.test_image_classification import TINY_VIT
from tests.test_training import TINY
from zoo import config as config_lib
from zoo import export
from zoo.data.samples import LAYOUT

# (experiment, the data it reads: a LAYOUT task whose folder is data.dir, or "pairs" / "table"
# for the own-data families' files written below).
FAMILIES = {
    "classification": ("bert/glue_mrpc", "glue/mrpc"),
    "text_classification": ("bert/text_classification", "table"),
    "span_qa": ("bert/squad_v2", "squad_v2"),
    "multiple_choice": ("bert/swag", "swag"),
    "tagging": ("bert/conll2003", "conll2003"),
    "image_classification": ("vit/image_folder", "image_folder"),
    "sentence_embedding": ("bert/sentence_embedding", "pairs"),
    "masked_lm": ("bert/pretrain", "corpus"),
    "causal_lm": ("gpt1/pretrain", "corpus"),
}

# (family, signature, input): the causal LM's generation options, "a scalar or one value a
# row" (zoo_tasks/serving/pretraining.py): a tensor of unknown rank, which TF Serving's batching
# cannot stack. Reported on issue #53; a client of a batching server sends them as rows.
UNBATCHED = {("causal_lm", signature, name)
             for signature, names in (
                 ("serving_default", ("max_new_tokens",)),
                 ("serving_sample", ("max_new_tokens", "top_k", "seed")),
                 ("serving_generate", ("max_new_tokens", "do_sample", "temperature", "top_k",
                                       "top_p", "seed", "stop")))
             for name in names}


def _overrides(family, data, sample_data, tmp_path):
    # One layer: the signatures' shapes do not depend on the depth, their tracing time does.
    if family == "image_classification":
        out = TINY_VIT + ["model.backbone.num_layers=1"]
    else:
        style = "gpt1" if family == "causal_lm" else "bert"
        vocabulary = sample_data["bpe" if style == "gpt1" else "wordpiece"]
        out = TINY[style] + [f"model.vocabulary={vocabulary}", "data.sequence_length=32",
                             "model.backbone.num_layers=1"]
    if family == "masked_lm":  # its task reads the shards' metadata
        from zoo.data.pretraining import write_pretraining_data

        write_pretraining_data([str(sample_data["root"] / "corpus" / "corpus.txt")],
                               sample_data["wordpiece"], str(tmp_path / "shards"),
                               max_sequence_lengths=(32,), shards=1, dupe_factor=1)
        return out + [f"data.dir={tmp_path / 'shards'}", "data.phases=[]"]
    if data == "corpus":
        return out + [f"data.dir={sample_data['root'] / 'corpus'}"]
    if data in ("pairs", "table"):
        path = tmp_path / f"{data}.csv"
        path.write_text("anchor,positive\na good film,a fine movie\nrain today,wet weather\n"
                        if data == "pairs" else "text,label\na good film,pos\nawful,neg\n",
                        encoding="utf-8")
        return out + [f"data.train_file={path}", f"data.dev_file={path}"]
    return out + [f"data.dir={os.path.dirname(sample_data['root'] / LAYOUT[data]['train'])}"]


def _saved_model_inputs(path):
    """{signature: {input: shape}} from saved_model.pb (None: unknown rank)."""
    from tensorflow.core.protobuf import saved_model_pb2

    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved = saved_model_pb2.SavedModel.FromString(file.read())
    graph, = saved.meta_graphs
    return {name: {key: None if tensor.tensor_shape.unknown_rank
                   else [d.size for d in tensor.tensor_shape.dim]
                   for key, tensor in signature.inputs.items()}
            for name, signature in graph.signature_def.items() if not name.startswith("__")}


@pytest.fixture(scope="module")
def exported(sample_data, tmp_path_factory):
    """{family: export path} of a random tiny model a family."""
    import zoo_tasks

    paths = {}
    for family, (experiment, data) in FAMILIES.items():
        tmp = tmp_path_factory.mktemp(family)
        config = config_lib.resolve(experiment, _overrides(family, data, sample_data, tmp))
        task = zoo_tasks.create(config.task, config, check_data=False)
        base = str(tmp / "export")
        paths[family] = export.write_version(task, task.build_model(), base,
                                             export.new_version(base), "float32",
                                             progress=lambda line: None)
    return paths


def test_every_input_of_every_signature_has_a_free_first_dimension(exported):
    unbatched, seen = set(), set()
    for family, path in exported.items():
        in_graph = _saved_model_inputs(path)
        with open(os.path.join(path, export.METADATA), encoding="utf-8") as file:
            described = json.load(file)["signatures"]
        assert set(in_graph) == set(described), (family, sorted(in_graph), sorted(described))
        assert {"serving_default", "serving_ids"} <= set(in_graph), (family, sorted(in_graph))
        for signature, inputs in in_graph.items():
            said = {key: spec["shape"] for key, spec in described[signature]["inputs"].items()}
            assert inputs == said, (family, signature, inputs, said)
            for name, shape in inputs.items():
                seen.add((family, signature, name))
                if not shape or shape[0] != -1:
                    unbatched.add((family, signature, name))
    assert len(seen) > 30, sorted(seen)  # every family, both signatures at least
    assert unbatched == UNBATCHED, sorted(unbatched ^ UNBATCHED)
