"""From a checkpoint's name to a served answer (issue #62): small fine-tuned checkpoints made by
transformers (tests/hub_heads.py) are published on a Hugging Face Hub on 127.0.0.1
(tests/hub_server.py), exported by `zoo export --model hf://...` with no training run, loaded in
a process that imports only tensorflow and tensorflow_text, and asked what transformers'
pipelines are asked on the same folders: their answers must be the pipelines' (and where
transformers 5 has no pipeline, its model's outputs decoded as the pipeline did).
"""

import json
import os

import numpy as np
import pytest
import torch
import transformers

import zoo
import zoo_tasks
from tests import hub_heads
from tests.harness import serve_fresh
from tests.hub_server import HubServer, point_huggingface_hub_at
from zoo import config as config_lib
from zoo import convert
from zoo.training import starting_points
from zoo_cli.main import main as cli

# repo -> (maker, its arguments): one checkpoint of each head zoo serves.
REPOS = {
    "org/sentiment": (hub_heads.text_classifier, ()),
    "org/topics": (hub_heads.text_classifier, ("multi_label_classification",)),
    "org/score": (hub_heads.text_classifier, ("regression",)),
    "org/ner": (hub_heads.token_classifier, ()),
    "org/reader": (hub_heads.question_answerer, ()),
    "org/choices": (hub_heads.multiple_choice, ()),
    "org/mlm": (hub_heads.masked_lm, ()),
    "openai-community/openai-gpt": (hub_heads.gpt_lm, ()),  # gpt1_openai's repo
    "org/colours": (hub_heads.image_classifier, ()),
    "org/minilm": (hub_heads.sentence_transformer, ()),
}
EXPORTED = ("org/sentiment", "org/ner", "org/reader", "org/choices", "org/mlm",
            "openai-community/openai-gpt", "org/colours", "org/minilm")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The checkpoints made once, served; each exported once with `zoo export --model`."""
    root = tmp_path_factory.mktemp("heads")
    server = HubServer()
    server.folders = {}
    for repo, (make, arguments) in REPOS.items():
        server.folders[repo] = make(root / repo.replace("/", "--"), *arguments)
        server.add(repo, server.folders[repo])
    # A BertModel (no head) and a head zoo does not read, for the refusals.
    plain = root / "plain"
    transformers.BertModel(hub_heads._bert_config()).save_pretrained(plain)
    hub_heads._write_wordpiece(plain)
    server.add("org/plain", plain)
    bare = root / "bare"  # weights and config, no tokenizer files
    transformers.BertForSequenceClassification(hub_heads._bert_config()).save_pretrained(bare)
    server.add("org/untokenized", bare)
    other = root / "other"
    transformers.BertLMHeadModel(hub_heads._bert_config(is_decoder=True)).save_pretrained(other)
    server.add("org/decoder", other)
    monkeypatch = pytest.MonkeyPatch()
    try:
        point_huggingface_hub_at(server, root / "cache", monkeypatch)
        server.exports = {}
        for repo in EXPORTED:
            base = root / "exports" / repo.replace("/", "--")
            assert cli(["export", "--model", f"hf://{repo}", "--out", str(base)]) == 0
            server.exports[repo] = base / "1"
        yield server
    finally:
        monkeypatch.undo()
        server.close()


def _pipeline(task, folder, **options):
    return transformers.pipeline(task, model=str(folder), device="cpu", **options)


def _served(hub):
    """Every export asked in one fresh process: {repo: outputs}."""
    calls = {
        "org/sentiment": {"text": hub_heads.SENTENCES},
        "org/ner": {"text": hub_heads.TAGGED_SENTENCES},
        "org/reader": {"question": [q for q, _ in hub_heads.QA],
                       "context": [c for _, c in hub_heads.QA]},
        "org/choices": {"context": [c for c, _ in hub_heads.CHOICES],
                        "choices": [endings for _, endings in hub_heads.CHOICES]},
        "org/mlm": {"text": hub_heads.MASKED},
        "openai-community/openai-gpt": {"prompt": hub_heads.PROMPTS, "max_new_tokens": 6},
        "org/colours": {"image_bytes": hub_heads.images()},
        "org/minilm": {"text": hub_heads.SENTENCES},
    }
    answers = serve_fresh(hub.exports["org/sentiment"], [
        (hub.exports[repo], "serving_default", inputs) for repo, inputs in calls.items()])
    return dict(zip(calls, answers))


@pytest.fixture(scope="module")
def served(hub):
    return _served(hub)


def _text(values):
    return [v.decode() if isinstance(v, bytes) else v for v in values]


def test_the_export_records_the_repo_and_commit_and_has_a_run_s_signatures(hub):
    metadata = json.loads((hub.exports["org/sentiment"] / "zoo_export.json").read_text())
    assert metadata["task"] == "text_classification"
    assert metadata["source"]["repo"] == "org/sentiment"
    assert len(metadata["source"]["commit"]) == 40
    assert set(metadata["signatures"]) == {"serving_default", "serving_ids"}


def test_a_classifier_answers_as_the_text_classification_pipeline(hub, served):
    expected = _pipeline("text-classification", hub.folders["org/sentiment"],
                         top_k=None)(hub_heads.SENTENCES)
    out = served["org/sentiment"]
    for row, scores in enumerate(expected):
        by_label = {entry["label"]: entry["score"] for entry in scores}
        np.testing.assert_allclose(out["probabilities"][row],
                                   [by_label[name] for name in hub_heads.SENTIMENT], atol=1e-5)
        assert out["label"][row].decode() == max(by_label, key=by_label.get)
    assert len(set(_text(out["label"]))) > 1  # a classifier that learned something


def test_multi_label_and_regression_heads_predict_as_transformers(hub):
    topics = zoo_tasks.load("hf://org/topics")
    expected = _pipeline("text-classification", hub.folders["org/topics"],
                         top_k=None)(hub_heads.SENTENCES)  # sigmoid a label
    for ours, theirs in zip(topics.predict(hub_heads.SENTENCES), expected):
        by_label = {entry["label"]: entry["score"] for entry in theirs}
        np.testing.assert_allclose(ours["probabilities"],
                                   [by_label[name] for name in hub_heads.SENTIMENT], atol=1e-5)
        assert [name for name in ours["labels"] if name] == [
            name for name in hub_heads.SENTIMENT if by_label[name] >= 0.5]
    # A regression: the pipeline gives sigmoid(score); the model's own output is the score.
    folder = hub.folders["org/score"]
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokens = transformers.AutoTokenizer.from_pretrained(folder)(
        hub_heads.SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        scores = model(**tokens).logits[:, 0].numpy()
    ours = [row["score"] for row in zoo_tasks.load("org/score").predict(hub_heads.SENTENCES)]
    np.testing.assert_allclose(ours, scores, atol=1e-5)


def test_a_tagger_finds_the_token_classification_pipeline_s_entity_groups(hub, served):
    expected = _pipeline("token-classification", hub.folders["org/ner"],
                         aggregation_strategy="simple")(hub_heads.TAGGED_SENTENCES)
    out = served["org/ner"]
    found = 0
    for words, tags, groups in zip(out["words"], out["tags"], expected):
        ours = _entity_groups(_text(words), _text(tags))
        assert ours == [(group["entity_group"], group["word"]) for group in groups]
        found += len(ours)
    assert found >= 3


def _entity_groups(words, tags):
    """IOB2 word tags as the pipeline's "simple" groups: (type, the words joined by spaces,
    lower-cased as the tokenizer reads them, without the punctuation a whitespace-split word
    carries and the pipeline tags apart, "York." as "york")."""
    groups, previous = [], "O"
    for word, tag in zip(words, tags):
        if not word:
            continue
        word = word.lower().strip(".,!?")
        if tag != "O" and not tag.startswith("B-") and previous[2:] == tag[2:]:
            groups[-1] = (groups[-1][0], groups[-1][1] + " " + word)
        elif tag != "O":
            groups.append((tag[2:], word))
        previous = tag
    return groups


def test_a_reader_gives_the_span_transformers_model_scores_highest(hub, served):
    folder = hub.folders["org/reader"]
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    out = served["org/reader"]
    for row, (question, context) in enumerate(hub_heads.QA):
        encoded = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")
        offsets = encoded.pop("offset_mapping")[0].tolist()
        in_context = [i for i, s in enumerate(encoded.sequence_ids(0)) if s == 1]
        with torch.no_grad():
            logits = model(**encoded)
        start, end = logits.start_logits[0].numpy(), logits.end_logits[0].numpy()
        # The question-answering pipeline's decoding (transformers 4): the best start + end in
        # the context, end not before start, at most 15 tokens.
        best = max(((start[s] + end[e], s, e) for s in in_context for e in in_context
                    if s <= e < s + 15))
        _, s, e = best
        assert (out["start_char"][row], out["end_char"][row]) == (offsets[s][0], offsets[e][1])
        assert out["answer"][row].decode() == context[offsets[s][0]:offsets[e][1]]


def test_a_masked_lm_fills_in_the_fill_mask_pipeline_s_top_five(hub, served):
    folder = hub.folders["org/mlm"]
    expected = _pipeline("fill-mask", folder, top_k=5)(hub_heads.MASKED)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    out = served["org/mlm"]
    for row, candidates in enumerate(expected):
        tokens = tokenizer.convert_ids_to_tokens([c["token"] for c in candidates])
        assert _text(out["tokens"][row][0]) == tokens
        np.testing.assert_allclose(out["scores"][row][0], [c["score"] for c in candidates],
                                   atol=1e-5)


def test_an_image_classifier_answers_as_the_image_classification_pipeline(hub, served):
    import io

    from PIL import Image

    images = [Image.open(io.BytesIO(data)) for data in hub_heads.images()]
    expected = _pipeline("image-classification", hub.folders["org/colours"], top_k=None)(images)
    out = served["org/colours"]
    for row, scores in enumerate(expected):
        by_label = {entry["label"]: entry["score"] for entry in scores}
        np.testing.assert_allclose(out["probabilities"][row],
                                   [by_label[name] for name in hub_heads.COLOURS], atol=1e-5)
    assert _text(out["label"]) == list(hub_heads.COLOURS)


def test_gpt1_generates_as_the_text_generation_pipeline_greedy(hub, served, capsys):
    folder = hub.folders["openai-community/openai-gpt"]
    generate = _pipeline("text-generation", folder)
    expected = [generate(prompt, do_sample=False, max_new_tokens=6,
                         return_full_text=False)[0]["generated_text"]
                for prompt in hub_heads.PROMPTS]
    assert [text.strip() for text in _text(served["openai-community/openai-gpt"]["completion"])
            ] == [text.strip() for text in expected]
    # `zoo generate --model gpt1_openai`: the preset's repo, served with GPT-1-shaped weights.
    capsys.readouterr()
    with pytest.warns(UserWarning, match="not of size gpt1"):
        assert cli(["generate", "--model", "gpt1_openai", "--prompt", hub_heads.PROMPTS[0],
                    "--max-new-tokens", "6"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].strip() == expected[0].strip()


def test_a_sentence_transformers_folder_encodes_as_sentence_transformers(hub, served):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(hub.folders["org/minilm"]), device="cpu")
    np.testing.assert_allclose(served["org/minilm"]["embedding"],
                               reference.encode(hub_heads.SENTENCES), atol=1e-5)
    ours = zoo_tasks.load("hf://org/minilm").encode(hub_heads.SENTENCES)
    np.testing.assert_allclose(ours, reference.encode(hub_heads.SENTENCES), atol=1e-5)


def test_multiple_choice_scores_as_transformers_model(hub, served):
    """transformers has no multiple-choice pipeline: its model's softmax over the choices."""
    folder = hub.folders["org/choices"]
    model = transformers.AutoModelForMultipleChoice.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    loaded = zoo_tasks.load("hf://org/choices")
    answers = loaded.predict([{"context": c, "choices": endings}
                              for c, endings in hub_heads.CHOICES])
    exported = served["org/choices"]
    np.testing.assert_allclose(exported["probabilities"],
                               [answer["probabilities"] for answer in answers], atol=1e-6)
    for (context, endings), answer in zip(hub_heads.CHOICES, answers):
        encoded = tokenizer([context] * len(endings), endings, padding=True,
                            return_tensors="pt")
        with torch.no_grad():
            logits = model(**{k: v[None] for k, v in encoded.items()}).logits[0]
        np.testing.assert_allclose(answer["probabilities"], torch.softmax(logits, -1).numpy(),
                                   atol=1e-5)
        assert answer["choice"] == int(logits.argmax())


