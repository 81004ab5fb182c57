"""image_folder (ViT fine-tuning): training on the sample images, bad images, the ViT recipe's
optimizer, fine-tuning at a higher resolution than the checkpoint's.

Expected values come from outside the task code: the gold labels counted from the folders
(the majority-class baseline), the cosine formula written out (tests/test_optimization.py),
`ViTBackbone.with_image_size` on the checkpoint itself, sklearn's accuracy.
"""

import collections
import json
import os
import shutil

import keras
import numpy as np
import pytest
from sklearn.metrics import accuracy_score

import zoo_tasks
from tests.harness import shared_run
from tests.test_optimization import cosine_reference
from zoo import config as config_lib
from zoo import training
from zoo.data import DataError
from zoo_cli.main import main as cli

# A 2-layer, 64-wide ViT on 32-pixel images in 8-pixel patches (16 patches + class token).
TINY_VIT = ["model.preset=vit_tiny16", "model.backbone.image_size=32",
            "model.backbone.patch_size=8", "model.backbone.num_layers=2",
            "model.backbone.hidden_dim=64", "model.backbone.num_heads=2",
            "model.backbone.intermediate_dim=128"]


def image_overrides(data_dir, *extra):
    return TINY_VIT + [f"data.dir={data_dir}", "train.batch_size=32", "train.steps=60",
                       "train.eval_every=30", "train.warmup_steps=5",
                       "train.learning_rate=0.03", *extra]


def vit_run(sample_data, tmp_path_factory, worker_id):
    """The ViT of `image_overrides` trained once on the sample images for this file and
    test_image_classification_export (tests.harness.shared_run): (run directory, last metrics)."""
    config = config_lib.resolve("vit/image_folder",
                                image_overrides(sample_data["root"] / "images"))
    return shared_run(tmp_path_factory, worker_id, "vit_image_folder", config)


