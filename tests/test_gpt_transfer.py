"""GPT-1 section 5: transferring the first K blocks (Figure 2 left), and zero-shot evaluation
of a language model with the paper's heuristics (Figure 2 right).

The zero-shot reference is transformers' OpenAIGPTLMHeadModel (torch) and OpenAIGPTTokenizer
on the same weights and vocabulary: the log-probabilities are computed there one sequence at
a time, the heuristics written out here from the paper's words, the metrics with sklearn.
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, matthews_corrcoef

import zoo_tasks
from zoo import config as config_lib
from zoo.data import read_examples
from zoo.data.samples import LAYOUT
from zoo_cli.main import main as cli
from zoo_tasks import zero_shot

TINY_GPT = dict(num_layers=3, hidden_dim=32, num_heads=2, max_sequence_length=512)


def _checkpoint(sample_data, tmp_path):
    """A tiny random GPT-1 saved as .keras, with the sample BPE vocabulary beside it."""
    import zoo
    from zoo import tokenizers

    vocabulary = tokenizers.from_huggingface(sample_data["bpe"]).vocabulary_size()
    keras.utils.set_random_seed(7)
    backbone = zoo.models.create("gpt1", vocabulary_size=int(vocabulary), **TINY_GPT)
    path = tmp_path / "lm.keras"
    backbone.save(path)
    return backbone, path


# === transfer_layers (Figure 2 left) ===


def _task(sample_data, checkpoint, *overrides):
    config = config_lib.resolve({"task": "glue/sst2"}, [
        "model.preset=gpt1", f"model.init_checkpoint={checkpoint}",
        f"model.vocabulary={sample_data['bpe']}",
        f"data.dir={sample_data['root'] / 'glue' / 'SST-2'}", *overrides])
    return zoo_tasks.create("glue/sst2", config)


def _weights(backbone):
    return {w.path: keras.ops.convert_to_numpy(w) for w in backbone.weights}


def test_transfer_layers_copies_the_embeddings_and_the_first_k_blocks(sample_data, tmp_path):
    source, path = _checkpoint(sample_data, tmp_path)
    task = _task(sample_data, path, "model.transfer_layers=1")
    keras.utils.set_random_seed(0)
    model = task.build_model()
    loaded = _weights(model.backbone)
    original = _weights(source)
    # The token table grew by GPT-1's three fine-tuning tokens; its first rows are copied.
    rows = original["token_embedding/embeddings"].shape[0]
    np.testing.assert_array_equal(loaded["token_embedding/embeddings"][:rows],
                                  original["token_embedding/embeddings"])
    np.testing.assert_array_equal(loaded["position_embedding/embeddings"],
                                  original["position_embedding/embeddings"])
    block_0 = [p for p in original if p.startswith("transformer_layer_0/")]
    later = [p for p in original if p.startswith(("transformer_layer_1/", "transformer_layer_2/"))]
    assert block_0 and len(later) == 2 * len(block_0)
    for p in block_0:
        np.testing.assert_array_equal(loaded[p], original[p], err_msg=p)
    for p in later:
        if p.endswith("kernel"):  # biases and LayerNorm start at 0 / 1 in both
            assert not np.allclose(loaded[p], original[p]), p
    # The fresh blocks are seeded: the same seed gives the same initialisation.
    keras.utils.set_random_seed(0)
    again = _weights(_task(sample_data, path, "model.transfer_layers=1").build_model().backbone)
    for p in later:
        np.testing.assert_array_equal(again[p], loaded[p], err_msg=p)
    # K = num_layers is the whole model.
    full = _weights(_task(sample_data, path, "model.transfer_layers=3").build_model().backbone)
    for p in block_0 + later:
        np.testing.assert_array_equal(full[p], original[p], err_msg=p)


def test_transfer_layers_refuses_what_it_cannot_do(sample_data, tmp_path):
    _, path = _checkpoint(sample_data, tmp_path)
    with pytest.raises(config_lib.ConfigError, match="transfer_layers 4: .* only 3"):
        _task(sample_data, path, "model.transfer_layers=4").build_model()
    with pytest.raises(config_lib.ConfigError, match="init_checkpoint, which is not set"):
        _task(sample_data, path, "model.transfer_layers=1",
              "model.init_checkpoint=null").build_model()


# === Zero-shot (Figure 2 right), against transformers ===


@pytest.fixture(scope="module")
def language_model(sample_data, tmp_path_factory):
    """The tiny GPT-1 as a Hugging Face folder (weights + vocabulary) and small task files."""
    import zoo.convert

    tmp_path = tmp_path_factory.mktemp("zero_shot")
    backbone, _ = _checkpoint(sample_data, tmp_path)
    folder = tmp_path / "hf"
    zoo.convert.to_huggingface(zoo.convert.GPTLMHeadModel(backbone), str(folder))
    for name in os.listdir(sample_data["bpe"]):
        shutil.copy(os.path.join(sample_data["bpe"], name), folder)
    root = sample_data["root"]
    files = {}
    for task, split in (("glue/sst2", "dev"), ("glue/cola", "dev"), ("swag", "val"),
                        ("story_cloze", "val")):
        lines = (root / LAYOUT[task][split]).read_text(encoding="utf-8").splitlines(True)
        files[task] = tmp_path / task.replace("/", "_") / os.path.basename(LAYOUT[task][split])
        files[task].parent.mkdir()
        files[task].write_text("".join(lines[:41]), encoding="utf-8")  # header + 40 rows
    files["race"] = root / LAYOUT["race"]["dev"]
    return folder, files


@pytest.fixture(scope="module")
def reference(language_model):
    """Sum of log-probabilities of a continuation given a context, with transformers."""
    import torch
    import transformers

    folder, _ = language_model
    model = transformers.OpenAIGPTLMHeadModel.from_pretrained(str(folder)).eval()
    tokenizer = transformers.OpenAIGPTTokenizer.from_pretrained(str(folder),
                                                                split_special_tokens=True)

    def ids(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    def log_prob(context, continuation):
        sequence = torch.tensor([context + continuation])
        with torch.no_grad():
            logits = model(sequence).logits[0].double()
        log_probs = torch.log_softmax(logits, dim=-1)
        return sum(float(log_probs[len(context) + i - 1, token])
                   for i, token in enumerate(continuation))

    return ids, log_prob


def _zoo_scorer(language_model):
    backbone, tokenizer = zero_shot.load_language_model(language_model[0])
    return zero_shot.Scorer(backbone, tokenizer, batch_size=8)


def _run(task, folder, data, capsys, *extra):
    capsys.readouterr()
    assert cli(["evaluate", "--zero-shot", task, "--run-dir", str(folder), "--data", str(data),
                *extra]) == 0
    result = json.loads(capsys.readouterr().out)
    assert os.path.dirname(result["predictions"]) == os.path.join(".", "predictions",
                                                                  "zero_shot")
    lines = open(result["predictions"]).read().splitlines()
    return result, lines


def test_zero_shot_sentiment_matches_transformers(language_model, reference, capsys,
                                                  monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    ids, log_prob = reference
    folder, files = language_model
    examples = list(read_examples("glue/sst2", files["glue/sst2"]))
    margins = []
    for example in examples:
        context = ids(example["sentence1"] + " very")
        margins.append(log_prob(context, ids("positive")) - log_prob(context, ids("negative")))
    predicted, zoo_margins = zero_shot.sentiment(_zoo_scorer(language_model),
                                                 [e["sentence1"] for e in examples])
    np.testing.assert_allclose(zoo_margins, margins, atol=1e-4)
    expected = ["1" if m > 0 else "0" for m in margins]
    result, lines = _run("glue/sst2", folder, files["glue/sst2"], capsys)
    assert lines[0] == "index\tprediction"
    assert [line.split("\t")[1] for line in lines[1:]] == expected
    gold = [e["label"] for e in examples]
    assert result["accuracy"] == pytest.approx(accuracy_score(gold, expected))


@pytest.mark.parametrize("task", ["story_cloze", "swag", "race"])
def test_zero_shot_multiple_choice_matches_transformers(task, language_model, reference, capsys,
                                                        monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    ids, log_prob = reference
    folder, files = language_model
    examples = list(read_examples(task, files[task]))
    scores = []
    for example in examples:
        context = example["context"] + (" " + example["question"] if task == "race" else "")
        row = []
        for choice in example["choices"]:
            answer = ids(choice)
            row.append(log_prob(ids(context), answer) / len(answer))  # average token log-prob
        scores.append(row)
    _, zoo_scores = zero_shot.multiple_choice(_zoo_scorer(language_model), examples)
    np.testing.assert_allclose(zoo_scores, scores, atol=1e-4)
    expected = [int(np.argmax(row)) for row in scores]
    result, lines = _run(task, folder, files[task], capsys)
    assert lines[0] == "id\tprediction"
    assert [line.split("\t") for line in lines[1:]] == [[e["id"], str(c)]
                                                        for e, c in zip(examples, expected)]
    gold = [e["label"] for e in examples]
    assert result["accuracy"] == pytest.approx(100 * accuracy_score(gold, expected))
    if task == "race":
        high = [i for i, e in enumerate(examples) if "high" in e["id"]]
        assert high and result["high_accuracy"] == pytest.approx(
            100 * accuracy_score([gold[i] for i in high], [expected[i] for i in high]))


def test_zero_shot_acceptability_thresholds_the_average_log_probability(
        language_model, reference, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    ids, log_prob = reference
    folder, files = language_model
    examples = list(read_examples("glue/cola", files["glue/cola"]))
    scores = []
    for example in examples:
        tokens = ids(example["sentence1"])
        scores.append(log_prob(tokens[:1], tokens[1:]) / len(tokens[1:]))
    zoo_scores = zero_shot.sentence_scores(_zoo_scorer(language_model),
                                           [e["sentence1"] for e in examples])
    np.testing.assert_allclose(zoo_scores, scores, atol=1e-4)
    gold = [e["label"] for e in examples]
    # The oracle threshold: the best MCC over every cut of the reference scores.
    best = max(matthews_corrcoef(gold, ["1" if s >= t else "0" for s in scores])
               for t in scores)
    result, lines = _run("glue/cola", folder, files["glue/cola"], capsys)
    assert result["mcc"] == pytest.approx(best, abs=1e-9)
    assert "maximise MCC" in result["threshold_rule"]
    predicted = [line.split("\t")[1] for line in lines[1:]]
    assert predicted == ["1" if s > result["threshold"] else "0" for s in scores]
    # A fixed threshold is used as given.
    result, lines = _run("glue/cola", folder, files["glue/cola"], capsys, "--threshold",
                         "-1000")
    assert result["threshold"] == -1000 and result["threshold_rule"] == "given (--threshold)"
    assert {line.split("\t")[1] for line in lines[1:]} == {"1"}


def test_zero_shot_refuses_what_it_cannot_score(language_model, capsys, tmp_path):
    folder, files = language_model

    def error(*args):
        assert cli(["evaluate", "--run-dir", str(folder), *args]) == 1
        return capsys.readouterr().err

    assert "expected one of glue/sst2, glue/cola" in error("--zero-shot", "glue/mrpc",
                                                           "--data", str(files["glue/sst2"]))
    assert "--zero-shot needs --data" in error("--zero-shot", "glue/sst2")
    assert "only glue/cola is thresholded" in error("--zero-shot", "glue/sst2", "--data",
                                                    str(files["glue/sst2"]), "--threshold", "1")
    test = tmp_path / "test.tsv"  # CoLA's test file: no labels to tune the threshold on
    test.write_text("index\tsentence\n0\tThe farmer finds the lamp.\n")
    assert "no labels to tune the threshold on" in error("--zero-shot", "glue/cola", "--data",
                                                         str(test))


def zero_shot_on_backend(folder, data):
    """CoLA sentence scores under the current Keras backend (for `run_in_backend`)."""
    sentences = [e["sentence1"] for e in read_examples("glue/cola", data)]
    backbone, tokenizer = zero_shot.load_language_model(folder)
    scores = zero_shot.sentence_scores(zero_shot.Scorer(backbone, tokenizer), sentences)
    return {"backend": np.array(keras.backend.backend()), "scores": scores}


def test_zero_shot_scores_are_the_same_on_jax(language_model):
    from tests.harness import run_in_backend

    folder, files = language_model
    result = run_in_backend("jax", "tests.test_gpt_transfer:zero_shot_on_backend", folder,
                            files["glue/cola"])
    assert str(result["backend"]) == "jax"
    np.testing.assert_allclose(result["scores"],
                               zero_shot_on_backend(folder, files["glue/cola"])["scores"],
                               atol=1e-4)