def test_predict_by_name_gives_the_export_s_answers(hub, served, tmp_path, capsys):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps({"text": s}) + "\n" for s in hub_heads.SENTENCES))
    capsys.readouterr()
    assert cli(["predict", "--model", "org/sentiment", "--input", str(requests)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["label"] for line in lines] == _text(served["org/sentiment"]["label"])
    np.testing.assert_allclose([line["probabilities"] for line in lines],
                               served["org/sentiment"]["probabilities"], atol=1e-6)


def test_evaluate_by_name_scores_a_hub_classifier_on_your_file(hub, tmp_path, capsys):
    expected = _pipeline("text-classification", hub.folders["org/sentiment"])(
        hub_heads.SENTENCES)
    gold = ["positive", "negative", "neutral", "negative", "neutral", "positive"]
    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "".join(f'"{s}",{g}\n'
                                             for s, g in zip(hub_heads.SENTENCES, gold)))
    capsys.readouterr()
    assert cli(["evaluate", "--model", "hf://org/sentiment", "--data", str(data)]) == 0
    metrics = json.loads(capsys.readouterr().out.splitlines()[-1])
    accuracy = np.mean([e["label"] == g for e, g in zip(expected, gold)])
    assert metrics["accuracy"] == pytest.approx(accuracy)


