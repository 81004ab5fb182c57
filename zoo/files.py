"""Atomic writes: a temporary file beside the target, then a rename, so readers never see half."""

import os
import tempfile


def write_text(path, text):
    """Write `text` (UTF-8, "\\n" line ends as given) to `path` atomically; parents are made.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/out/config.yaml"
        >>> write_text(path, "task: glue/mrpc\\n")
        >>> open(path).read()
        'task: glue/mrpc\\n'
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as file:
            file.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the result is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
