"""Text generation (zoo.generation, issue #52) against transformers on the same weights.

The reference is transformers' OpenAIGPTLMHeadModel (torch) on a random GPT-1 that zoo
converts: its full forward pass per step, its `generate` (greedy, beam search) prompt by
prompt, and its logits processors on the same logits. Within zoo: the cache against
recomputing the prefix, a mixed-length batch against its rows alone, streaming against the
returned text, seeds, the sampling distribution (a chi-square test against the reference's
softmax), retracing, and the three backends.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import scipy.special
import scipy.stats

import zoo
from zoo import generation
from zoo.generation import CachedLM, Generator, sampling

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 97
PROMPTS = [[5, 17, 33, 2, 60], [40], [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                      23, 24, 25], [70, 3]]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(transformers' OpenAIGPTLMHeadModel, zoo's GPTLMHeadModel) with the same weights."""
    torch.manual_seed(0)
    config = transformers.OpenAIGPTConfig(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
        initializer_range=0.3, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    reference = transformers.OpenAIGPTLMHeadModel(config).eval()
    folder = tmp_path_factory.mktemp("gpt") / "hf"
    reference.save_pretrained(folder)
    model = zoo.convert.from_huggingface(str(folder), with_head=True)
    return reference, model


def _reference_logits(reference, ids):
    with torch.no_grad():
        return reference(torch.tensor([ids])).logits[0].numpy()


def _reference_generate(reference, prompt, **kwargs):
    with torch.no_grad():
        out = reference.generate(torch.tensor([prompt]), attention_mask=torch.ones(
            1, len(prompt), dtype=torch.long), pad_token_id=0, **kwargs)
    return [row[len(prompt):].tolist() for row in out]


def _until_stop(ids, stop):
    return ids[:ids.index(stop) + 1] if stop in ids else ids


def test_cached_steps_equal_the_reference_full_forward(pair):
    reference, model = pair
    lm = CachedLM(model)
    ids = [5, 17, 33, 2, 60, 11, 90, 4, 4, 21]
    expected = _reference_logits(reference, ids)
    # Prefill 4 tokens at slots 3..6 of a 16-slot buffer (3 slots of left padding), then
    # one token a step: the logits of every position equal the full forward's.
    tokens = np.zeros((1, 7), "int32")
    tokens[0, 3:] = ids[:4]
    positions = np.maximum(np.arange(7) - 3, 0)[None]
    mask = np.zeros((1, 16), bool)
    mask[0, 3:7] = True
    logits, cache = lm.forward(tokens, positions, mask, lm.empty_cache(1, 16), 0)
    got = [keras.ops.convert_to_numpy(logits)[0, 3:]]
    for i in range(4, len(ids)):
        mask[0, 3 + i] = True
        logits, cache = lm.forward(np.array([[ids[i]]]), np.array([[i]]), mask, cache, 3 + i)
        got.append(keras.ops.convert_to_numpy(logits)[0])
    np.testing.assert_allclose(np.concatenate(got), expected, atol=1e-4, rtol=0)


def test_greedy_equals_transformers_generate_and_the_batch_its_rows(pair):
    reference, model = pair
    generator = Generator(model)
    batch = generator.generate(PROMPTS, max_new_tokens=12)
    for prompt, got in zip(PROMPTS, batch):
        assert got == _reference_generate(reference, prompt, do_sample=False,
                                          max_new_tokens=12)[0]
        assert generator.generate(prompt, max_new_tokens=12) == got  # alone
    assert generator.generate(PROMPTS, max_new_tokens=12, use_cache=False) == batch
    assert Generator(model, compile="xla").generate(PROMPTS, max_new_tokens=12) == batch


def test_processors_in_generate_equal_transformers(pair):
    reference, model = pair
    generator = Generator(model)
    options = dict(repetition_penalty=1.8, no_repeat_ngram_size=2, max_new_tokens=14)
    for prompt in PROMPTS:
        assert generator.generate(prompt, **options) == _reference_generate(
            reference, prompt, do_sample=False, **options)[0]


@pytest.mark.parametrize("length_penalty", [0.5, 2.0])
def test_beam_search_equals_transformers(pair, length_penalty):
    reference, model = pair
    generator = Generator(model)
    for prompt in PROMPTS:
        # A stop token the model reaches soon, so that beams finish at different lengths
        # and the length penalty matters.
        stop = generator.generate(prompt, max_new_tokens=3)[2]
        expected = _reference_generate(
            reference, prompt, do_sample=False, num_beams=4, num_return_sequences=3,
            length_penalty=length_penalty, eos_token_id=stop, max_new_tokens=10)
        got = generator.generate(prompt, num_beams=4, num_return_sequences=3,
                                 length_penalty=length_penalty, stop_token_ids=[stop],
                                 max_new_tokens=10)
        assert got == [_until_stop(ids, stop) for ids in expected]


def test_logits_processors_equal_transformers():
    from transformers.generation import logits_process as hf

    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, (4, VOCAB)).astype("float32")
    sequences = [rng.integers(0, VOCAB, 9).tolist() for _ in range(4)]
    sequences[1] = [3, 4, 3, 4, 3]  # repeated n-grams
    ids = torch.tensor(sequences[:1] * 4)  # transformers takes a rectangular batch

    def reference(processor, rows=None):
        input_ids = torch.tensor(rows) if rows is not None else ids
        return processor(input_ids, torch.tensor(logits)).numpy()

    rows = [sequences[0]] * 4
    np.testing.assert_array_equal(
        sampling.repetition_penalty(logits, rows, 1.7),
        reference(hf.RepetitionPenaltyLogitsProcessor(1.7)))
    square = [s[:5] for s in sequences]
    for n in (1, 2, 3):
        np.testing.assert_array_equal(sampling.no_repeat_ngram(logits, square, n),
                                      reference(hf.NoRepeatNGramLogitsProcessor(n), square))
    for k in (1, 5, 40):
        np.testing.assert_array_equal(sampling.top_k_filter(logits, k),
                                      reference(hf.TopKLogitsWarper(k)))
    for p in (0.05, 0.5, 0.9, 1.0):
        np.testing.assert_array_equal(sampling.top_p_filter(logits, p),
                                      reference(hf.TopPLogitsWarper(p)))
    options = zoo.generation.Options(do_sample=True, temperature=0.7, top_k=20, top_p=0.8,
                                     min_new_tokens=3, stop_token_ids=(4, 9),
                                     repetition_penalty=1.3, max_new_tokens=5)
    chain = hf.LogitsProcessorList([
        hf.RepetitionPenaltyLogitsProcessor(1.3),
        hf.MinNewTokensLengthLogitsProcessor(7, 3, [4, 9]),
        hf.TemperatureLogitsWarper(0.7), hf.TopKLogitsWarper(20), hf.TopPLogitsWarper(0.8)])
    np.testing.assert_allclose(sampling.process(logits, rows, 1, options),
                               reference(chain), rtol=1e-6)