def test_a_classifier_is_scored_on_a_benchmark_file_by_label_index(hub, tmp_path, capsys):
    """`zoo evaluate --model --task snli`: the three-way head read as SNLI's three labels, in
    order; the reference is transformers' model on the same pairs and scikit-learn's score."""
    from sklearn.metrics import accuracy_score

    pairs = [(a, b) for a in hub_heads.SENTENCES[:4] for b in hub_heads.SENTENCES[2:5]]
    names = ("contradiction", "entailment", "neutral")  # SNLI's labels, in zoo's order
    gold = [names[i % 3] for i in range(len(pairs))]
    data = tmp_path / "snli_1.0_dev.jsonl"
    data.write_text("".join(json.dumps({"pairID": str(i), "sentence1": a, "sentence2": b,
                                        "gold_label": g}) + "\n"
                            for i, ((a, b), g) in enumerate(zip(pairs, gold))))
    folder = hub.folders["org/sentiment"]
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    encoded = transformers.AutoTokenizer.from_pretrained(folder)(
        [a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        predicted = [names[i] for i in model(**encoded).logits.argmax(-1).tolist()]
    capsys.readouterr()
    assert cli(["evaluate", "--model", "hf://org/sentiment", "--task", "snli", "--data",
                str(data), "--out", str(tmp_path / "scored")]) == 0
    metrics = json.loads(capsys.readouterr().out.splitlines()[0])
    assert metrics["accuracy"] == pytest.approx(accuracy_score(gold, predicted))
    assert len(set(predicted)) > 1
    assert os.listdir(tmp_path / "scored")


@pytest.mark.parametrize("source, says", [
    ("hf://org/plain", r"hf://org/plain: BertModel .*no task head; give the task \(--task"),
    ("hf://org/decoder", r"hf://org/decoder: architecture BertLMHeadModel \(config.json\) is "
                         r"not one zoo reads"),
    ("hf://org/untokenized", r"hf://org/untokenized \(org/untokenized@\w{12}\): .*no "
                             r"vocabulary files; expected vocab.txt"),
])
def test_what_cannot_be_served_is_one_line_naming_the_repo(hub, source, says):
    with pytest.raises((config_lib.ConfigError, convert.ConversionError, FileNotFoundError),
                       match=says) as error:
        zoo_tasks.load(source)
    assert "\n" not in str(error.value)


def test_a_missing_head_tensor_is_refused_naming_the_repo(hub, tmp_path):
    from safetensors.numpy import load_file, save_file

    broken = tmp_path / "broken"
    broken.mkdir()
    for name in os.listdir(hub.folders["org/sentiment"]):
        (broken / name).write_bytes((hub.folders["org/sentiment"] / name).read_bytes())
    tensors = load_file(broken / "model.safetensors")
    del tensors["classifier.bias"]
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    hub.add("org/broken", broken)
    with pytest.raises(convert.ConversionError,
                       match=r"hf://org/broken \(org/broken@\w{12}\): 1 tensor\(s\) "
                             r"missing .*classifier.bias"):
        zoo_tasks.load("hf://org/broken")


def test_training_from_a_fine_tuned_head_keeps_it_when_the_labels_match(hub):
    config = config_lib.resolve({"task": "text_classification", "model": {
        "preset": "bert_base", "init_checkpoint": "hf://org/sentiment"},
        "data": {"labels": list(hub_heads.SENTIMENT)}})
    task = zoo_tasks.create("text_classification", config, check_data=False)
    model = task.build_model()
    said = starting_points.keep_head(config.model, task.labels, model)
    assert said.endswith("its BertForSequenceClassification head is kept (labels "
                         "['negative', 'neutral', 'positive'])")
    np.testing.assert_allclose(
        zoo_tasks.load("hf://org/sentiment").model.get_weights()[-1], model.get_weights()[-1])
    # The same folder on disk, under other label names.
    config.model.init_checkpoint = str(hub.folders["org/sentiment"])
    config.data.labels = ["bad", "good", "meh"]
    task = zoo_tasks.create("text_classification", config, check_data=False)
    said = starting_points.keep_head(config.model, task.labels, task.build_model())
    assert "head is replaced by a new one" in said and "\n" not in said


def test_zoo_load_model_reads_a_fine_tuned_head_by_name(hub):
    model = zoo.load_model("org/reader", with_head=True)
    assert type(model).__name__ == "BertSpanQA"


def test_an_int8_export_by_name_gives_the_float32_export_s_labels(hub, served, tmp_path):
    base = tmp_path / "int8"
    assert cli(["export", "--model", "hf://org/sentiment", "--out", str(base),
                "--quantize", "int8"]) == 0
    assert json.loads((base / "1" / "zoo_export.json").read_text())["quantize"] == "int8"
    (out,) = serve_fresh(base / "1", [{"text": hub_heads.SENTENCES}])
    assert _text(out["label"]) == _text(served["org/sentiment"]["label"])
    np.testing.assert_allclose(out["probabilities"], served["org/sentiment"]["probabilities"],
                               atol=0.05)
