"""Image classification from an image folder: ViT fine-tuning.

ViT section 3.1, eq. 4: "we prepend a learnable embedding to the sequence of embedded patches
(z_0^0 = x_class), whose state at the output of the Transformer encoder (z_L^0) serves as the
image representation y. ... the classification head is implemented by a MLP with one hidden
layer at pre-training time and by a single linear layer at fine-tuning time." Section 3.2:
"When fine-tuning, we remove the pre-trained prediction head and attach a zero-initialized
D x K feedforward layer, where K is the number of downstream classes. It is often beneficial
to fine-tune at higher resolution than pre-training ... We therefore perform 2D interpolation
of the pre-trained position embeddings" (`model.backbone.image_size` with an
`init_checkpoint`: `zoo.training.load_backbone` calls `ViTBackbone.with_image_size`).
Appendix B.1.1: SGD with momentum 0.9, batch 512, cosine decay, global-norm clipping at 1,
no weight decay (configs/experiments/vit/image_folder.yaml).

Data: `data.dir` holds one folder per split (`train`; the dev split is `dev`, `val` or
`validation`, else `test`), each with one sub-folder of images per class; the class names
are the sorted sub-folders and must be the same in every split. Pixels go to [-1, 1] as in
the ViT code (zoo.data.image_classification). Every image of a split is decoded once when the
split is first read, so a file that passes the format check but does not decode (truncated,
corrupt) is named then, or with `data.skip_bad_rows` counted and reported, instead of failing
inside the input pipeline. Metric: top-1 accuracy.
"""

import logging
import os

import keras
import numpy as np
import tensorflow as tf

from zoo import config as config_lib
from zoo import files, models, training
from zoo.data import DataError, prefetched, read_examples
from zoo.data.image_classification import load_image
from zoo.metrics import image_classification as image_classification_metrics
from zoo.metrics import write_predictions as write_tsv
from zoo.models.presets import PRESETS
from zoo_tasks import data_order, serving
from zoo_tasks.base import BaseTask, prediction_table, traced_for

logger = logging.getLogger("zoo.data")

# The folders tried for a split, in order: ImageNet-style trees have `val`, CIFAR-style `test`.
SPLIT_FOLDERS = {"train": ("train",), "dev": ("dev", "val", "validation", "test"),
                 "test": ("test",)}


