"""The causal LM export generates with the key/value cache (issue 52): `serving_generate` (and
the cached `serving_default`) in a fresh process that imports only tensorflow and
tensorflow_text, against the Python generator `zoo.generation.Generator` token for token,
and the greedy signatures against a loop of full forward passes without any cache.

The model is a tiny GPT-1 with random weights drawn at a larger scale than its initializer's,
so that its greedy and sampled texts vary from token to token.
"""

import json
import os

import numpy as np
import pytest

from tests.harness import saved_model_signatures, serve_fresh
from tests.test_signatures_batch import assert_every_input_batches
from tests.test_training import TINY

PROMPTS = ["the film is", "a movie about",
           "it was the best of times , it was the worst of times , it was the age of wisdom"]
COUNTS = [8, 3, 12]
# Sampling options per row: temperature, top-k, top-p (float32-exact, as the export reads
# them), seed.
SAMPLED = {"do_sample": 1, "temperature": [0.7, 1.0, 1.5], "top_k": [0, 20, 5],
           "top_p": [0.75, 1.0, 0.875], "seed": [11, 12, 13], "max_new_tokens": 10}
STOPS = [["e", ""], ["", ""], ["zzzz", " "]]


def request(prompts, **options):
    """A serving_generate request: greedy, 8 new tokens, no stop strings unless given."""
    inputs = {"prompt": prompts, "max_new_tokens": 8, "do_sample": 0, "temperature": 1.0,
              "top_k": 0, "top_p": 1.0, "seed": 0, "stop": [""]}
    return "serving_generate", dict(inputs, **options)


def row(options, i):
    """Row i's options of a request (a list is per row, anything else the batch's)."""
    return {k: v[i] if isinstance(v, list) and k != "stop" else v for k, v in options.items()}


REQUESTS = {
    "greedy": request(PROMPTS, max_new_tokens=COUNTS),
    "default": ("serving_default", {"prompt": PROMPTS, "max_new_tokens": COUNTS}),
    "sampled": request(PROMPTS, **SAMPLED),
    **{f"alone{i}": request(PROMPTS[i:i + 1], **row(SAMPLED, i)) for i in range(3)},
    "scalar_seed": request(PROMPTS, **dict(SAMPLED, seed=11)),  # rows get 11, 12, 13
    "other_seed": request(PROMPTS, **dict(SAMPLED, seed=[21, 22, 23])),
    "mixed": request(PROMPTS, **dict(SAMPLED, do_sample=[0, 1, 0])),
    "long": request(PROMPTS, **dict(SAMPLED, max_new_tokens=40)),
    "stopped": request(PROMPTS, **dict(SAMPLED, max_new_tokens=40, stop=STOPS)),
    "stop_all": request(PROMPTS, max_new_tokens=40, stop=["a", "o"]),
    "empty": request(["", "the film is"], max_new_tokens=3),
    "past_positions": request(["the film is"], max_new_tokens=1000),
    "nothing": request(np.zeros([0], object)),
    "greedy_temperature_0": request(PROMPTS[:1], temperature=0.0),
    "temperature_0": request(PROMPTS[:1], do_sample=1, temperature=0.0),
    "top_p_0": request(PROMPTS[:1], do_sample=1, top_p=0.0),
    "top_p_above_1": request(PROMPTS[:1], do_sample=1, top_p=1.5),
    "top_k_negative": request(PROMPTS[:1], do_sample=1, top_k=-1),
    "seeds_for_2_of_3": request(PROMPTS, do_sample=1, seed=[1, 2]),
}
# serving_generate_full: serving_generate's inputs plus the beams, penalties and minimum length.
STOP_IDS = list(range(0, 400, 3))  # stop tokens often reached, for min_new_tokens
FULL = {"beams": dict(num_beams=3, length_penalty=0.5, max_new_tokens=9),
        "penalties": dict(repetition_penalty=1.8, no_repeat_ngram_size=2, max_new_tokens=14),
        "min_length": dict(min_new_tokens=4, stop_token_ids=STOP_IDS, max_new_tokens=10)}


