"""Pretraining exports: GPT-1 generation and BERT's masked-LM blanks, through the SavedModel in
a fresh process, against Python loops over the in-process Keras model.

The references call the Keras model themselves (one step at a time on the unpadded tokens for
generation; one text at a time for the blanks), tokenize in Python pieces and pick tokens with
numpy, so they share no code with the serving graph but the tokenizer and the model.
"""

import json

import numpy as np
import pytest

from tests.harness import saved_model_signatures, serve_fresh
from tests.test_generate_cli import lm_export, lm_run  # noqa: F401  (fixtures)
from tests.test_signatures_batch import assert_every_input_batches
from tests.test_training import TINY
from zoo_cli.main import main as cli
from zoo_tasks import runs

PROMPTS = ["the film is", "a movie about", "it was the best of times , it was the worst"]
LONG = "the movie is good . " * 5000  # 100,000 characters
BAD_UTF8 = b"the \xff\xfe film"


def _train(experiment, tmp, overrides):
    run_dir = tmp / "run"
    args = ["train", "--experiment", experiment, "--run-dir", str(run_dir)]
    for override in overrides + ["train.batch_size=16", "train.steps=6", "train.eval_every=6",
                                 "train.warmup_steps=2", "train.learning_rate=2e-3"]:
        args += ["--set", override]
    assert cli(args) == 0
    path = runs.export_run(str(run_dir), str(tmp / "exports"), progress=lambda line: None)
    _, task, model = runs.load_task(str(run_dir))
    return task, model, path


def _signatures(path):
    return {name: names for name, names in saved_model_signatures(path).items()
            if not name.startswith("__")}


# === GPT-1: prompt in, completion out ===


@pytest.fixture(scope="module")
def gpt(lm_run, lm_export):
    """The tiny GPT-1 language model of tests/test_generate_cli.py, its task, model and export
    (each run and export written once for both files)."""
    path = lm_export
    _, task, model = runs.load_task(lm_run)
    # One fresh serving process for the module's requests (each process costs seconds).
    return task, model, path, serve_fresh(path, GPT_REQUESTS + GPT_BAD, show=True)


COUNTS = [6, 0, 3]
GPT_REQUESTS = [
    {"prompt": PROMPTS, "max_new_tokens": 6},
    {"prompt": PROMPTS, "max_new_tokens": COUNTS},
    ("serving_sample", {"prompt": PROMPTS, "max_new_tokens": 5, "top_k": 4, "seed": 7}),
    ("serving_sample", {"prompt": PROMPTS[:1], "max_new_tokens": 5, "top_k": 4, "seed": 7}),
    ("serving_sample", {"prompt": PROMPTS, "max_new_tokens": 5, "top_k": 1, "seed": 3}),
    ("serving_ids", {"token_ids": [[5, 6, 7]], "padding_mask": [[1, 1, 1]]})]
GPT_BAD = [
    {"prompt": ["", "the film is"], "max_new_tokens": 3},
    {"prompt": [LONG], "max_new_tokens": 4},
    {"prompt": [BAD_UTF8], "max_new_tokens": 3},
    {"prompt": np.zeros([0], object), "max_new_tokens": 3},
    {"prompt": ["a", "b"], "max_new_tokens": [1, 2, 3]}]


def greedy(task, model, prompt, max_new_tokens, top_k=None, seed=None):
    """The reference: the Keras model step by step on the prompt's tokens, numpy argmax."""
    import tensorflow as tf

    buffer = model.backbone.max_sequence_length
    ids = [int(i) for i in task.tokenizer.tokenize(tf.constant(prompt)).numpy()]
    ids = ids[len(ids) - min(len(ids), buffer - 1):]
    new = []
    while ids and len(new) < max_new_tokens and len(ids) < buffer:
        x = np.array([ids], np.int32)
        logits = np.asarray(model({"token_ids": x, "padding_mask": np.ones_like(x)})["lm"])
        last = logits[0, -1].astype(np.float32)
        if top_k is None:
            token = int(np.argmax(last))
        else:
            kth = np.sort(last)[::-1][top_k - 1]
            masked = np.where(last >= kth, last, -np.inf)
            token = int(tf.random.stateless_categorical(masked[None], 1, [seed, len(new)])[0, 0])
        ids.append(token)
        new.append(token)
    return task.tokenizer.detokenize(tf.constant(new, tf.int32)).numpy().decode() \
        if new else ""