class ImageClassificationTask(BaseTask):
    """Image classification (`image_folder`): a ViT with a linear head on the class token.

    Args:
        name: the task name, "image_folder".
        config: a `zoo.config.Experiment`; `model.preset` a ViT preset.
        check_data: read and decode the train and dev images now, so a missing folder, a
            class mismatch or a corrupt image fails before training starts.

    Examples:
        >>> import zoo_tasks
        >>> config = {"data": {"dir": "samples/images"}, "model": {"preset": "vit_tiny16"}}
        >>> task = zoo_tasks.create("image_folder", config)  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> model.fit(task.dataset("train"), epochs=3)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")  # doctest: +SKIP
        {'accuracy': 0.95}
    """

    main_metric = "accuracy"
    tokenizer = None  # images need no vocabulary (the fit loop copies none)
    signatures = serving.image_classification.signatures

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.image_size = None  # set by build_model / evaluate from the model
        self._classes = None
        if check_data:
            self.examples("train")
            self.examples("dev")

    # --- Data ---

    def path(self, split):
        """The folder of `split` under `data.dir` (dev: dev, val, validation or test)."""
        if not self.config.data.dir:
            raise config_lib.ConfigError(f"data.dir: missing; the directory holding the "
                                         f"{self.name} split folders (train, test ...)")
        candidates = SPLIT_FOLDERS.get(split, (split,))
        for folder in candidates:
            path = os.path.join(self.config.data.dir, folder)
            if files.isdir(path):
                return path
        raise FileNotFoundError(f"data.dir {self.config.data.dir}: no folder for split "
                                f"{split!r}; expected one of {', '.join(candidates)}")

    @property
    def labels(self):
        """The class names: `data.labels` (a checkpoint's id2label), else the sorted
        sub-folders of the train split."""
        if self._classes is None and self.config.data.labels:
            self._classes = list(self.config.data.labels)
        if self._classes is None:
            self._classes = read_examples(self.name, self.path("train")).labels
        return self._classes

    def read(self, path):
        """The images of a folder as columns: path, label (class id), report;
        `examples(split)` reads a split's once."""
        examples = read_examples(self.name, path, skip_bad_rows=self.config.data.skip_bad_rows)
        if tuple(examples.labels) != tuple(self.labels):
            raise DataError(path, None, "class folders differ from the train split's",
                            f"{list(self.labels)} (as in {self.path('train')})",
                            list(examples.labels))
        rows = _decodable(list(examples), examples.report)
        return {"path": [r["path"] for r in rows], "label": [r["label"] for r in rows],
                "report": examples.report}

    def _size(self):
        if self.image_size is None:
            self.image_size = self.config.model.backbone.get(
                "image_size", PRESETS[self.config.model.preset][1].get("image_size"))
        return self.image_size

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None):
        """Batches `({"images": ...}, {"logits": labels}, {"logits": weights})` of a split.

        The train split is shuffled: with `repeat=True` as an endless stream whose order is
        a pure function of (train.seed, position), so `skip_batches` resumes it exactly;
        otherwise one pass, reshuffled at every iteration. Other splits keep folder order.
        """
        columns = self.examples(split, path)
        n = len(columns["label"])
        batch_size = batch_size or self.config.train.batch_size
        paths = tf.constant(columns["path"], tf.string)
        labels = tf.constant(columns["label"], tf.int32)
        indices = data_order.example_order(n, split, self.config.train.seed, batch_size,
                                           repeat, skip_batches)
        size = self._size()

        def load(i):
            label = tf.gather(labels, i)
            return ({"images": load_image(tf.gather(paths, i), size)}, {"logits": label},
                    {"logits": tf.ones([], tf.float32)})

        ds = indices.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return prefetched(ds.batch(batch_size))

    # --- Model ---

    def build_model(self):
        """The ViT of `model.preset` / `model.init_checkpoint` with a zero-initialised head."""

        # The head reads the class token directly (eq. 4): the pre-logits pooler is unused.
        backbone = training.load_backbone(self.config.model, None, pooler=False)
        if not isinstance(backbone, models.ViTBackbone):
            raise config_lib.ConfigError(f"model.preset {self.config.model.preset}: "
                                         f"{self.name} needs a ViT preset (vit_tiny16 ...)")
        self.image_size = backbone.image_size
        return models.ViTClassifier(backbone, len(self.labels), logits_only=True)

    def losses_and_metrics(self, model):
        """Cross-entropy on the logits, and accuracy."""
        return dict(
            loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
            metrics={"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]})

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """Predicted class names of a split or folder, in folder order."""
        self.image_size = model.input["images"].shape[1]
        ds = self.dataset(split, path).map(lambda x, *_: x)
        logits = traced_for(model, ds.element_spec).predict(ds, verbose=0)["logits"]
        return [self.labels[i] for i in np.argmax(logits, axis=-1)]

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """Top-1 accuracy on a split or folder.

        Returns:
            {"accuracy": ...}; with `return_predictions=True` also {split: (columns,
            predicted class names)}.
        """
        columns = self.examples(split, path)
        predicted = self.predict(model, split, path)
        gold = [self.labels[i] for i in columns["label"]]
        results = {"accuracy": image_classification_metrics.accuracy(gold, predicted)}
        return (results, {split: (columns, predicted)}) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.tsv`: `index<TAB>prediction` (the class name), one row per image
        in folder order, the format `zoo score image_folder` reads.

        Returns:
            The paths written.
        """
        path = os.path.join(directory, f"{name}.tsv")
        write_tsv(path, predictions[1])
        return [path]

    def describe(self, predictions, limit):
        """A markdown table of the first dev images with gold and predicted classes."""
        return prediction_table(
            predictions, limit, ["image", "gold", "predicted"],
            lambda columns, predicted, i: [os.path.basename(columns["path"][i]),
                                           self.labels[columns["label"][i]], predicted[i]])


def _decodable(rows, report):
    """The rows whose image decodes; a corrupt one is a `DataError` (or counted and skipped).

    `read_examples` checks each file's signature only; a truncated PNG passes it and would
    stop the input pipeline later with a TensorFlow error that names no file. One parallel
    decoding pass finds the files that fail; each is decoded again alone for its message.
    """
    if not rows:
        return rows
    paths = [r["path"] for r in rows]
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(paths)).map(
        lambda p: (p, tf.shape(tf.io.decode_image(tf.io.read_file(p), channels=3,
                                                  expand_animations=False))),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    decoded = {p.decode() for p, _ in ds.ignore_errors().as_numpy_iterator()}
    kept = []
    for row in rows:
        if row["path"] in decoded:
            kept.append(row)
            continue
        try:
            tf.io.decode_image(tf.io.read_file(row["path"]), channels=3, expand_animations=False)
            message = "an unreadable image"
        except (tf.errors.OpError, ValueError) as error:
            message = getattr(error, "message", str(error)).strip().splitlines()[0]
        report.bad_row(DataError(row["path"], None, "image does not decode",
                                 "a complete PNG, JPEG, GIF or BMP image", message))
        report.examples -= 1
    if len(kept) < len(rows):
        logger.warning("%s", report)
    return kept


__all__ = ["ImageClassificationTask"]