def request_full(prompts, **options):
    """A serving_generate_full request: serving_generate's greedy request, nothing else on."""
    inputs = dict(request(prompts)[1], num_beams=1, length_penalty=1.0, repetition_penalty=1.0,
                  no_repeat_ngram_size=0, min_new_tokens=0, stop_token_ids=[-1])
    return "serving_generate_full", dict(inputs, **options)


REQUESTS.update({f"full_{name}": request_full(PROMPTS, **options)
                 for name, options in FULL.items()})


def _export(experiment, overrides, tmp, requests):
    """(task, model, export path, {request name: answer}) of a random tiny causal LM."""
    import zoo_tasks
    from zoo import config as config_lib
    from zoo import export

    config = config_lib.resolve(experiment, overrides + ["data.sequence_length=32"])
    task = zoo_tasks.create(config.task, config, check_data=False)
    model = task.build_model()
    rng = np.random.default_rng(0)
    for weight in model.weights:
        if not weight.path.endswith(("gamma", "beta")):
            weight.assign(rng.normal(0.0, 0.2, weight.shape).astype("float32"))
    base = str(tmp / "lm")
    path = export.write_version(task, model, base, export.new_version(base), "float32",
                                progress=lambda line: None)
    answers = serve_fresh(path, list(requests.values()), show=True)
    return task, model, path, dict(zip(requests, answers))


@pytest.fixture(scope="module")
def lm(sample_data, tmp_path_factory):
    """A random tiny GPT-1 language model, its export and the answers to REQUESTS."""
    return _export("gpt1/pretrain", TINY["gpt1"] + [
        f"model.vocabulary={sample_data['bpe']}", f"data.dir={sample_data['root'] / 'corpus'}"],
        tmp_path_factory.mktemp("generation_export"), REQUESTS)


def _python(task, model):
    """The Python generator of a model: (prompt, **serving_generate's options) -> (text, new
    tokens)."""
    from zoo.generation import Generator

    generator = Generator(model, task.tokenizer)

    def generate(prompt, max_new_tokens=8, do_sample=0, temperature=1.0, top_k=0, top_p=1.0,
                 seed=0, stop=()):
        sampler = dict(do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p,
                       seed=seed) if do_sample else {}
        text = generator.generate(prompt, max_new_tokens=max_new_tokens,
                                  stop_strings=[s for s in stop if s], **sampler)
        return text, generator.last_stats["new_tokens"]

    return generate


@pytest.fixture(scope="module")
def python(lm):
    return _python(*lm[:2])


def texts(answer):
    return [c.decode() for c in answer["completion"]]


def test_greedy_equals_a_loop_of_full_forward_passes(lm):
    """The independent reference: the Keras model on each prompt's whole prefix at every step
    (no cache, no padding), numpy argmax, rows one at a time."""
    from tests.test_pretraining_export import greedy

    task, model, _, served = lm
    expected = [greedy(task, model, p, n) for p, n in zip(PROMPTS, COUNTS)]
    assert len(set(expected)) == 3 and all(expected)
    assert texts(served["greedy"]) == expected
    assert texts(served["default"]) == expected
    assert served["greedy"]["new_tokens"].tolist() == COUNTS


def test_greedy_and_seeded_sampling_equal_the_python_generator(lm, python):
    _, _, _, served = lm
    for name, options in (("greedy", dict(max_new_tokens=COUNTS)), ("sampled", SAMPLED),
                          ("mixed", dict(SAMPLED, do_sample=[0, 1, 0])),
                          ("long", dict(SAMPLED, max_new_tokens=40))):
        for i, prompt in enumerate(PROMPTS):  # each row against the prompt alone
            text, count = python(prompt, **row(options, i))
            assert texts(served[name])[i] == text, (name, i)
            assert served[name]["new_tokens"][i] == count, (name, i)
    # top-k, top-p and temperature change the draw: the same seeds, other texts.
    assert texts(served["sampled"]) != texts(served["greedy"])
    assert texts(served["mixed"])[1] == texts(served["sampled"])[1]
    assert texts(served["mixed"])[0] != texts(served["sampled"])[0]