def test_image_folder_trains_and_beats_the_majority_class(sample_data, tmp_path_factory,
                                                          worker_id, capsys):
    images = sample_data["root"] / "images"
    run_dir, _ = vit_run(sample_data, tmp_path_factory, worker_id)
    assert not (run_dir / "vocabulary").exists()  # images need none
    # Gold labels straight from the folders: the dev split of the samples is images/test.
    gold = {}
    for name in sorted(os.listdir(images / "test")):
        for file in sorted(os.listdir(images / "test" / name)):
            gold[len(gold)] = name
    majority = max(collections.Counter(gold.values()).values()) / len(gold)
    capsys.readouterr()
    assert cli(["evaluate", "--run-dir", str(run_dir)]) == 0
    metrics = json.loads(capsys.readouterr().out.splitlines()[0])
    lines = (run_dir / "predictions" / "dev.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction"
    predicted = dict(line.split("\t") for line in lines[1:])
    accuracy = accuracy_score([gold[i] for i in range(len(gold))],
                              [predicted[str(i)] for i in range(len(gold))])
    assert metrics["accuracy"] == pytest.approx(accuracy)
    assert accuracy >= majority + 0.3, (accuracy, majority)
    # zoo score reads the same file against the folder.
    assert cli(["score", "image_folder", "--gold", str(images / "test"), "--predictions",
                str(run_dir / "predictions" / "dev.tsv")]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["accuracy"] == pytest.approx(accuracy)
    assert scored["examples"] == len(gold)


def _copy_images(sample_data, tmp_path, per_class=4):
    """A small copy of the sample image folder (train and test), to break on purpose."""
    root = tmp_path / "images"
    for split in ("train", "test"):
        for name in ("circle", "square", "triangle"):
            source = sample_data["root"] / "images" / split / name
            os.makedirs(root / split / name)
            for file in sorted(os.listdir(source))[:per_class]:
                shutil.copy(source / file, root / split / name / file)
    return root


def test_a_truncated_image_is_named_or_counted(sample_data, tmp_path, caplog):
    root = _copy_images(sample_data, tmp_path)
    bad = root / "train" / "square" / "square_0001.png"
    data = bad.read_bytes()
    bad.write_bytes(data[:len(data) // 2])  # the PNG signature is intact, the data is not
    config = config_lib.resolve({"task": "image_folder"}, image_overrides(root))
    with pytest.raises(DataError, match=r"square_0001\.png: image does not decode"):
        zoo_tasks.create("image_folder", config)
    config.data.skip_bad_rows = True
    task = zoo_tasks.create("image_folder", config)
    columns = task.examples("train")
    assert len(columns["path"]) == 11 and str(bad) not in columns["path"]
    report = columns["report"]
    assert report.bad_rows == {"image does not decode": [(str(bad), None)]}
    assert report.examples == 11
    assert "skipped 1 bad row" in caplog.text


def test_class_folders_must_match_between_splits(sample_data, tmp_path):
    root = _copy_images(sample_data, tmp_path, per_class=1)
    os.rename(root / "test" / "triangle", root / "test" / "star")
    config = config_lib.resolve({"task": "image_folder"}, image_overrides(root))
    with pytest.raises(DataError, match="class folders differ from the train split's"):
        zoo_tasks.create("image_folder", config)


def test_the_vit_experiment_builds_sgd_with_momentum_clipping_and_cosine_decay():
    # ViT appendix B.1.1: SGD momentum 0.9, cosine decay, global-norm clipping at 1, no decay.
    config = config_lib.resolve("vit/image_folder")
    train = config.train
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    optimizer = training.optimizer(train, model, steps_per_epoch=100)
    assert isinstance(optimizer, keras.optimizers.SGD)
    assert optimizer.momentum == pytest.approx(0.9)
    assert optimizer.global_clipnorm == 1.0
    assert not optimizer.weight_decay
    total, warmup = train.steps, train.warmup_steps
    for step in (0, warmup // 2, warmup, (warmup + total) // 2, total - 1, total):
        expected = cosine_reference(train.learning_rate, total, warmup, step)
        # The optimizer's own schedule object (what `iterations` feeds at every step).
        assert float(optimizer._learning_rate(step)) == pytest.approx(expected, abs=1e-9)
    assert config.model.backbone["image_size"] == 384  # section 3.2 / B.1.1: fine-tune at 384


def test_fine_tuning_at_a_higher_resolution_interpolates_the_position_embeddings(
        sample_data, tmp_path):
    import zoo

    keras.utils.set_random_seed(1)
    small = zoo.models.create("vit_tiny16", image_size=32, patch_size=8, num_layers=2,
                              hidden_dim=64, num_heads=2, intermediate_dim=128)
    checkpoint = tmp_path / "vit32.keras"
    small.save(checkpoint)
    root = _copy_images(sample_data, tmp_path, per_class=8)
    config = config_lib.resolve({"task": "image_folder"}, TINY_VIT + [
        f"data.dir={root}", f"model.init_checkpoint={checkpoint}",
        "model.backbone.image_size=48", "train.batch_size=8", "train.steps=3",
        "train.warmup_steps=0", "train.learning_rate=0.01"])
    task = zoo_tasks.create("image_folder", config)
    model = task.build_model()
    backbone = model.backbone
    reference = small.with_image_size(48)
    weights = {w.path: keras.ops.convert_to_numpy(w) for w in backbone.weights}
    assert weights["patch_embedding/position_embedding"].shape == (1, 37, 64)  # 6 x 6 + 1
    np.testing.assert_array_equal(
        weights["patch_embedding/position_embedding"],
        keras.ops.convert_to_numpy(reference.patch_embedding.position_embedding))
    original = {w.path: keras.ops.convert_to_numpy(w) for w in small.weights}
    for path, value in original.items():
        if path.startswith(("transformer_layer_", "patch_embedding/projection",
                            "patch_embedding/class_token", "final_norm")):
            np.testing.assert_array_equal(weights[path], value, err_msg=path)
    # The task trains at the new resolution.
    task.compile(model)
    history = model.fit(task.dataset("train", repeat=True), steps_per_epoch=3, verbose=0,
                        shuffle=False)
    assert np.isfinite(history.history["loss"][-1])
    assert model.input["images"].shape[1:] == (48, 48, 3)


def test_the_training_stream_resumes_exactly_and_depends_on_the_seed(sample_data, tmp_path):
    root = _copy_images(sample_data, tmp_path)  # 12 train images: a pass is 3 batches of 4

    def labels(seed, skip, batches):
        config = config_lib.resolve({"task": "image_folder"}, image_overrides(
            root, f"train.seed={seed}", "train.batch_size=4"))
        ds = zoo_tasks.create("image_folder", config).dataset("train", repeat=True,
                                                              skip_batches=skip)
        return [y["logits"].numpy().tolist() for _, y, _ in ds.take(batches)]

    stream = labels(0, 0, 8)
    assert labels(0, 5, 3) == stream[5:]  # resuming at batch 5 continues the same stream
    assert sorted(sum(stream[:3], [])) == [0] * 4 + [1] * 4 + [2] * 4  # each pass: every image
    assert labels(1, 0, 8) != stream