def test_cache_equals_recomputing_the_prefix(pair):
    _, model = pair
    lm = CachedLM(model)
    ids = np.array([[3, 14, 15, 92, 65, 35, 89, 79]], "int32")
    full = keras.ops.convert_to_numpy(model({"token_ids": ids, "padding_mask": ids > -1})[
        "lm_logits"])
    mask = np.zeros((1, 8), bool)
    mask[0, :3] = True
    logits, cache = lm.forward(ids[:, :3], np.arange(3)[None], mask, lm.empty_cache(1, 8), 0)
    steps = [keras.ops.convert_to_numpy(logits)[0]]
    for i in range(3, 8):
        mask[0, i] = True
        logits, cache = lm.forward(ids[:, i:i + 1], np.array([[i]]), mask, cache, i)
        steps.append(keras.ops.convert_to_numpy(logits)[0])
    np.testing.assert_allclose(np.concatenate(steps), full[0], atol=1e-5)


def test_causal_bert_generates_with_the_cache():
    keras.utils.set_random_seed(1)
    backbone = zoo.models.create("bert_tiny", num_layers=2, vocabulary_size=60, causal=True)
    model = zoo.models.CausalLM(backbone)
    ids = np.array([[2, 7, 9, 11, 5, 31]], "int32")
    full = keras.ops.convert_to_numpy(model({
        "token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})["lm"])
    generated = generation.generate(model, ids[0, :3].tolist(), max_new_tokens=3)
    assert generated[0] == int(np.argmax(full[0, 2]))
    lm = CachedLM(model)
    mask = np.ones((1, 6), bool)
    logits, _ = lm.forward(ids, np.arange(6)[None], mask, lm.empty_cache(1, 6), 0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(logits), full, atol=1e-5)
    with pytest.raises(ValueError, match="causal"):
        CachedLM(zoo.models.create("bert_tiny", num_layers=1, vocabulary_size=60))


def test_seeded_sampling_reproduces_rows_alone_and_after_saving(pair, tmp_path):
    _, model = pair
    generator = Generator(model)
    options = dict(max_new_tokens=10, temperature=0.9, top_k=30, top_p=0.95)
    batch = generator.generate(PROMPTS, seed=11, **options)
    for r, prompt in enumerate(PROMPTS):
        assert generator.generate(prompt, seed=11 + r, **options) == batch[r]
    assert generator.generate(PROMPTS, seed=12, **options) != batch
    model.save(tmp_path / "lm.keras")
    again = keras.saving.load_model(tmp_path / "lm.keras")
    assert generation.generate(again, PROMPTS, seed=11, **options) == batch
    several = generator.generate(PROMPTS[:2], seed=11, num_return_sequences=2, **options)
    assert several[0][0] == batch[0] and len(several[1]) == 2


def test_samples_follow_softmax_over_temperature_and_stay_in_top_k_and_top_p(pair):
    reference, model = pair
    prompt = PROMPTS[0]
    logits = _reference_logits(reference, prompt)[-1].astype("float64")
    generator = Generator(model)
    rows = 3000
    first = np.array(generator.generate([prompt] * rows, seed=0, temperature=0.7,
                                        max_new_tokens=1)).ravel()
    expected = scipy.special.softmax(logits / 0.7) * rows
    keep = expected >= 5  # the chi-square approximation's rule of thumb; the rest pooled
    observed = np.append(np.bincount(first, minlength=VOCAB)[keep],
                         np.sum(~keep[first]))
    expected = np.append(expected[keep], expected[~keep].sum())
    assert scipy.stats.chisquare(observed, expected).pvalue > 1e-3
    order = np.argsort(-logits)
    top_k = generator.generate([prompt] * 500, seed=1, top_k=5, max_new_tokens=1)
    assert set(np.ravel(top_k)) <= set(order[:5])
    probabilities = scipy.special.softmax(logits)
    cumulative = np.cumsum(probabilities[order])
    p = float(cumulative[1] + cumulative[2]) / 2  # the nucleus is the 3 most likely tokens
    top_p = generator.generate([prompt] * 500, seed=2, top_p=p, max_new_tokens=1)
    nucleus = order[:3]
    assert set(np.ravel(top_p)) <= set(nucleus) and len(set(np.ravel(top_p))) > 1


def test_a_second_call_in_a_bucket_does_not_retrace(pair):
    _, model = pair
    generator = Generator(model)
    generator.generate([[1, 2, 3], [4]], max_new_tokens=5)
    generator.generate([9, 9], max_new_tokens=4, num_beams=2)  # beam search: its own program
    traces = generator.traces
    generator.generate([[7, 8, 9, 10], [2, 2]], max_new_tokens=7, top_k=3, seed=1)
    generator.generate([9, 9], max_new_tokens=3, num_beams=2)
    assert generator.traces == traces
    # generation.generate keeps one Generator per model: a second call does not trace again.
    kept = generation.generator_for(model)
    generation.generate(model, [[1, 2, 3], [4]], max_new_tokens=5)
    traces = kept.traces
    generation.generate(model, [[7, 8, 9, 10], [2, 2]], max_new_tokens=7)
    assert generation.generator_for(model) is kept and kept.traces == traces
    assert generation.generator_for(model, compile=None) is not kept


def test_bad_input_is_refused_in_one_line(pair):
    _, model = pair
    generator = Generator(model)
    cases = [
        (dict(prompts=[list(range(65))]), "prompt 0 has 65 tokens, more than the model's 64"),
        (dict(prompts=[list(range(60))], max_new_tokens=5), "at most 4 new tokens"),
        (dict(prompts=[1], top_p=1.5), r"top_p=1.5 is outside \(0, 1\]"),
        (dict(prompts=[1], top_p=0.0), "top_p=0.0"),
        (dict(prompts=[1], temperature=0.0), "temperature=0.0 must be > 0"),
        (dict(prompts=[1], temperature=0.5, do_sample=False), "apply only when sampling"),
        (dict(prompts=[1], num_beams=2, num_return_sequences=3), "more than num_beams"),
        (dict(prompts="text"), "need the model's tokenizer"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message) as error:
            generator.generate(**kwargs)
        assert "\n" not in str(error.value)
    assert generator.generate([[]], max_new_tokens=4) == [[]]
    assert generator.generate([[], [5, 6]], max_new_tokens=2)[0] == []


@pytest.fixture(scope="module")
def text_model(sample_data):
    tokenizer = zoo.tokenizers.from_huggingface(sample_data["bpe"])
    keras.utils.set_random_seed(3)
    backbone = zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
                                 vocabulary_size=int(tokenizer.vocabulary_size()),
                                 max_sequence_length=128)
    return zoo.models.GPTLMHeadModel(backbone), tokenizer


def test_text_streams_as_it_returns_and_stop_strings_stop(text_model):
    model, tokenizer = text_model
    options = dict(max_new_tokens=30, temperature=1.5, seed=4)
    text = generation.generate(model, "the movie was", tokenizer, **options)
    pieces = list(generation.stream(model, "the movie was", tokenizer, **options))
    assert len(pieces) > 2 and "".join(pieces) == text
    words = text.split()
    assert len(words) > 3
    stop = words[2]
    cut = generation.generate(model, ["the movie was"], tokenizer, stop_strings=[stop],
                              **options)[0]
    assert stop in cut and text.startswith(cut) and len(cut) < len(text)
    both = generation.generate(model, ["the movie was", ""], tokenizer, return_prompt=True,
                               **options)
    assert both[0].endswith(text) and both[1] == ""


BACKEND_SCRIPT = """
import json, sys
import keras, numpy as np
from zoo.generation import Generator
model = keras.saving.load_model(sys.argv[1])
generator = Generator(model)
prompts = json.loads(sys.argv[2])
out = {"greedy": generator.generate(prompts, max_new_tokens=8),
       "sample": generator.generate(prompts, max_new_tokens=8, top_p=0.9, temperature=0.8,
                                    seed=5),
       "beams": generator.generate(prompts[0], max_new_tokens=6, num_beams=3)}
traces = generator.traces
generator.generate(prompts, max_new_tokens=8)
out["retraced"] = generator.traces - traces
print("RESULT", json.dumps(out))
"""


@pytest.fixture(scope="module")
def on_tensorflow(pair, tmp_path_factory):
    """The saved model the other backends load, and what it generates on TensorFlow (once for
    both backends)."""
    _, model = pair
    path = tmp_path_factory.mktemp("backends") / "lm.keras"
    model.save(path)
    generator = Generator(model)
    return path, {"greedy": generator.generate(PROMPTS, max_new_tokens=8),
                  "sample": generator.generate(PROMPTS, max_new_tokens=8, top_p=0.9,
                                               temperature=0.8, seed=5),
                  "beams": generator.generate(PROMPTS[0], max_new_tokens=6, num_beams=3),
                  "retraced": 0}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_jax_and_pytorch_generate_what_tensorflow_does(on_tensorflow, backend):
    path, expected = on_tensorflow
    env = dict(os.environ, KERAS_BACKEND=backend)
    out = subprocess.run([sys.executable, "-c", BACKEND_SCRIPT, str(path), json.dumps(PROMPTS)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.split("RESULT ", 1)[1])
    assert result == expected
