"""Checkpoints by name (issue #51): `hf://ORG/NAME[@REVISION]` and the pretrained presets,
downloaded by huggingface_hub's real client from a hub on 127.0.0.1 (tests/hub_server.py).

The served checkpoints are small random BERTs that transformers writes (`save_pretrained`), and
transformers, loading the same folders, is the reference for every number. A pretrained preset
is served under its real repo name with such weights: it loads with a warning that the size is
not the preset's, and it fine-tunes through `zoo train`.
"""

import json
import os

import numpy as np
import pytest
import torch
import transformers
from huggingface_hub import constants

import zoo
import zoo.convert
from tests.hub_server import HubServer, point_huggingface_hub_at
from zoo import hub, tokenizers
from zoo.models.presets import SIZES
from zoo.models.pretrained_presets import PRETRAINED
from zoo_cli.main import main as cli

WORDS = ["the", "film", "movie", "was", "good", "great", "bad", "awful", "plot", "fun", "dull",
         "a", "and", ",", "."]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
BERT = "google-bert/bert-base-uncased"


def _bert_folder(path, seed, model_type=None, weights="safetensors"):
    """A 1-layer, 32-wide BERT as transformers saves it, with a WordPiece vocabulary."""
    torch.manual_seed(seed)
    config = transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=64)
    model = transformers.BertModel(config)
    model.save_pretrained(path)
    if weights == "bin":  # transformers 5 writes safetensors only: a pickle, as older ones did
        torch.save(model.state_dict(), path / "pytorch_model.bin")
        (path / "model.safetensors").unlink()
    (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    if model_type is not None:
        config = json.loads((path / "config.json").read_text())
        (path / "config.json").write_text(json.dumps({**config, "model_type": model_type}))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    server = HubServer()
    server.folders = {"a": _bert_folder(root / "a", 0), "b": _bert_folder(root / "b", 1)}
    server.commits = {
        "main": server.add("org/bert", server.folders["a"]),
        "v2": server.add("org/bert", server.folders["b"], revision="v2"),
        "preset": server.add(BERT, server.folders["a"]),
    }
    server.add("org/gated", server.folders["a"])
    server.gate("org/gated", "hf_granted")
    server.add("org/pickle", _bert_folder(root / "pickle", 0, weights="bin"))
    server.add("org/roberta", _bert_folder(root / "roberta", 0, model_type="roberta"))
    (root / "words").mkdir()
    (root / "words" / "vocab.txt").write_text("\n".join(VOCAB))
    server.add("org/words", root / "words")
    server.add("org/cut", server.folders["b"])
    vit = root / "vit"
    transformers.ViTModel(transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        image_size=32, patch_size=16)).save_pretrained(vit)
    server.add("google/vit-base-patch16-224-in21k", vit)
    server.add("google/vit-base-patch16-224", server.folders["a"])  # a BERT: wrong architecture
    torch.manual_seed(2)
    server.folders["gpt"] = root / "gpt"
    transformers.OpenAIGPTModel(transformers.OpenAIGPTConfig(
        vocab_size=len(VOCAB), n_positions=16, n_embd=32, n_layer=1, n_head=2)).save_pretrained(
        server.folders["gpt"])
    server.add("openai-community/openai-gpt", server.folders["gpt"])
    yield server
    server.close()


@pytest.fixture
def served(server, tmp_path, monkeypatch):
    """huggingface_hub pointed at the server with an empty cache of this test's own."""
    point_huggingface_hub_at(server, tmp_path / "hub", monkeypatch)
    server.gets.clear()
    return server


IDS = np.array([[2, 5, 6, 9, 17, 3, 0, 0], [2, 7, 8, 11, 12, 13, 14, 3]])


def _reference(folder):
    """transformers' BertModel on the served folder: the sequence and pooled outputs."""
    model = transformers.BertModel.from_pretrained(folder).eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(IDS), attention_mask=torch.tensor(IDS > 0))
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


