"""Image classification scoring (`image_folder`): top-1 accuracy.

ViT (Dosovitskiy et al., 2021) reports top-1 accuracy on every image benchmark (Table 2). Gold
labels are the class folders of an image folder (`zoo.data.read_examples("image_folder",
...)`: the sorted sub-folders, images in sorted order); predictions are a GLUE-style TSV
`index<TAB>prediction` holding one class name per image, index = the image's position in that
order, as `zoo evaluate` writes it.
"""

from zoo.data import read_examples
from zoo.metrics.predictions import read_predictions


def accuracy(gold, predicted):
    """The fraction of predictions equal to the gold label (top-1 accuracy).

    Examples:
        >>> accuracy(["cat", "dog", "dog"], ["cat", "cat", "dog"])
        0.6666666666666666
    """
    if len(gold) != len(predicted) or not gold:
        raise ValueError(f"expected as many predictions as gold labels (at least one), found "
                         f"{len(gold)} gold labels and {len(predicted)} predictions")
    return sum(g == p for g, p in zip(gold, predicted)) / len(gold)


def score_image_folder(task, gold_path, predictions_path, **_):
    """Top-1 accuracy of a predictions TSV against an image folder's class sub-folders."""
    examples = read_examples(task, gold_path)
    classes = examples.labels
    gold = [classes[example["label"]] for example in examples]
    predicted = read_predictions(predictions_path, len(gold), classes)
    return {"accuracy": accuracy(gold, predicted), "examples": len(gold)}
