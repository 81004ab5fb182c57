"""Every signature of every task family's export batches: each input's first dimension is free
(-1), as TF Serving's batching (`--enable_batching`) needs to stack requests along it.

`assert_every_input_batches(path, family)` reads the shapes from the SavedModel's own signature
definitions (saved_model.pb, what TF Serving reads) and from zoo_export.json, which must say
the same. The export test files call it on the exports their fixtures already build (written by
`zoo.export.write_version` as `zoo export` does), one family or more each, so that no family is
exported a second time for it (docs/measurements.md, "The test suite"):

    classification         tests/test_export.py (mrpc_export)
    text_classification    tests/test_text_classification.py (trained)
    span_qa                tests/test_span_qa_export.py (exports)
    multiple_choice        tests/test_multiple_choice_export.py (GPT-1 style), and below
                           (BERT style, a random one-layer model: CI trains no BERT one)
    tagging                tests/test_tagging_export.py (fine_tuned)
    image_classification   tests/test_image_classification_export.py (exported)
    sentence_embedding     tests/test_sentence_embedding_export.py
    masked_lm, causal_lm   tests/test_pretraining_export.py (bert, gpt)
    causal_lm              tests/test_generation_export.py (lm)

The inputs that take "a scalar or one value a row" (the causal LM's generation options,
unknown rank) cannot batch: they are listed in UNBATCHED, and the check fails if another input
joins them or one of them leaves. The test below checks that the check fails on a SavedModel
whose signature has a fixed first dimension.
"""

import json
import os

import pytest

from tests.test_training import TINY
from zoo import config as config_lib
from zoo import export
from zoo.data.samples import LAYOUT

FAMILIES = ("classification", "text_classification", "span_qa", "multiple_choice", "tagging",
            "image_classification", "sentence_embedding", "masked_lm", "causal_lm")

# (family, signature, input): the causal LM's generation options, "a scalar or one value a
# row" (zoo_tasks/serving/pretraining.py): a tensor of unknown rank, which TF Serving's batching
# cannot stack. Reported on issue #53; a client of a batching server sends them as rows.
UNBATCHED = {("causal_lm", signature, name)
             for signature, names in (
                 ("serving_default", ("max_new_tokens",)),
                 ("serving_sample", ("max_new_tokens", "top_k", "seed")),
                 ("serving_generate", ("max_new_tokens", "do_sample", "temperature", "top_k",
                                       "top_p", "seed", "stop")),
                 ("serving_generate_full", ("max_new_tokens", "do_sample", "temperature",
                                            "top_k", "top_p", "seed", "stop", "num_beams",
                                            "length_penalty", "repetition_penalty",
                                            "no_repeat_ngram_size", "min_new_tokens",
                                            "stop_token_ids")))
             for name in names}


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


def assert_every_input_batches(path, family):
    """Every input of every signature of the export at `path` (a version folder) has a free
    first dimension, but for the family's UNBATCHED inputs, and zoo_export.json says the shapes
    saved_model.pb holds."""
    assert family in FAMILIES, family
    in_graph = _saved_model_inputs(path)
    with open(os.path.join(path, export.METADATA), encoding="utf-8") as file:
        described = json.load(file)["signatures"]
    assert set(in_graph) == set(described), (family, sorted(in_graph), sorted(described))
    assert {"serving_default", "serving_ids"} <= set(in_graph), (family, sorted(in_graph))
    unbatched = set()
    for signature, inputs in in_graph.items():
        said = {key: spec["shape"] for key, spec in described[signature]["inputs"].items()}
        assert inputs == said, (family, signature, inputs, said)
        assert inputs, (family, signature)
        for name, shape in inputs.items():
            if not shape or shape[0] != -1:
                unbatched.add((family, signature, name))
    expected = {key for key in UNBATCHED if key[0] == family}
    assert unbatched == expected, sorted(unbatched ^ expected)


def _write_fake_export(path, shape):
    """saved_model.pb and zoo_export.json of one signature whose input has `shape`."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    graph = saved.meta_graphs.add()
    for name in ("serving_default", "serving_ids"):
        tensor = graph.signature_def[name].inputs["text"]
        tensor.name = f"{name}_text:0"
        for size in shape:
            tensor.tensor_shape.dim.add().size = size
    os.makedirs(path)
    with open(os.path.join(path, "saved_model.pb"), "wb") as file:
        file.write(saved.SerializeToString())
    with open(os.path.join(path, export.METADATA), "w", encoding="utf-8") as file:
        json.dump({"signatures": {name: {"inputs": {"text": {"shape": shape}}}
                                  for name in ("serving_default", "serving_ids")}}, file)


def test_the_check_fails_on_a_fixed_first_dimension_or_a_scalar(tmp_path):
    _write_fake_export(tmp_path / "free", [-1, 8])
    assert_every_input_batches(str(tmp_path / "free"), "classification")
    _write_fake_export(tmp_path / "fixed", [4, 8])
    with pytest.raises(AssertionError, match="serving_default"):
        assert_every_input_batches(str(tmp_path / "fixed"), "classification")
    _write_fake_export(tmp_path / "scalar", [])
    with pytest.raises(AssertionError, match="serving_default"):
        assert_every_input_batches(str(tmp_path / "scalar"), "classification")
    # The causal LM's generation options may not batch; its other inputs must.
    with pytest.raises(AssertionError, match="serving_ids"):
        assert_every_input_batches(str(tmp_path / "fixed"), "causal_lm")


def test_a_bert_multiple_choice_export_batches(sample_data, tmp_path):
    """The multiple-choice family in BERT style (segment ids besides GPT-1's inputs), which
    no export test of CI trains: a random one-layer model (the shapes of a signature do not
    depend on the weights or the depth), exported as `zoo export` does."""
    import zoo_tasks

    config = config_lib.resolve("bert/swag", TINY["bert"] + [
        f"model.vocabulary={sample_data['wordpiece']}", "data.sequence_length=32",
        "model.backbone.num_layers=1",
        f"data.dir={os.path.dirname(sample_data['root'] / LAYOUT['swag']['train'])}"])
    task = zoo_tasks.create(config.task, config, check_data=False)
    base = str(tmp_path / "export")
    path = export.write_version(task, task.build_model(), base, export.new_version(base),
                                "float32", progress=lambda line: None)
    assert_every_input_batches(path, "multiple_choice")


def test_every_family_is_checked_by_an_export_test():
    """The check runs inside the export tests (the module docstring lists where): a family
    whose call is removed would silently lose it, so each must still be called somewhere."""
    import re

    here = os.path.dirname(os.path.abspath(__file__))
    called = set()
    for name in os.listdir(here):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(here, name), encoding="utf-8") as file:
                called |= set(re.findall(r'assert_every_input_batches\([^)]*"(\w+)"\)',
                                         file.read()))
    assert called >= set(FAMILIES), sorted(set(FAMILIES) - called)