def test_a_seed_reproduces_and_another_changes_the_text(lm):
    _, _, _, served = lm
    sampled = texts(served["sampled"])
    assert [texts(served[f"alone{i}"])[0] for i in range(3)] == sampled  # rows alone
    assert texts(served["scalar_seed"]) == sampled  # seed S: row r draws with S + r
    other = texts(served["other_seed"])
    assert all(a != b for a, b in zip(other, sampled))
    assert texts(served["long"])[0].startswith(sampled[0])  # max_new_tokens cuts, not reseeds


def test_stop_strings_cut_the_row_after_the_token_that_completes_them(lm, python):
    _, _, _, served = lm
    full, stopped = texts(served["long"]), texts(served["stopped"])
    counts = served["stopped"]["new_tokens"].tolist()
    for i, prompt in enumerate(PROMPTS):
        text, count = python(prompt, **dict(row(SAMPLED, i), max_new_tokens=40,
                                            stop=STOPS[i]))
        assert (stopped[i], counts[i]) == (text, count), i
    # Row 0 stops at its first "e", row 1 (only "") runs on, row 2 at its first space.
    assert "e" in stopped[0] and counts[0] < 40 and full[0].startswith(stopped[0])
    assert stopped[1] == full[1] and counts[1] == 40
    assert " " in stopped[2] and counts[2] < 40 and full[2].startswith(stopped[2])
    greedy_stops = served["stop_all"]
    for i, prompt in enumerate(PROMPTS):
        assert (texts(greedy_stops)[i], greedy_stops["new_tokens"][i]) == python(
            prompt, max_new_tokens=40, stop=["a", "o"])


def test_empty_prompts_long_requests_and_bad_options(lm, python):
    task, model, path, served = lm
    assert texts(served["empty"]) == ["", python("the film is", max_new_tokens=3)[0]]
    assert served["empty"]["new_tokens"].tolist() == [0, 3]
    # Past the 128 positions: cut to the positions left (Python refuses it).
    assert served["past_positions"]["new_tokens"].tolist() == [125]
    assert texts(served["past_positions"]) == [python("the film is", max_new_tokens=125)[0]]
    assert served["nothing"]["completion"].shape == served["nothing"]["new_tokens"].shape == (0,)
    # A greedy row ignores the sampling inputs; a sampling row with a bad one fails the call.
    assert texts(served["greedy_temperature_0"]) == [python(PROMPTS[0])[0]]
    for name, words in (("temperature_0", "temperature must be > 0"),
                        ("top_p_0", "top_p must be in (0, 1]"),
                        ("top_p_above_1", "top_p must be in (0, 1]"),
                        ("top_k_negative", "top_k must be >= 0"),
                        ("seeds_for_2_of_3", "seed: one value for the batch, or one per")):
        error = served[name]["error"]
        assert error.startswith("InvalidArgumentError") and words in error, (name, error)


def test_the_signatures_and_what_is_fixed_at_export(lm):
    _, _, path, _ = lm
    signatures = {name: names for name, names in saved_model_signatures(path).items()
                  if not name.startswith("__")}
    assert signatures == {
        "serving_default": ({"prompt", "max_new_tokens"}, {"completion"}),
        "serving_sample": ({"prompt", "max_new_tokens", "top_k", "seed"}, {"completion"}),
        "serving_generate": ({"prompt", "max_new_tokens", "do_sample", "temperature",
                              "top_k", "top_p", "seed", "stop"},
                             {"completion", "new_tokens"}),
        "serving_generate_full": ({"prompt", "max_new_tokens", "do_sample", "temperature",
                                   "top_k", "top_p", "seed", "stop", "num_beams",
                                   "length_penalty", "repetition_penalty",
                                   "no_repeat_ngram_size", "min_new_tokens", "stop_token_ids"},
                                  {"completion", "new_tokens"}),
        "serving_ids": ({"token_ids", "padding_mask"}, {"logits"})}
    with open(os.path.join(path, "zoo_export.json"), encoding="utf-8") as file:
        described = json.load(file)["signatures"]["serving_generate"]
    assert "serving_generate_full with num_beams=1" in described["doc"]
    assert described["inputs"]["seed"]["dtype"] == "int64"
    assert_every_input_batches(path, "causal_lm")  # but the options, of unknown rank