def test_gpt_completions_equal_the_python_loop(gpt):
    task, model, path, served = gpt
    counts = COUNTS
    scalar, rows, sampled, alone, top1, ids = served[:len(GPT_REQUESTS)]
    expected = [greedy(task, model, prompt, 6) for prompt in PROMPTS]
    assert [c.decode() for c in scalar["completion"]] == expected
    assert all(expected)
    assert [c.decode() for c in rows["completion"]] == [
        greedy(task, model, prompt, n) for prompt, n in zip(PROMPTS, counts)]
    assert [c.decode() for c in sampled["completion"]] == [
        greedy(task, model, prompt, 5, top_k=4, seed=7) for prompt in PROMPTS]
    assert alone["completion"][0] == sampled["completion"][0]  # a row's own seed only
    assert [c.decode() for c in top1["completion"]] == [
        greedy(task, model, prompt, 5) for prompt in PROMPTS]
    x = np.array([[5, 6, 7]], np.int32)
    reference = np.asarray(model({"token_ids": x, "padding_mask": np.ones_like(x)})["lm"])
    np.testing.assert_allclose(ids["logits"], reference, atol=1e-5)
    assert _signatures(path) == {
        "serving_default": ({"prompt", "max_new_tokens"}, {"completion"}),
        "serving_sample": ({"prompt", "max_new_tokens", "top_k", "seed"}, {"completion"}),
        "serving_generate": ({"prompt", "max_new_tokens", "do_sample", "temperature", "top_k",
                              "top_p", "seed", "stop"}, {"completion", "new_tokens"}),
        # #63: every option of Python's generate per request (tests/test_generation_export.py
        # holds its answers to transformers' generate).
        "serving_generate_full": ({"prompt", "max_new_tokens", "do_sample", "temperature",
                                   "top_k", "top_p", "seed", "stop", "num_beams",
                                   "length_penalty", "repetition_penalty",
                                   "no_repeat_ngram_size", "min_new_tokens", "stop_token_ids"},
                                  {"completion", "new_tokens"}),
        "serving_ids": ({"token_ids", "padding_mask"}, {"logits"})}
    assert_every_input_batches(path, "causal_lm")  # but the options, of unknown rank


def test_a_converted_gpt_run_generates_like_the_export_in_transformers_pipeline(gpt, lm_run,
                                                                                tmp_path):
    """`zoo convert RUN OUT --to hf` (issue 20): OpenAIGPTLMHeadModel gives the run's logits,
    and `pipeline("text-generation")` (greedy) continues the prompts as the export does."""
    import torch
    import transformers

    from zoo_cli.main import main as cli

    task, model, path, served = gpt
    out = tmp_path / "hf"
    run_dir = lm_run
    assert cli(["convert", str(run_dir), str(out), "--to", "hf"]) == 0
    hf = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    assert type(hf).__name__ == "OpenAIGPTLMHeadModel"
    x = task.tokenizer(PROMPTS).to_tensor().numpy()
    mask = (task.tokenizer(PROMPTS).to_tensor(default_value=-1).numpy() >= 0).astype("int32")
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor(x, dtype=torch.long),
                    attention_mask=torch.tensor(mask, dtype=torch.long)).logits.numpy()
    ours = np.asarray(model({"token_ids": x, "padding_mask": mask})["lm"])
    real = mask > 0
    difference = np.max(np.abs(ours[real] - theirs[real]))
    print(f"\nGPT-1 prompts: max |zoo - transformers| logit {difference:.1e}")
    assert difference <= 1e-4

    generate = transformers.pipeline("text-generation", model=str(out), device="cpu")
    completions = [generate(prompt, max_new_tokens=6, do_sample=False, return_full_text=False)
                   [0]["generated_text"].strip() for prompt in PROMPTS]
    assert completions == [c.decode().strip() for c in served[0]["completion"]]


def test_gpt_bad_prompts(gpt):
    task, model, path, served = gpt
    empty, long, bad, nothing, mismatch = served[len(GPT_REQUESTS):]
    assert empty["completion"][0] == b""  # nothing to continue from
    assert empty["completion"][1].decode() == greedy(task, model, "the film is", 3)
    # The long prompt keeps its last tokens: one new token fills the buffer.
    assert [c.decode() for c in long["completion"]] == [greedy(task, model, LONG, 4)]
    assert len(long["completion"][0].split()) == 1
    assert [c.decode() for c in bad["completion"]] == [greedy(task, model, BAD_UTF8, 3)]
    assert nothing["completion"].shape == (0,)
    assert mismatch["error"].startswith("InvalidArgumentError")


# === BERT: text with [MASK] in, the top 5 per mask out ===


@pytest.fixture(scope="module")
def bert(sample_data, tmp_path_factory):
    """A tiny BERT pretrained for a few steps on shards of the sample corpus, and its export."""
    from zoo.data.pretraining import write_pretraining_data

    tmp = tmp_path_factory.mktemp("export_bert")
    write_pretraining_data([str(sample_data["root"] / "corpus" / "corpus.txt")],
                           sample_data["wordpiece"], str(tmp / "shards"),
                           max_sequence_lengths=(32,), shards=1, dupe_factor=1)
    task, model, path = _train("bert/pretrain", tmp, TINY["bert"] + [
        f"model.vocabulary={sample_data['wordpiece']}", f"data.dir={tmp / 'shards'}",
        "data.phases=[]", "data.sequence_length=32"])
    return task, model, path, serve_fresh(path, MLM_REQUESTS, show=True)


TEXTS = ["the [MASK] is good .", "[MASK] film was [MASK] and [MASK]", "no blank here",
         "", LONG[:40] + "[MASK] " + LONG[40:], "a [MASK]" + LONG, LONG + " [MASK]"]
