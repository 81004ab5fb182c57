"""NER export: the tiny CoNLL-2003 run of tests/test_tagging.py exported, served in a fresh process
(tensorflow and tensorflow_text only), its words and tags equal to `TaggingTask.predict` on the
same words.

The expected tags come from the Python pipeline (`predict` on a CoNLL file, tested against
conlleval and `zoo score` in tests/test_tagging.py), never from the graph. The odd sentences the
Python pipeline can read (a 100,000-character sentence cut by the sequence length, words that
tokenize to nothing, U+FFFD from invalid bytes) go through a CoNLL file of their own. The
feature-based tagger is served too under ZOO_ALL_STYLES=1.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import saved_model_signatures, serve_fresh
from tests.test_signatures_batch import assert_every_input_batches
from tests.test_tagging import fine_tuned_run, overrides  # noqa: F401  (a fixture)
from zoo import config as config_lib
from zoo.data.tagging import align_tokens
from zoo_tasks import runs


def _conll(path, sentences):
    """A 2-column CoNLL file of `sentences` (lists of words), every tag O."""
    path.write_text("".join("".join(f"{w} O\n" for w in s) + "\n" for s in sentences),
                    encoding="utf-8")
    return str(path)


def _export(run_dir, root):
    saved = runs.export_run(str(run_dir), str(root / "export"), progress=lambda line: None)
    _, task, model = runs.load_task(str(run_dir))
    return saved, task, model


def _train_and_export(sample_data, root, *extra):
    run_dir = root / "run"
    config = config_lib.resolve("bert/conll2003", overrides(sample_data, *extra))
    runs.train(config, str(run_dir))
    return _export(run_dir, root)


def _rows(result):
    """[(words, tags)] of a serving_default result, the "" padding removed."""
    rows = []
    for words, tags in zip(result["words"], result["tags"]):
        n = sum(1 for w in words if w)
        assert all(not w for w in words[n:]) and all(not t for t in tags[n:])
        rows.append(([w.decode() for w in words[:n]], [t.decode() for t in tags[:n]]))
    return rows


@pytest.fixture(scope="module")
def fine_tuned(fine_tuned_run, tmp_path_factory):
    """The fine-tuned run of tests/test_tagging.py (trained once for both files), exported."""
    return _export(fine_tuned_run[0], tmp_path_factory.mktemp("export_ner"))


def test_fine_tuned_export_equals_predict(fine_tuned, tmp_path):
    saved, task, model = fine_tuned
    dev = task.examples("dev")["words"]
    expected, _ = task.predict(model, "dev")
    assert sum(t != "O" for s in expected for t in s) > 0  # the run tags entities
    # Odd sentences, read by the Python pipeline from a file of their own.
    vocabulary = [w for s in dev for w in s]
    long, size = [], 0
    while size < 100_000:
        long.append(vocabulary[len(long) % len(vocabulary)])
        size += len(long[-1]) + 1
    odd = [long, dev[0][:2] + ["\xad"] + dev[0][2:], ["\x07", *dev[1], "\x07"],
           ["Anna", "\ufffd\ufffd", "lives", "in", "\ufffdParis"]]
    odd_expected, unpredicted = task.predict(model, path=_conll(tmp_path / "odd.txt", odd))
    assert unpredicted > len(long) - 48  # the cut words and the empty ones are "O"
    texts = [" ".join(s) for s in dev]
    odd_texts = [" ".join(long), " ".join(odd[1]), "\t".join(odd[2]),
                 b"Anna \xff\xfe lives  in\n\xc3Paris"]
    x = align_tokens(tf.ragged.constant(dev[:4]), task.tokenizer,
                     task.config.data.sequence_length)
    x = {key: x[key] for key in ("token_ids", "segment_ids", "padding_mask")}
    results = serve_fresh(saved, [
        {"text": texts}, {"text": odd_texts},
        {"text": ["", "   ", dev[2][0]]}, {"text": np.array([], object)},
        ("serving_ids", {k: v.numpy() for k, v in x.items()}), {"text": [""]}], show=True)
    signatures = saved_model_signatures(saved)
    signatures.pop("__saved_model_init_op", None)
    assert signatures == {
        "serving_default": ({"text"}, {"words", "tags"}),
        "serving_ids": ({"token_ids", "segment_ids", "padding_mask"}, {"probabilities", "tags"})}
    assert_every_input_batches(saved, "tagging")
    assert _rows(results[0]) == list(zip(dev, expected))
    assert len(dev) >= 50 and results[0]["words"].shape[1] == max(map(len, dev))
    assert _rows(results[1]) == list(zip(odd, odd_expected))
    # Empty and blank texts have no words: their rows are all "".
    assert results[2]["words"].shape == (3, 1)
    assert results[2]["words"][:2].tolist() == [[b""], [b""]]
    assert results[2]["tags"][:2].tolist() == [[b""], [b""]]
    assert results[3]["words"].shape == results[3]["tags"].shape == (0, 0)
    probabilities = model.predict_on_batch(x)["logits"]
    probabilities = np.exp(probabilities - probabilities.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    np.testing.assert_allclose(results[4]["probabilities"], probabilities, atol=1e-5)
    names = np.array(task.labels)[probabilities.argmax(-1)]
    assert results[4]["tags"].astype(str).tolist() == names.tolist()
    assert results[5]["words"].shape == results[5]["tags"].shape == (1, 0)


def test_a_converted_run_tags_like_the_export_in_transformers_pipeline(fine_tuned,
                                                                       fine_tuned_run, tmp_path):
    """`zoo convert RUN OUT --to hf` (issue 20): BertForTokenClassification with the tag names
    as id2label gives the run's logits on the dev sentences, and `pipeline("token-
    classification")` on their raw text tags each word's first sub-token as `predict` does
    (whose tags the export serves: test_fine_tuned_export_equals_predict)."""
    import torch
    import transformers

    from zoo_cli.main import main as cli

    _, task, model = fine_tuned
    out = tmp_path / "hf"
    assert cli(["convert", str(fine_tuned_run[0]), str(out), "--to", "hf"]) == 0
    hf = transformers.AutoModelForTokenClassification.from_pretrained(out).eval()
    assert [hf.config.id2label[i] for i in range(len(task.labels))] == list(task.labels)
    dev = task.examples("dev")["words"]
    x = align_tokens(tf.ragged.constant(dev), task.tokenizer, task.config.data.sequence_length)
    x = {key: x[key].numpy() for key in ("token_ids", "segment_ids", "padding_mask")}
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                    token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long)).logits
    real = x["padding_mask"] > 0
    difference = np.max(np.abs(model.predict_on_batch(x)["logits"][real] - theirs.numpy()[real]))
    print(f"\nCoNLL dev: max |zoo - transformers| logit {difference:.1e}")
    assert difference <= 1e-4

    expected, _ = task.predict(model, "dev")
    tag = transformers.pipeline("token-classification", model=str(out), device="cpu",
                                ignore_labels=[])  # every token, "O" too
    length = task.config.data.sequence_length
    compared = 0
    for words, tags, tokens in zip(dev, expected, tag([" ".join(words) for words in dev])):
        if len(tokens) > length - 2:
            continue  # zoo cuts longer sentences at the sequence length, the pipeline not
        first = {token["start"]: token["entity"] for token in tokens}
        starts = np.cumsum([0] + [len(word) + 1 for word in words[:-1]])
        assert [first[int(start)] for start in starts] == tags, words
        compared += 1
    assert compared >= 40 and sum(t != "O" for s in expected for t in s) > 0


@pytest.mark.skipif(os.environ.get("ZOO_ALL_STYLES") != "1", reason=(
    "reduced form: a second run, export and serving process cost ~35 s; the feature-based "
    "model shares the serving code of the fine-tuned one; ZOO_ALL_STYLES=1 runs it"))
def test_feature_based_export_equals_predict(sample_data, tmp_path):
    """The feature-based tagger (frozen encoder, BiLSTM, classifier) serves like predict."""
    saved, task, model = _train_and_export(
        sample_data, tmp_path, "model.features=sum_last_four", "model.lstm_units=8",
        "model.backbone.num_layers=4", "train.steps=4")
    assert type(model).__name__ == "BertFeatureTagger"
    path = _conll(tmp_path / "few.txt", task.examples("dev")["words"][:8])
    sentences = task.examples("dev", path)["words"]
    expected, _ = task.predict(model, path=path)
    served = serve_fresh(saved, [{"text": [" ".join(s) for s in sentences]}])[0]
    assert _rows(served) == list(zip(sentences, expected))
