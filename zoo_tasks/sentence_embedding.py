"""Sentence embeddings fine-tuned on your own pairs (anchor, positive) with in-batch negatives.

Sentence-BERT (Reimers and Gurevych, 2019): BERT's token vectors pooled into one vector a
text (`zoo.models.head_models.BertTextEmbedder`: mean, [CLS] or max, optionally
L2-normalized). Training is sentence-transformers' MultipleNegativesRankingLoss (Henderson et
al., 2017, "Efficient Natural Language Response Suggestion"): in a batch of n pairs, anchor i
scores every positive j by their cosine similarity times a scale of 20, and the loss is the
cross-entropy of picking its own positive i among the n; the other pairs' positives are the
negatives, so no labels are needed.

What is the user's:
- The files: `data.train_file`, `data.dev_file`, `data.test_file` (.csv, .tsv, .jsonl,
  .parquet) with the columns `data.text_column` (the anchor) and `data.text_pair_column` (its
  positive), read by `zoo.data.readers.tables`.
- The starting point: `model.init_checkpoint`, a sentence-transformers folder (its pooling and
  normalization are then read from `modules.json` and `1_Pooling/config.json` and written to
  `model.pooling` and `model.normalize`, so the run's config.yaml keeps them), or any BERT
  checkpoint zoo reads, or a random preset; `model.pooling` / `model.normalize` set them.
- Metrics (`zoo.metrics.sentence_embedding`): each dev anchor ranks every dev positive by
  cosine similarity: `mrr` (picks the best checkpoint), `recall_at_1`, `recall_at_5`.

The export (zoo_tasks/serving/sentence_embedding.py) serves `text` -> `embedding`.
"""

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from zoo import config as config_lib
from zoo import embeddings, files, training
from zoo.data.readers import Report
from zoo.data.readers.tables import read_table
from zoo.metrics import sentence_embedding as sentence_embedding_metrics
from zoo.metrics.predictions import write_predictions
from zoo.models.head_models import BertTextEmbedder
from zoo_tasks import serving
from zoo_tasks.base import BaseTask, is_gpt, own_data_file, prediction_table, traced_for

# MultipleNegativesRankingLoss's default scale (sentence-transformers): 1 / temperature 0.05.
SCALE = 20.0


