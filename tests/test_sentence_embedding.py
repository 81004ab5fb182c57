"""Sentence embeddings against sentence-transformers: a tiny random BERT saved as a
sentence-transformers folder (by sentence-transformers itself: Transformer, Pooling and
Normalize modules) gives through `zoo.embeddings.load(...).encode` the vectors of
`SentenceTransformer(folder).encode` within 1e-5, for each pooling mode with and without
normalization, on texts of different lengths (padding matters), an empty one and one cut at
max_seq_length; under JAX and torch too. The in-batch-negatives loss equals
sentence-transformers' MultipleNegativesRankingLoss on the same vectors, and the ranking
metrics equal scikit-learn's. The task and its export: tests/test_sentence_embedding_export.py.
"""

import numpy as np
import pytest

from tests.harness import run_in_backend

WORDS = ("the a man woman dog cat runs eats food park big small red blue happy sad movie film "
         "good bad great plot actor scene long short very not".split())
TEXTS = ["the man eats food", "a dog", "", "the big red dog runs in the park , happy",
         "movie", "unknownword xyz the film was very very good " * 6,
         "A Woman, NOT sad!"]
MAX_SEQ_LENGTH = 24
MODES = [(pooling, normalize) for pooling in ("mean", "cls", "max")
         for normalize in (False, True)]


def write_hf_bert(folder, seed=0):
    """A random transformers BertModel (safetensors) and a fast WordPiece tokenizer of WORDS
    (tokenizer.json only, as all-MiniLM-L6-v2 ships it) in `folder`."""
    import os

    import torch
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", "!", "."] + WORDS + [
        "##s", "##x", "##y", "##z", "un", "##known", "##word"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizerFast(str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(str(folder))
    os.remove(folder / "vocab.txt")
    torch.manual_seed(seed)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37,
                                     max_position_embeddings=64)
    model = transformers.BertModel(config)
    with torch.no_grad():  # LayerNorms and biases off their 1 / 0 initialisation
        for name, parameter in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                parameter.add_(0.1 * torch.randn_like(parameter))
    model.save_pretrained(str(folder), safe_serialization=True)


