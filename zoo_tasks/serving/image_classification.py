"""Serving of image classification (ViT on an image folder): encoded image files in, decoded
and normalised in the graph by the training pipeline's own ops, the class probabilities and
class name out."""

import tensorflow as tf

from zoo import export
from zoo.data.image_classification import decode_image
from zoo_tasks.serving.common import probabilities_and_names


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a
    `zoo_tasks.image_classification.ImageClassificationTask`.

    `serving_default`: `image_bytes` [batch] string (JPEG, PNG, GIF or BMP file contents)
    in, decoded, resized and normalised by the training pipeline's own ops
    (`zoo.data.image_classification.decode_image`); `probabilities` [batch, classes] float32
    and `label` [batch] string (the class folder names) out. Bytes that do not decode (corrupt, not
    an image, empty) fail the request with an InvalidArgumentError; a batch of 0 gives
    [0, classes] and [0]. `serving_ids`: `pixels` [batch, H, W, 3] float32, already
    normalised to the model's range ([-1, 1] for ViT), in; the same outputs.
    """
    size = model.input["images"].shape[1]
    names = tf.constant(list(task.labels))

    def answer(pixels):
        logits = tf.cast(model({"images": pixels}, training=False)["logits"], tf.float32)
        return probabilities_and_names(logits, names, "label")

    def raw(image_bytes):
        # Images differ in size until resized: decode them one by one.
        pixels = tf.map_fn(lambda contents: decode_image(contents, size), image_bytes,
                           fn_output_signature=tf.TensorSpec([size, size, 3], tf.float32))
        return answer(pixels)

    outputs = ("probabilities", "label")
    pixels = tf.TensorSpec([None, size, size, 3], tf.float32, name="pixels")
    return {
        export.DEFAULT: export.Signature({"image_bytes": export.text("image_bytes")}, raw,
                                         outputs, "encoded images (JPEG, PNG) in, "
                                         "probabilities and label out"),
        export.IDS: export.Signature({"pixels": pixels}, answer, outputs,
                                     "normalised pixels in, probabilities and label out"),
    }