def _outputs(backbone):
    out = backbone({"token_ids": IDS, "segment_ids": np.zeros_like(IDS),
                    "padding_mask": IDS > 0})
    return (np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"]))


def _close(actual, expected):
    mask = (IDS > 0)[..., None]  # padded positions differ by design of the mask
    np.testing.assert_allclose(actual[0] * mask, expected[0] * mask, atol=2e-5)
    np.testing.assert_allclose(actual[1], expected[1], atol=2e-5)


def test_a_revision_gives_its_own_weights_and_a_commit_pins_it(served):
    for revision, folder in (("v2", "b"), ("main", "a")):
        found = hub.checkpoint(f"hf://org/bert@{revision}", progress=False)
        assert found.commit == served.commits[revision]
        _close(_outputs(zoo.load_model(f"hf://org/bert@{revision}")),
               _reference(served.folders[folder]))
    pinned = hub.resolve(f"hf://org/bert@{served.commits['v2']}")
    assert os.path.basename(pinned) == served.commits["v2"]
    assert sorted(os.listdir(pinned)) == ["config.json", "model.safetensors",
                                          "tokenizer_config.json", "vocab.txt"]


def test_the_cache_is_reused_and_serves_offline(served, monkeypatch):
    first = hub.resolve("hf://org/bert")
    assert served.gets[("org/bert", "model.safetensors")] == 1
    # Another name for the same commit: huggingface_hub asks the hub, downloads nothing.
    assert hub.resolve("hf://org/bert@main") == first
    assert served.gets[("org/bert", "model.safetensors")] == 1
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    asked = len(served.requests)
    _close(_outputs(zoo.load_model("hf://org/bert")), _reference(served.folders["a"]))
    assert len(served.requests) == asked  # offline: not one request
    with pytest.raises(hub.HubError) as error:
        hub.resolve("hf://org/bert@v2")
    message = str(error.value)
    assert "\n" not in message and "HF_HUB_OFFLINE" in message
    assert "hf download org/bert --revision v2" in message
    assert "models--org--bert folder it fills" in message and constants.HF_HUB_CACHE in message


@pytest.mark.parametrize("source, says", [
    ("hf://org/nothing", "hf://org/nothing@main: no such repo on http://127.0.0.1"),
    ("hf://org/bert@v9", "hf://org/bert@v9: repo org/bert has no revision 'v9'"),
    ("hf://org/words", "hf://org/words@main: no config.json in the repo (its files: vocab.txt)"),
    ("hf://org/pickle", "hf://org/pickle@main: holds only pytorch_model.bin for weights (its "
                        "files: config.json, pytorch_model.bin, tokenizer_config.json, "
                        "vocab.txt)"),
    ("hf://org/roberta", "hf://org/roberta@main: model_type 'roberta' (config.json) is not an "
                         "architecture zoo has"),
    ("vit_base16_imagenet", "vit_base16_imagenet (google/vit-base-patch16-224@main): a bert "
                            "checkpoint, but preset vit_base16_imagenet is a ViTBackbone"),
    ("hf://org/gated", "hf://org/gated@main: a gated repo; accept its terms"),
])
def test_bad_names_are_one_line_naming_the_repo_and_download_no_weights(served, source, says):
    with pytest.raises(hub.HubError) as error:
        hub.resolve(source)
    assert str(error.value).startswith(says) and "\n" not in str(error.value)
    assert not [key for key in served.gets if key[1] != "config.json"]  # no weights fetched


def test_a_gated_repo_opens_with_the_token_in_hf_token(served, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    with pytest.raises(hub.HubError, match="the token given .* has no access"):
        hub.resolve("hf://org/gated")
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    _close(_outputs(zoo.load_model("hf://org/gated")),
           _reference(served.folders["a"]))


def test_a_download_cut_off_is_never_trusted_later(served, monkeypatch):
    # huggingface_hub retries a cut download 5 times, a second apart: no waiting here.
    monkeypatch.setattr("huggingface_hub.file_download.time.sleep", lambda _: None)
    served.cut("org/cut", "model.safetensors", times=6)
    with pytest.raises(hub.HubError, match="was cut off .* run it again"):
        hub.resolve("hf://org/cut")
    assert served.gets[("org/cut", "model.safetensors")] == 6
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(hub.HubError, match="is only partly in the cache"):
        hub.resolve("hf://org/cut")  # the half file is not taken for the weights
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    _close(_outputs(zoo.load_model("hf://org/cut")), _reference(served.folders["b"]))


def test_hf_names_work_in_convert_and_the_tokenizer_loaders(served, tmp_path):
    out = str(tmp_path / "bert.keras")
    assert cli(["convert", "hf://org/bert@v2", out]) == 0
    import keras

    _close(_outputs(keras.saving.load_model(out)), _reference(served.folders["b"]))
    reference = transformers.BertTokenizer.from_pretrained(served.folders["b"])
    text = ["The film was GREAT, and fun.", "a dull plot"]
    ours = tokenizers.from_huggingface("hf://org/bert@v2")(text).to_list()
    assert ours == [reference(t, add_special_tokens=False)["input_ids"] for t in text]


def test_a_pretrained_preset_under_its_real_name_loads_with_a_size_warning(served):
    with pytest.warns(UserWarning, match=r"not of size bert_base: vocabulary_size=20 \(not "
                                         r"30522\), .*num_layers=1 \(not 12\)"):
        backbone = zoo.load_model("bert_base_uncased")
    _close(_outputs(backbone), _reference(served.folders["a"]))
    assert hub.checkpoint("bert_base_uncased").commit == served.commits["preset"]


def test_the_gpt1_preset_loads_from_its_repo_as_transformers_reads_it(served):
    with pytest.warns(UserWarning, match="not of size gpt1"):
        backbone = zoo.load_model("gpt1_openai")
    reference = transformers.OpenAIGPTModel.from_pretrained(served.folders["gpt"]).eval()
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(IDS)).last_hidden_state.numpy()
    out = backbone({"token_ids": IDS, "padding_mask": np.ones_like(IDS, dtype=bool)})
    np.testing.assert_allclose(np.asarray(out["sequence_output"]), expected, atol=2e-5)


def test_a_vit_preset_loads_from_its_repo(served):
    with pytest.warns(UserWarning, match="not of size vit_base16"):
        backbone = zoo.load_model("vit_base16_in21k")
    assert type(backbone).__name__ == "ViTBackbone" and backbone.image_size == 32


def test_parameters_of_pretrained_presets_are_counted_without_a_download(served):
    """transformers' config defaults are bert-base-uncased's, openai-gpt's and
    vit-base-patch16-224's sizes: the counts of their models, built on the meta device."""
    with torch.device("meta"):
        references = {
            "bert_base_uncased": transformers.BertModel(transformers.BertConfig()),
            "gpt1_openai": transformers.OpenAIGPTModel(transformers.OpenAIGPTConfig()),
            "vit_base16_in21k": transformers.ViTModel(transformers.ViTConfig()),
        }
    for name, model in references.items():
        assert zoo.models.count_parameters(name) == model.num_parameters(), name
    assert not served.requests or served.requests[-1][1] != "/api/models"
    assert served.gets == {}


def test_a_pretrained_preset_fine_tunes_through_zoo_train(served, tmp_path):
    rows = [("the film was good", "positive"), ("a great movie", "positive"),
            ("the plot was dull", "negative"), ("an awful film", "negative")] * 4
    for split in ("train", "dev"):
        (tmp_path / f"{split}.csv").write_text(
            "review,sentiment\n" + "".join(f"{t},{s}\n" for t, s in rows))
    run_dir = tmp_path / "run"
    with pytest.warns(UserWarning, match="not of size bert_base"):
        code = cli(["train", "--experiment", "bert/text_classification", "--run-dir",
                    str(run_dir), "--set", "model.preset=bert_base_uncased",
                    "--set", f"data.train_file={tmp_path / 'train.csv'}",
                    "--set", f"data.dev_file={tmp_path / 'dev.csv'}",
                    "--set", "data.text_column=review", "--set", "data.label_column=sentiment",
                    "--set", "data.sequence_length=16", "--set", "train.batch_size=8",
                    "--set", "train.steps=4", "--set", "train.learning_rate=1e-3"])
    assert code == 0
    records = json.loads((run_dir / "hub.json").read_text())
    assert records[0]["repo"] == BERT and records[0]["commit"] == served.commits["preset"]
    assert (run_dir / "vocabulary" / "vocab.txt").read_text().split() == VOCAB
    assert (run_dir / "final.keras").exists()


def test_the_table_names_no_size_and_every_size_exists():
    assert not set(PRETRAINED) & set(SIZES)
    for name, entry in PRETRAINED.items():
        assert entry["size"] in SIZES and entry["revision"] and entry["license"], name
        assert hub.parse(name) == (entry["repo"], entry["revision"], name)


def test_a_keras_hub_preset_on_the_hub_loads_as_keras_hub_loads_it(served, tmp_path):
    """A repo in keras-hub's preset format (config.json + metadata.json + model.weights.h5)
    goes through zoo.convert.from_keras_hub; keras-hub's own `from_preset("hf://...")`,
    downloading from the same hub, is the reference."""
    import keras_hub

    keras_hub.models.BertBackbone(vocabulary_size=len(VOCAB), num_layers=1, num_heads=2,
                                  hidden_dim=16, intermediate_dim=32).save_to_preset(
        str(tmp_path / "preset"))
    served.add("org/keras-hub-bert", tmp_path / "preset")
    ours = zoo.load_model("hf://org/keras-hub-bert")
    assert hub.checkpoint("hf://org/keras-hub-bert").format == "keras-hub"
    reference = keras_hub.models.Backbone.from_preset("hf://org/keras-hub-bert")
    inputs = {"token_ids": IDS, "segment_ids": np.zeros_like(IDS), "padding_mask": IDS > 0}
    np.testing.assert_allclose(np.asarray(ours(inputs)["sequence_output"]),
                               np.asarray(reference(inputs)["sequence_output"]), atol=1e-5)


def test_zoo_presets_lists_a_pretrained_preset_with_its_repo_and_cache(served, capsys):
    assert cli(["presets", "bert_base_uncased", "bert_base"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["bert_base", "BertBackbone", "12", "x", "768,", "12",
                                "109,482,240"]
    assert lines[4].split() == ["bert_base_uncased", f"{BERT}@main", "bert_base",
                                "109,482,240", "no"]
    hub.resolve("bert_base_uncased")
    assert cli(["presets", "--pretrained", "bert_base_uncased"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[-1] == "yes"


def test_the_checkpoints_page_shows_the_table_as_it_is():
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "checkpoints.md"),
              encoding="utf-8") as file:
        rows = [[cell.strip() for cell in line.strip("|\n").split(" | ")]
                for line in file if line.startswith("| `")]
    shown = {row[0].strip("`"): row for row in rows if row[0].strip("`") in PRETRAINED}
    assert list(shown) == list(PRETRAINED)
    for name, (_, what, repo, size, parameters, licence) in shown.items():
        entry = PRETRAINED[name]
        assert (what, licence) == (entry["description"], entry["license"]), name
        assert repo == f"[{entry['repo']}](https://huggingface.co/{entry['repo']})", name
        assert size.split(":")[0] == entry["size"], name
        assert parameters == f"{zoo.models.count_parameters(name):,}", name