def write_sentence_transformers(hf_folder, folder, pooling, normalize):
    """`hf_folder` as a sentence-transformers folder saved by sentence-transformers."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules

    transformer = modules.Transformer(str(hf_folder), max_seq_length=MAX_SEQ_LENGTH)
    stack = [transformer, modules.Pooling(transformer.get_embedding_dimension(),
                                          pooling_mode=pooling)]
    if normalize:
        stack.append(modules.Normalize())
    SentenceTransformer(modules=stack, device="cpu").save(str(folder))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """{(pooling, normalize): a sentence-transformers folder} of one random BERT."""
    root = tmp_path_factory.mktemp("sentence_transformers")
    write_hf_bert(root / "bert")
    result = {}
    for pooling, normalize in MODES:
        folder = root / f"{pooling}_{int(normalize)}"
        write_sentence_transformers(root / "bert", folder, pooling, normalize)
        result[pooling, normalize] = folder
    return result


def reference(folder, texts=TEXTS):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    return model.encode(texts, batch_size=3, convert_to_numpy=True)


@pytest.mark.parametrize("pooling, normalize", MODES)
def test_encode_equals_sentence_transformers(folders, pooling, normalize):
    import zoo.embeddings

    folder = folders[pooling, normalize]
    settings = zoo.embeddings.folder_settings(str(folder))
    assert (settings["pooling"], settings["normalize"], settings["max_seq_length"]) == (
        pooling, normalize, MAX_SEQ_LENGTH)
    encoder = zoo.embeddings.load(str(folder))
    # Batches of 3 pad each text to a different length than alone; 1: no padding at all.
    ours = encoder.encode(TEXTS, batch_size=3, progress=False)
    alone = encoder.encode(TEXTS, batch_size=1, progress=False)
    expected = reference(folder)
    assert ours.shape == expected.shape == (len(TEXTS), 32) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(alone, expected, atol=1e-5, rtol=0)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(ours, axis=-1), 1, atol=1e-5)


def test_encode_any_length_and_normalize(folders):
    import zoo.embeddings

    encoder = zoo.embeddings.load(str(folders["mean", False]))
    assert encoder.encode([], progress=False).shape == (0, 32)
    many = TEXTS * 5  # 35 texts: batches of 32 and 3
    vectors = encoder.encode(many, progress=True)
    np.testing.assert_allclose(vectors, np.tile(reference(folders["mean", False]), (5, 1)),
                               atol=1e-5, rtol=0)
    normalized = encoder.encode(TEXTS, normalize=True, progress=False)
    np.testing.assert_allclose(normalized, reference(folders["mean", True]), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="normalize=False"):
        zoo.embeddings.load(str(folders["mean", True])).encode(TEXTS, normalize=False)


def test_bad_folders_are_refused_in_one_line(folders, tmp_path):
    import json
    import shutil

    import zoo.embeddings
    from zoo.convert import ConversionError

    folder = tmp_path / "weighted"
    shutil.copytree(folders["mean", False], folder)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"embedding_dimension": 32, "pooling_mode": "weightedmean"}))
    with pytest.raises(ConversionError, match=r"1_Pooling.config\.json: pooling \['weighted"):
        zoo.embeddings.load(str(folder))
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ConversionError, match="modules.json: modules .*Dense.* not supported"):
        zoo.embeddings.load(str(folder))
    with pytest.raises(FileNotFoundError, match="no such folder"):
        zoo.embeddings.load(str(tmp_path / "missing"))


def test_keras_round_trip(folders, tmp_path):
    import keras

    import zoo.embeddings

    encoder = zoo.embeddings.load(str(folders["max", True]))
    path = str(tmp_path / "embedder.keras")
    encoder.model.save(path)
    loaded = keras.saving.load_model(path)
    assert (type(loaded).__name__, loaded.pooling, loaded.normalize) == (
        "BertTextEmbedder", "max", True)
    again = zoo.embeddings.SentenceEncoder(loaded, encoder.tokenizer, MAX_SEQ_LENGTH)
    np.testing.assert_allclose(again.encode(TEXTS, progress=False),
                               reference(folders["max", True]), atol=1e-5, rtol=0)


def encode_all(root, names):
    """The folders `names` (comma-separated) under `root` encoded (run under another backend
    by `run_in_backend`)."""
    import os

    import zoo.embeddings

    return {name: zoo.embeddings.load(os.path.join(root, name)).encode(
        TEXTS, batch_size=3, progress=False) for name in names.split(",")}


# Each backend pools all three ways, normalizing in turn: the six cases between the two.
BACKEND_CASES = {"jax": [("mean", False), ("cls", True), ("max", False)],
                 "torch": [("mean", True), ("cls", False), ("max", True)]}


@pytest.mark.parametrize("backend", list(BACKEND_CASES))
def test_other_backends_equal_sentence_transformers(folders, backend):
    chosen = [folders[case] for case in BACKEND_CASES[backend]]
    results = run_in_backend(backend, "tests.test_sentence_embedding:encode_all",
                             chosen[0].parent, ",".join(f.name for f in chosen))
    assert sorted(results) == sorted(f.name for f in chosen)
    for folder in chosen:
        np.testing.assert_allclose(results[folder.name], reference(folder), atol=1e-5, rtol=0,
                                   err_msg=f"{backend} {folder.name}")


def test_loss_equals_multiple_negatives_ranking_loss():
    import torch
    from sentence_transformers.sentence_transformer import losses

    from zoo_tasks.sentence_embedding import MultipleNegativesRankingLoss

    rng = np.random.default_rng(0)
    anchors, positives = rng.normal(size=(2, 6, 16)).astype("float32")
    interleaved = np.stack([anchors, positives], axis=1).reshape(12, 16)
    ours = float(MultipleNegativesRankingLoss()(np.zeros(12, "float32"), interleaved))
    reference_loss = losses.MultipleNegativesRankingLoss(model=None)  # scale 20, cos_sim
    expected = float(reference_loss.compute_loss_from_embeddings(
        [torch.from_numpy(anchors), torch.from_numpy(positives)], None))
    assert ours == pytest.approx(expected, abs=1e-5)


def test_ranking_metrics_equal_sklearn():
    from sklearn.metrics import label_ranking_average_precision_score, top_k_accuracy_score

    from zoo.metrics import sentence_embedding

    rng = np.random.default_rng(1)
    scores = rng.normal(size=(40, 40))
    scores[3, 7] = scores[3, 3]  # a tie with the right candidate counts against it
    scores[5] = 0.0  # all tied: rank n
    relevant = np.eye(40, dtype=int)
    assert sentence_embedding.compute(scores)["mrr"] == pytest.approx(
        label_ranking_average_precision_score(relevant, scores))
    untied = rng.normal(size=(40, 40))  # top_k_accuracy_score breaks ties the other way
    result = sentence_embedding.compute(untied)
    assert result["mrr"] == pytest.approx(label_ranking_average_precision_score(relevant,
                                                                                untied))
    for k in (1, 5):
        assert result[f"recall_at_{k}"] == pytest.approx(
            top_k_accuracy_score(np.arange(40), untied, k=k, labels=np.arange(40)))


def test_names_load_through_the_hub(folders, tmp_path, monkeypatch):
    """`hf://ORG/NAME` and the pretrained preset all_minilm_l6_v2, served by the test hub
    (tests/hub_server.py) with the tiny folder under the preset's real repo name: the same
    vectors as sentence-transformers' on the folder (pooling and Normalize downloaded too)."""
    import zoo.embeddings
    from tests.hub_server import HubServer, point_huggingface_hub_at

    server = HubServer()
    try:
        folder = folders["mean", True]
        server.add("org/embedder", folder)
        server.add("sentence-transformers/all-MiniLM-L6-v2", folder)
        point_huggingface_hub_at(server, tmp_path / "hub", monkeypatch)
        expected = reference(folder)
        for name in ("hf://org/embedder", "all_minilm_l6_v2"):
            encoder = zoo.embeddings.load(name)
            assert (encoder.model.pooling, encoder.model.normalize) == ("mean", True), name
            np.testing.assert_allclose(encoder.encode(TEXTS, progress=False), expected,
                                       atol=1e-5, rtol=0, err_msg=name)
    finally:
        server.close()
