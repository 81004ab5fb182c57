"""Image classification: a folder per class, each image one noisy shape in the class's colour
family, as PNG files."""

import os

import numpy as np

from zoo import files
from zoo.data.samples.common import LAYOUT

SHAPES = {"circle": (220, 60, 60), "square": (60, 200, 60), "triangle": (70, 90, 230)}
IMAGE_SIZE = 32


def _image(rng, shape, size=IMAGE_SIZE):
    noise = np.random.default_rng(rng.getrandbits(64))
    image = noise.integers(0, 60, (size, size, 3)).astype(np.int32)  # dark, noisy background
    radius = rng.randrange(size // 6, size // 3)
    cy, cx = rng.randrange(radius, size - radius), rng.randrange(radius, size - radius)
    y, x = np.mgrid[:size, :size]
    if shape == "circle":
        mask = (y - cy) ** 2 + (x - cx) ** 2 <= radius ** 2
    elif shape == "square":
        mask = (abs(y - cy) <= radius) & (abs(x - cx) <= radius)
    else:  # apex up: the half-width grows linearly from the top row to the base
        mask = (y >= cy - radius) & (y <= cy + radius) & (abs(x - cx) <= (y - cy + radius) / 2)
    colour = np.array(SHAPES[shape]) + noise.integers(-30, 31, 3)
    image[mask] = colour
    return np.clip(image, 0, 255).astype(np.uint8)


def write_images(root, rng):
    import tensorflow as tf

    for split, folder in LAYOUT["image_folder"].items():
        for shape in SHAPES:
            files.makedirs(os.path.join(root, folder, shape))
            for n in range(60 if split == "train" else 20):
                png = tf.io.encode_png(_image(rng, shape)).numpy()
                with files.open(os.path.join(root, folder, shape, f"{shape}_{n:04d}.png"),
                                "wb") as f:
                    f.write(png)