MLM_REQUESTS = [
    {"text": TEXTS}, {"text": np.zeros([0], object)},
    ("serving_ids", {"token_ids": [[2, 5, 4, 3]], "segment_ids": [[0, 0, 0, 0]],
                     "padding_mask": [[1, 1, 1, 1]], "mask_positions": [[2]]}),
    {"text": [BAD_UTF8 + b" [MASK]"]}]


def blanks(task, model, text, k=5):
    """The reference: Python splits on [MASK], packs, calls the model, numpy top k."""
    import tensorflow as tf

    tokenizer = task.tokenizer
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    ids = []
    for i, piece in enumerate(text.split("[MASK]")):
        if i:
            ids.append(tokenizer.mask_token_id)
        ids += [int(t) for t in tokenizer.tokenize(tf.constant(piece)).numpy()]
    ids = [tokenizer.cls_token_id] + ids[:30] + [tokenizer.sep_token_id]
    positions = [i for i, t in enumerate(ids) if t == tokenizer.mask_token_id]
    if not positions:
        return [], []
    x = np.array([ids], np.int32)
    logits = np.asarray(model({"token_ids": x, "segment_ids": 0 * x,
                               "padding_mask": np.ones_like(x),
                               "mask_positions": np.array([positions], np.int32)})["mlm"])[0]
    logits = logits.astype(np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    top = np.argsort(-probabilities, axis=-1, kind="stable")[:, :k]
    vocabulary = tokenizer.get_vocabulary()
    return ([[vocabulary[i] for i in row] for row in top],
            np.take_along_axis(probabilities, top, -1))


def test_masked_lm_blanks_equal_the_python_reference(bert):
    task, model, path, (served, nothing, ids, _) = bert
    texts = TEXTS
    assert served["tokens"].shape == served["scores"].shape == (len(texts), 3, 5)
    masks = []
    for row, text in enumerate(texts):
        tokens, scores = blanks(task, model, text)
        masks.append(len(tokens))
        for m in range(3):
            got = [t.decode() for t in served["tokens"][row, m]]
            if m < len(tokens):
                assert got == tokens[m], (text[:50], m)
                np.testing.assert_allclose(served["scores"][row, m], scores[m], atol=1e-5)
            else:  # padding of a row with fewer masks
                assert got == [""] * 5 and not served["scores"][row, m].any()
    assert masks == [1, 3, 0, 0, 1, 1, 0]  # a mask past the 30 tokens kept is cut off
    assert nothing["tokens"].shape[0] == nothing["scores"].shape[0] == 0
    x = np.array([[2, 5, 4, 3]], np.int32)
    reference = np.asarray(model({"token_ids": x, "segment_ids": 0 * x,
                                  "padding_mask": np.ones_like(x),
                                  "mask_positions": np.array([[2]], np.int32)})["mlm"])
    np.testing.assert_allclose(ids["logits"], reference, atol=1e-5)
    assert _signatures(path) == {
        "serving_default": ({"text"}, {"tokens", "scores"}),
        "serving_ids": ({"token_ids", "segment_ids", "padding_mask", "mask_positions"},
                        {"logits"})}
    assert_every_input_batches(path, "masked_lm")


def test_a_converted_bert_pretraining_run_fills_blanks_like_the_export(bert, tmp_path):
    """`zoo convert RUN OUT --to hf` (issue 20) of a pretraining run: BertForPreTraining, whose
    masked-LM half `pipeline("fill-mask")` loads and whose "[MASK]" is the blank, gives the
    export's top five tokens and probabilities for each blank."""
    import pathlib

    import transformers

    from zoo_cli.main import main as cli

    task, model, path, (served, *_) = bert
    out = tmp_path / "hf"
    assert cli(["convert", str(pathlib.Path(path).parent.parent / "run"), str(out),
                "--to", "hf"]) == 0
    assert json.loads((out / "config.json").read_text())["architectures"] == [
        "BertForPreTraining"]
    fill = transformers.pipeline("fill-mask", model=str(out), device="cpu")
    vocabulary = task.tokenizer.get_vocabulary()
    compared = 0
    for row in (0, 1):  # one blank, three blanks (texts within the sequence length)
        answers = fill(TEXTS[row], top_k=5)
        answers = [answers] if isinstance(answers[0], dict) else answers
        for m, candidates in enumerate(answers):
            assert [vocabulary[c["token"]] for c in candidates] == [
                t.decode() for t in served["tokens"][row, m]]
            np.testing.assert_allclose([c["score"] for c in candidates],
                                       served["scores"][row, m], atol=1e-5)
            compared += 1
    assert compared == 4


def test_masked_lm_invalid_utf8(bert):
    task, model, path, (*_, bad) = bert
    tokens, scores = blanks(task, model, BAD_UTF8 + b" [MASK]")
    assert [t.decode() for t in bad["tokens"][0, 0]] == tokens[0]
    np.testing.assert_allclose(bad["scores"][0, 0], scores[0], atol=1e-5)