@keras.saving.register_keras_serializable(package="zoo")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """In-batch negatives on interleaved pairs: `y_pred` (2n, dim) holds anchor i at row 2i
    and its positive at row 2i + 1; each anchor's loss is the cross-entropy of its own
    positive among all n positives, scored by `scale` times their cosine similarity.

    Rows in pairs, rather than all anchors and then all positives, keep a pair together when
    a distribution strategy splits the batch along its first axis (each replica then has its
    own in-batch negatives, as sentence-transformers has without gathering).
    `y_true` is not read.
    """

    def __init__(self, scale=SCALE, name="multiple_negatives_ranking", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = scale

    def call(self, y_true, y_pred):
        pairs = keras.ops.reshape(keras.ops.cast(y_pred, "float32"),
                                  (-1, 2, keras.ops.shape(y_pred)[-1]))  # (n, 2, dim)
        anchors, positives = _unit(pairs[:, 0]), _unit(pairs[:, 1])
        scores = self.scale * keras.ops.matmul(anchors, keras.ops.transpose(positives))  # (n, n)
        targets = keras.ops.arange(keras.ops.shape(scores)[0])
        return keras.losses.sparse_categorical_crossentropy(targets, scores, from_logits=True)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def _unit(x):
    norm = keras.ops.sqrt(keras.ops.sum(keras.ops.square(x), axis=-1, keepdims=True))
    return x / keras.ops.maximum(norm, 1e-12)


class SentenceEmbeddingTask(BaseTask):
    """Fine-tuning a `BertTextEmbedder` on your own (anchor, positive) pairs; see the module
    docstring.

    Args:
        name: "sentence_embedding".
        config: a `zoo.config.Experiment`.
        check_data: read the train and dev files now, so a bad path or column fails first.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("sentence_embedding", {
        ...     "model": {"preset": "bert_small", "init_checkpoint": "all-MiniLM-L6-v2"},
        ...     "data": {"train_file": "pairs.csv", "text_column": "anchor",
        ...              "text_pair_column": "positive"}})  # doctest: +SKIP
        >>> task.config.model.pooling, task.config.model.normalize  # doctest: +SKIP
        ('mean', True)
    """

    main_metric = sentence_embedding_metrics.MAIN_METRIC
    signatures = serving.sentence_embedding.signatures

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        if is_gpt(config.model.preset):
            raise config_lib.ConfigError(f"model.preset {config.model.preset}: sentence "
                                         "embeddings pool a BERT backbone")
        self.model_config = self._starting_point()
        self.tokenizer = training.load_tokenizer(self.model_config)
        if check_data:
            self.examples("train")
            if self.config.data.dev_file:
                self.examples("dev")

    def _starting_point(self):
        """The model config to load from, with `model.pooling` / `model.normalize` filled in
        from a sentence-transformers folder: `model.init_checkpoint`, or the checkpoint of a
        pretrained `model.preset` (all_minilm_l6_v2). A folder whose Transformer module sits
        in a subfolder is loaded from there."""
        model = self.config.model
        loaded = model
        source = model.init_checkpoint or model.preset
        folder = embeddings.resolve(source)  # a name (hf://..., a pretrained preset) resolved
        if ((model.init_checkpoint or folder != source) and files.isdir(folder)
                and embeddings.is_sentence_transformers(folder)):
            settings = embeddings.folder_settings(folder)
            if settings["do_lower_case"]:
                raise config_lib.ConfigError(
                    f"{source}: do_lower_case (sentence_bert_config.json) is for "
                    "zoo.embeddings.encode; zoo train lower-cases only as the tokenizer does")
            if model.pooling is None:
                model.pooling = settings["pooling"]
            if model.normalize is None:
                model.normalize = settings["normalize"]
            if os.path.normpath(settings["transformer"]) != os.path.normpath(folder):
                loaded = dataclasses.replace(model, init_checkpoint=settings["transformer"])
        if model.pooling is None:
            model.pooling = "mean"
        if model.normalize is None:
            model.normalize = False
        return loaded

    # --- Data ---

    def path(self, split):
        """The file of `split`: `data.<split>_file`."""
        return own_data_file(self, split, ".csv, .tsv, .jsonl or .parquet with an anchor and "
                             "a positive column")

    def read(self, path):
        """The pairs of a file as columns: anchor, positive, id, report."""
        data = self.config.data
        if not data.text_pair_column:
            raise config_lib.ConfigError("data.text_pair_column: missing; the column of each "
                                         f"anchor's positive (data.text_column: "
                                         f"{data.text_column!r}, the anchor)")
        report = Report(path, data.skip_bad_rows)
        rows = list(read_table(path, report, format=data.format, text_column=data.text_column,
                               text_pair_column=data.text_pair_column, id_column=data.id_column,
                               label_required=False))
        return {"anchor": [r["sentence1"] for r in rows],
                "positive": [r["sentence2"] for r in rows],
                "id": [r["id"] for r in rows], "report": report}

    def num_examples(self, split):
        """Pairs in a split."""
        return len(self.examples(split)["anchor"])

    def inputs(self, text, multiple=None):
        """A batch of raw texts packed as `[CLS] text [SEP]` (TF ops only), padded to the
        longest (rounded up to `multiple` or `data.pad_to_multiple_of`)."""
        return embeddings.pack_texts(self.tokenizer, text, self.config.data.sequence_length,
                                     multiple=multiple or self.config.data.pad_to_multiple_of)

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None,
                order=None):
        """Batches `(inputs, targets)` of a split's pairs, for `fit`: 2n rows, anchor i at
        row 2i and its positive at 2i + 1 (`MultipleNegativesRankingLoss`)."""
        columns = self.examples(split, path)
        tensors = (tf.constant(columns["anchor"], tf.string),
                   tf.constant(columns["positive"], tf.string))
        return self.batches(split, tensors, self._encode, repeat, skip_batches, batch_size,
                            order)

    def _encode(self, anchor, positive):
        both = tf.reshape(tf.stack([anchor, positive], axis=1), [-1])  # a0, p0, a1, p1, ...
        x = self.inputs(both)
        return x, {"embedding": tf.zeros(tf.shape(both)[:1])}

    def texts_dataset(self, texts, batch_size=None):
        """Batches of model inputs for a list of texts, in order (evaluation)."""
        return self.batches("test", (tf.constant(list(texts), tf.string),),
                            lambda text: self.inputs(text), batch_size=batch_size,
                            key=("texts",))

    # --- Model ---

    def build_model(self):
        """The backbone of `model.preset` / `model.init_checkpoint` with the pooling."""
        # No pooler: the embedding pools the token vectors; [CLS] pooling takes the first
        # token's vector as sentence-transformers does, not the pooler's tanh layer.
        backbone = training.load_backbone(self.model_config, self.tokenizer, pooler=False)
        return BertTextEmbedder(backbone, pooling=self.config.model.pooling,
                                normalize=self.config.model.normalize)

    def losses_and_metrics(self, model):
        """MultipleNegativesRankingLoss on the embeddings; no training metrics."""
        return dict(loss={"embedding": MultipleNegativesRankingLoss()})

    # --- Evaluation ---

    def embed(self, model, texts):
        """float32 [len(texts), dim] embeddings of a list of texts."""
        if not texts:
            return np.zeros((0, model.output["embedding"].shape[-1]), "float32")
        ds = self.texts_dataset(texts)
        return np.asarray(traced_for(model, ds.element_spec).predict(ds, verbose=0)["embedding"],
                          "float32")

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """`mrr`, `recall_at_1`, `recall_at_5` of each anchor against all positives of the
        split (cosine similarity); predictions: the index of each anchor's top positive."""
        columns = self.examples(split, path)
        scores = sentence_embedding_metrics.cosine_scores(
            self.embed(model, columns["anchor"]), self.embed(model, columns["positive"]))
        results = sentence_embedding_metrics.compute(scores)
        predicted = scores.argmax(axis=-1).tolist() if len(scores) else []
        predictions = {split: (columns, predicted)}
        return (results, predictions) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.tsv`: `index<TAB>id of the top-ranked positive's pair`."""
        columns, predicted = predictions[:2]
        path = os.path.join(directory, f"{name}.tsv")
        write_predictions(path, [columns["id"][j] for j in predicted])
        return [path]

    def describe(self, predictions, limit):
        """A markdown table of the first anchors with their positive and the top-ranked one."""
        return prediction_table(predictions, limit, ["anchor", "positive", "top-ranked"],
                                lambda columns, predicted, i: [
                                    columns["anchor"][i], columns["positive"][i],
                                    columns["positive"][predicted[i]]])


__all__ = ["MultipleNegativesRankingLoss", "SCALE", "SentenceEmbeddingTask"]
