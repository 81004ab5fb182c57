"""image_folder export: image bytes in, the class probabilities and name out, through the
SavedModel in a fresh process, against the in-process Keras pipeline on the same images.

The expected values come from the task's own evaluation path (`task.evaluate` reading the
files with tf.data, then the Keras model), not from the serving graph.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.harness import saved_model_signatures, serve_fresh
from tests.test_image_classification import vit_run
from tests.test_signatures_batch import assert_every_input_batches
from zoo_cli.main import main as cli
from zoo_tasks import runs


@pytest.fixture(scope="module")
def exported(sample_data, tmp_path_factory, worker_id):
    """test_image_classification's ViT run on the sample images (trained once for both files),
    its export, and the served answers to the module's requests (one fresh serving process:
    each costs seconds)."""
    tmp = tmp_path_factory.mktemp("export_images")
    run_dir, _ = vit_run(sample_data, tmp_path_factory, worker_id)
    path = runs.export_run(str(run_dir), str(tmp / "exports"), progress=lambda line: None)
    _, task, model = runs.load_task(str(run_dir))
    _, predictions = task.evaluate(model, "dev", return_predictions=True)
    columns, _ = predictions["dev"]
    images = []
    for file in columns["path"]:
        with open(file, "rb") as handle:
            images.append(handle.read())
    assert {file[-4:] for file in columns["path"]} == {".png"}
    # The first images as JPEG (decoded with its own decoder in both paths).
    jpegs = [tf.io.encode_jpeg(tf.io.decode_png(image, channels=3)).numpy()
             for image in images[:3]]
    pixels = np.stack([_pixels(task, image) for image in jpegs])
    with open(__file__, "rb") as handle:
        text = handle.read()
    png = tf.io.encode_png(tf.zeros([8, 8, 3], tf.uint8)).numpy()
    bad = [[text], [png[:30]], [b""], [b"\xff\xfe\x80"], [png, b"not an image"]]
    served = serve_fresh(path, [
        {"image_bytes": images}, {"image_bytes": jpegs}, ("serving_ids", {"pixels": pixels}),
        {"image_bytes": np.zeros([0], object)}] + [{"image_bytes": b} for b in bad], show=True)
    return task, model, predictions, pixels, path, served, run_dir


def test_image_bytes_give_the_pipeline_probabilities_and_labels(exported):
    task, model, predictions, jpeg_pixels, path, served, _ = exported
    columns, predicted = predictions["dev"]
    batches = task.dataset("dev").map(lambda x, *_: x)
    expected = tf.nn.softmax(model.predict(batches, verbose=0)["logits"]).numpy()
    jpeg_expected = tf.nn.softmax(model({"images": jpeg_pixels})["logits"]).numpy()
    pngs, jpeg, ids, empty = served[:4]
    assert [label.decode() for label in pngs["label"]] == predicted
    np.testing.assert_allclose(pngs["probabilities"], expected, atol=1e-5)
    assert len(predicted) >= 30
    np.testing.assert_allclose(jpeg["probabilities"], jpeg_expected, atol=1e-5)
    names = np.array(task.labels)[np.argmax(jpeg_expected, -1)]
    assert [label.decode() for label in jpeg["label"]] == list(names)
    np.testing.assert_allclose(ids["probabilities"], jpeg_expected, atol=1e-5)
    assert empty["probabilities"].shape == (0, len(task.labels))
    assert empty["label"].shape == (0,)
    signatures = {name: names for name, names in saved_model_signatures(path).items()
                  if not name.startswith("__")}
    assert signatures == {
        "serving_default": ({"image_bytes"}, {"probabilities", "label"}),
        "serving_ids": ({"pixels"}, {"probabilities", "label"})}
    assert_every_input_batches(path, "image_classification")


def test_a_converted_run_classifies_like_the_export_in_transformers_pipeline(exported,
                                                                             tmp_path):
    """`zoo convert RUN OUT --to hf` (issue 20): ViTForImageClassification with the class
    folders as id2label gives the run's logits on the dev images, and `pipeline("image-
    classification")` on the image files (its ViTImageProcessor from the folder's
    preprocessor_config.json) gives the served labels and probabilities."""
    import pathlib

    import torch
    import transformers

    task, model, predictions, _, path, served, run_dir = exported
    out = tmp_path / "hf"
    assert cli(["convert", str(run_dir), str(out), "--to", "hf"]) == 0
    hf = transformers.AutoModelForImageClassification.from_pretrained(out).eval()
    assert [hf.config.id2label[i] for i in range(len(task.labels))] == list(task.labels)
    columns, _ = predictions["dev"]
    pixels = np.stack([_pixels(task, pathlib.Path(file).read_bytes()) for file in columns["path"]])
    with torch.no_grad():
        theirs = hf(pixel_values=torch.tensor(pixels.transpose(0, 3, 1, 2))).logits.numpy()
    difference = np.max(np.abs(model.predict({"images": pixels}, verbose=0)["logits"] - theirs))
    print(f"\nimages dev: max |zoo - transformers| logit {difference:.1e}")
    assert difference <= 1e-4

    classify = transformers.pipeline("image-classification", model=str(out), device="cpu")
    answers = classify(list(columns["path"]), top_k=len(task.labels))
    pngs = served[0]
    assert [answer[0]["label"] for answer in answers] == [x.decode() for x in pngs["label"]]
    scores = [[{a["label"]: a["score"] for a in answer}[name] for name in task.labels]
              for answer in answers]
    np.testing.assert_allclose(scores, pngs["probabilities"], atol=1e-4, rtol=0)


def test_bad_image_bytes_are_invalid_argument(exported):
    """Text, a truncated PNG, no bytes, junk, and one bad image in a good batch."""
    *_, served, _ = exported
    assert len(served) == 9
    for result in served[4:]:
        assert result.keys() == {"error"} and result["error"].startswith(
            "InvalidArgumentError"), result


def _pixels(task, contents):
    """The training pipeline's pixels of encoded bytes: load_image on a temporary file."""
    import tempfile

    from zoo.data.image_classification import load_image

    with tempfile.NamedTemporaryFile(suffix=".jpg") as file:
        file.write(contents)
        file.flush()
        return load_image(file.name, task.image_size).numpy()