def test_beams_penalties_and_min_length_equal_transformers_generate(lm, tmp_path):
    """serving_generate_full against transformers' `generate` on the same weights (zoo's
    model converted to OpenAIGPTLMHeadModel), prompt by prompt, token for token."""
    import torch
    import transformers

    import zoo

    task, model, _, served = lm
    zoo.convert.to_huggingface(model, tmp_path / "hf")
    reference = transformers.OpenAIGPTLMHeadModel.from_pretrained(tmp_path / "hf").eval()
    for name, options in FULL.items():
        kwargs = {k: v for k, v in options.items() if k not in ("stop_token_ids",)}
        if "stop_token_ids" in options:
            kwargs["eos_token_id"] = options["stop_token_ids"]
        answer = served[f"full_{name}"]
        for i, prompt in enumerate(PROMPTS):
            ids = [int(t) for t in task.tokenizer([prompt]).to_list()[0]]
            with torch.no_grad():
                out = reference.generate(torch.tensor([ids]), attention_mask=torch.ones(
                    1, len(ids), dtype=torch.long), pad_token_id=0, do_sample=False, **kwargs)
            new = out[0, len(ids):].tolist()
            if "eos_token_id" in kwargs:  # transformers pads a stopped row
                stop = next((j for j, t in enumerate(new) if t in STOP_IDS), len(new) - 1)
                new = new[:stop + 1]
            expected = task.tokenizer.detokenize([new])[0].numpy().decode()
            assert (texts(answer)[i], answer["new_tokens"][i]) == (expected, len(new)), (
                name, i)
    assert texts(served["full_beams"]) != texts(served["greedy"])
    assert min(served["full_min_length"]["new_tokens"]) >= 4


def test_the_graph_holds_no_xla_only_op(lm):
    """Stock TF Serving runs XLA's ops only with its XLA:CPU JIT, off by default: the cache
    is written with TensorFlow's own op (tensorflow/serving#2217)."""
    from tensorflow.core.protobuf import saved_model_pb2

    _, _, path, _ = lm
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved.ParseFromString(file.read())
    graph = saved.meta_graphs[0].graph_def
    ops = {node.op for function in graph.library.function for node in function.node_def}
    assert "TensorStridedSliceUpdate" in ops and ops & {"While", "StatelessWhile"}
    assert not {op for op in ops if op.startswith("Xla")}


def test_a_causal_bert_export_generates_as_the_python_generator(sample_data, tmp_path):
    """The LTR BERT (`bert/pretrain_ltr`): the same loop through its causal encoder and
    masked-LM head."""
    requests = {"greedy": request(PROMPTS, max_new_tokens=COUNTS),
                "sampled": request(PROMPTS, **SAMPLED)}
    task, model, _, served = _export("bert/pretrain_ltr", TINY["bert"] + [
        "model.backbone.num_layers=1", f"model.vocabulary={sample_data['wordpiece']}",
        f"data.dir={sample_data['root'] / 'corpus'}"], tmp_path, requests)
    assert model.backbone.causal
    python = _python(task, model)
    for name, options in (("greedy", dict(max_new_tokens=COUNTS)), ("sampled", SAMPLED)):
        for i, prompt in enumerate(PROMPTS):
            assert (texts(served[name])[i], served[name]["new_tokens"][i]) == python(
                prompt, **row(options, i)), (name, i)
