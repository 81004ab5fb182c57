"""Baselines without a network, for `zoo reproduce` rows with `baseline:` (configs/reproduce/
bert/imdb.yaml): scored on the same files and with the same metrics as the model rows.

  python -m zoo_benchmarks.baselines bag_of_words --experiment bert/text_classification \\
      --set data.train_file=aclImdb/train --set data.dev_file=aclImdb/test \\
      --set "data.labels=[neg,pos]" --out runs/bow

bag_of_words: scikit-learn's logistic regression on binary unigram and bigram counts (words
seen in at least two training texts), its inverse regularization C chosen among
{0.01, 0.1, 1} by 5-fold cross-validation on the training file only; the classic IMDB baseline
(bag-of-words models score ~88-89 % on its test set: Maas et al. 2011, Table 2).
Writes OUT/metrics.json (one evaluation, as a training run's) and OUT/predictions/dev.tsv.
"""

import json
import os
import sys
import time

import zoo_tasks
from zoo import files
from zoo.metrics import text_classification as text_classification_metrics
from zoo.metrics.predictions import write_predictions
from zoo_benchmarks.commands import row_command

BASELINES = ("bag_of_words",)
C_GRID = (0.01, 0.1, 1.0)


def bag_of_words(config, out, progress=print):
    """Fit the bag-of-words logistic regression on config.data's train file, score its dev
    file with `zoo.metrics.text_classification` (single-label tasks); write OUT/metrics.json
    and OUT/predictions/dev.tsv. Returns the metrics."""
    # lazy: scikit-learn's model classes are only needed for a baseline row
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegressionCV  # lazy: as above
    from sklearn.pipeline import make_pipeline  # lazy: as above

    if config.task != "text_classification":
        raise ValueError(f"baseline bag_of_words: a text_classification experiment, not "
                         f"{config.task!r}")
    # No tokenizer: the baseline reads the same files, not the same token ids.
    task = zoo_tasks.TASKS[config.task](config.task, config, check_data=False, tokenize=False)
    if task.kind != "single" or not task.single_sentence:
        raise ValueError("baseline bag_of_words: single texts with one label each (no "
                         "data.text_pair_column, multi_label or regression)")
    start = time.perf_counter()
    train, dev = task.examples("train"), task.examples("dev")
    labels = task.labels
    progress(f"bag of words: {len(train['label'])} training texts, {len(dev['label'])} to score")
    model = make_pipeline(
        CountVectorizer(binary=True, ngram_range=(1, 2), min_df=2),
        # L2-regularized (l1_ratios 0), C by cross-validated accuracy.
        LogisticRegressionCV(Cs=list(C_GRID), cv=5, scoring="accuracy", l1_ratios=(0.0,),
                             use_legacy_attributes=False, max_iter=2000))
    model.fit(train["sentence1"], train["label"])
    predicted = [str(p) for p in model.predict(dev["sentence1"])]
    metrics = text_classification_metrics.compute("single", dev["label"], predicted, labels)
    chosen = float(model[-1].C_)
    record = {"step": 0, **metrics, "C": chosen, "seconds": round(time.perf_counter() - start, 1)}
    write_predictions(os.path.join(out, "predictions", "dev.tsv"), predicted)
    # Last: metrics.json marks the cell finished.
    files.write_text(os.path.join(out, "metrics.json"), json.dumps([record], indent=1) + "\n")
    progress(f"bag of words: C {chosen:g} (5-fold cross-validation on train), dev accuracy "
             f"{metrics['accuracy']:.4f}")
    return record


def run(kind, config, out, progress=print):
    if kind not in BASELINES:
        raise ValueError(f"unknown baseline {kind!r}; known: {', '.join(BASELINES)}")
    return bag_of_words(config, out, progress)


def main(argv=None):
    return row_command("python -m zoo_benchmarks.baselines", __doc__, BASELINES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
