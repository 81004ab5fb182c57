"""Image classification input for ViT: decode, resize, normalise.

Dosovitskiy et al. 2021 (arXiv:2010.11929) feed images at the model's resolution (section 3.2:
fine-tuning often uses a higher one than pre-training's 224) with pixel values in [-1, 1]
(big_vision's `value_range(-1, 1)`); transformers' `ViTImageProcessor` does the same as resize,
divide by 255, normalise with mean 0.5 and std 0.5 per channel. Other checkpoints (e.g. DeiT)
use ImageNet statistics, hence `mean` and `std`. No augmentation here.
"""

import tensorflow as tf

from zoo.data.pipeline import prefetched

VIT_MEAN = (0.5, 0.5, 0.5)
VIT_STD = (0.5, 0.5, 0.5)


def load_image(path, image_size, mean=VIT_MEAN, std=VIT_STD):
    """Read a JPEG/PNG/GIF/BMP file as a (image_size, image_size, 3) float32 normalised image.

    Args:
        path: scalar string tensor or str.
        image_size: output side in pixels (the backbone's `image_size`).
        mean: per-channel mean subtracted after scaling to [0, 1].
        std: per-channel standard deviation divided by.

    Examples:
        >>> load_image("cat.png", 224).shape  # doctest: +SKIP
        TensorShape([224, 224, 3])
    """
    return decode_image(tf.io.read_file(path), image_size, mean, std)


def decode_image(contents, image_size, mean=VIT_MEAN, std=VIT_STD):
    """Decode JPEG/PNG/GIF/BMP bytes to a (image_size, image_size, 3) float32 normalised image.

    `load_image` on a file's bytes; the exported serving graph (zoo_tasks.image_classification)
    calls it on request bytes, so training and serving share every op.

    Args:
        contents: scalar string tensor, the encoded image. Bytes that do not decode raise
            `tf.errors.InvalidArgumentError`.
        image_size: output side in pixels.
        mean: per-channel mean subtracted after scaling to [0, 1].
        std: per-channel standard deviation divided by.
    """
    image = tf.io.decode_image(contents, channels=3, expand_animations=False)
    image.set_shape([None, None, 3])
    # Bilinear with antialiasing approximates PIL's bilinear resize that transformers uses.
    image = tf.image.resize(tf.cast(image, tf.float32), [image_size, image_size],
                            method="bilinear", antialias=True)
    image = tf.clip_by_value(image, 0.0, 255.0) / 255.0
    return (image - tf.constant(mean, tf.float32)) / tf.constant(std, tf.float32)


def image_dataset(examples, image_size, batch_size, mean=VIT_MEAN, std=VIT_STD,
                  shuffle_buffer=0, seed=None, drop_remainder=False):
    """A tf.data pipeline of `({"images": ...}, labels)` batches from image_folder examples.

    Args:
        examples: dicts `{"path": str, "label": int}`.
        image_size: side in pixels (the backbone's `image_size`).
        batch_size: images per batch.
        mean: per-channel mean on the [0, 1] scale (ViT: 0.5).
        std: per-channel standard deviation on the [0, 1] scale (ViT: 0.5).
        shuffle_buffer: examples in the shuffle buffer (0: keep order, for evaluation).
        seed: shuffle seed.
        drop_remainder: drop a last partial batch.

    Examples:
        >>> ds = image_dataset([{"path": "cat.png", "label": 3}], 224, 32)  # doctest: +SKIP
        >>> x, y = next(iter(ds))  # doctest: +SKIP
        >>> x["images"].shape  # doctest: +SKIP
        TensorShape([1, 224, 224, 3])
    """
    examples = list(examples)
    paths = tf.constant([e["path"] for e in examples], tf.string)
    labels = tf.constant([e["label"] for e in examples], tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((paths, labels))
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.map(lambda path, label: ({"images": load_image(path, image_size, mean, std)}, label),
                num_parallel_calls=tf.data.AUTOTUNE)
    return prefetched(ds.batch(batch_size, drop_remainder=drop_remainder))
