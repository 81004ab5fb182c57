"""Progress of long work, readable on a terminal and in a log file.

On a terminal, a tqdm bar redrawn in place. Anywhere else (stderr sent to a file, a pipe, a
cluster job's or CI's log) carriage-return redraws would pile up as hundreds of updates in one
line, so the same bar is written as a plain line at most every LOG_SECONDS seconds, plus its
last state when it closes (`zoo data vocab` on a 98 MB corpus: a handful of lines).
"""

import sys

LOG_SECONDS = 10.0  # between two progress lines in a log file


def is_terminal(file):
    """Whether `file` (default stderr) is an interactive terminal."""
    file = sys.stderr if file is None else file
    isatty = getattr(file, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed file
        return False


def bar(iterable=None, file=None, **kwargs):
    """A tqdm progress bar over `iterable` (or updated by hand: `total=`), on `file` (default
    stderr); tqdm's keyword arguments (`total`, `desc`, `unit`, `disable`, ...) as tqdm takes
    them. Off a terminal: one line every LOG_SECONDS seconds (and the last), no redraws.

    Examples:
        >>> import io
        >>> log = io.StringIO()
        >>> for _ in bar(range(3), file=log, desc="work"):
        ...     pass
        >>> log.getvalue().splitlines()[-1].startswith("work: 100%")
        True
        >>> "\\r" in log.getvalue()
        False
    """
    # lazy: tqdm is only needed where work is shown
    from tqdm import tqdm

    file = sys.stderr if file is None else file
    if is_terminal(file):
        kwargs.setdefault("mininterval", 0.5)
        kwargs.setdefault("dynamic_ncols", True)
        return tqdm(iterable, file=file, **kwargs)
    # tqdm's monitor thread would force a redraw every `maxinterval` seconds: the same period.
    kwargs.update(mininterval=LOG_SECONDS, maxinterval=LOG_SECONDS, dynamic_ncols=False,
                  ncols=100, ascii=True)
    return tqdm(iterable, file=_Lines(file), **kwargs)


class _Lines:
    """A file for tqdm that writes each redraw as a line of its own: tqdm's carriage returns
    and cursor moves dropped, an erased bar (leave=False) not written at all."""

    def __init__(self, file):
        self.file = file

    def write(self, text):
        text = text.replace("\r", "").replace("\x1b[A", "").rstrip()
        if text:
            self.file.write(text + "\n")

    def flush(self):
        self.file.flush()
