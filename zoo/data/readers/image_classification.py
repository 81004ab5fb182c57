"""Image folders: one sub-folder of images per class, checked by extension and first bytes."""

import os

from zoo import files
from zoo.data.readers.errors import DataError
from zoo.data.readers.text import walk_visible

# What tf.io.decode_image reads, by extension and by the file's first bytes.
IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_IMAGE_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"BM")


def image_classes(path):
    """The class names of an image folder: its sub-folders, sorted; label i is classes[i].

    Examples:
        >>> image_classes("samples/images/train")  # doctest: +SKIP
        ['circle', 'square', 'triangle']
    """
    if not files.isdir(path):
        raise DataError(path, None, "not a directory", "a directory with one folder per class",
                        "a file")
    classes = sorted(name for name in files.listdir(path)
                     if not name.startswith(".") and files.isdir(os.path.join(path, name)))
    if not classes:
        raise DataError(path, None, "no class folders", "one sub-folder per class", "none")
    return classes


def read_image_folder(path, report):
    """{"path", "label"} per image of an image folder, label the index of its class folder."""
    classes = image_classes(path)
    # Hidden files (.DS_Store, ._x.jpg from macOS) are not rows; any other stray file is.
    for entry in sorted(os.path.join(path, name) for name in files.listdir(path)
                        if not name.startswith(".")):
        if files.isfile(entry):
            report.bad_row(DataError(entry, None, "file outside a class folder",
                                     "images inside the class sub-folders", "a file"))
    for label, name in enumerate(classes):
        count = 0
        for root, names in walk_visible(os.path.join(path, name)):
            for file in names:
                file = os.path.join(root, file)
                try:
                    _check_image(file)
                except DataError as error:
                    report.bad_row(error)
                    continue
                count += 1
                yield {"path": file, "label": label}
        if not count:
            report.bad_row(DataError(os.path.join(path, name), None, "empty class folder",
                                     "at least one image", "none"))


def _check_image(file):
    if not file.lower().endswith(IMAGE_EXTENSIONS):
        raise DataError(file, None, "not an image", "a file ending in "
                        + ", ".join(IMAGE_EXTENSIONS), repr(os.path.splitext(file)[1]))
    with files.open(file, "rb") as handle:
        head = handle.read(8)
    if not head.startswith(_IMAGE_SIGNATURES):
        raise DataError(file, None, "not an image", "PNG, JPEG, GIF or BMP bytes",
                        f"a file starting with {head!r}")
