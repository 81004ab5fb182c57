"""Fault injection for the crash-consistency tests: `python -m tests.faults FAULT WHERE -- ARGS`
runs `zoo ARGS` with a fault injected at one chosen write, not at a moment chosen by sleeping.

WHERE is
    backup:STEP    the copy of the weights into the staging directory of the backup of step STEP
                   (`zoo.training.backups.save` copies them with `zoo.files.copy`), the largest
                   and most often written file of a run;
    file:NAME:N    the N-th atomic write of a file named NAME (metrics.json, best.keras,
                   final.keras, step_20.keras ...): the moment its complete temporary file would
                   be renamed into place (`os.replace`, where every local atomic write of
                   `zoo.files` ends), which is cut to half first (unless it is a hard link).
FAULT is
    kill    half the file is written, then the process is killed with SIGKILL (a kill -9, or a
            machine that goes away, in the middle of the write);
    enospc  half the file is written, then the write fails with "No space left on device", as
            a full disk fails it.
"""

import errno
import os
import signal
import sys

from zoo import files
from zoo.training import backups
from zoo_cli.main import main


def _fail(fault, path):
    """Cut `path` to half its bytes, then `fault`. A hard link (`zoo.files.link`: final.keras
    as best.keras's file) is made whole or not at all: it is not cut (that would cut the
    file it shares), the fault comes before it is in place."""
    if os.stat(path).st_nlink == 1:
        with open(path, "r+b") as file:
            file.truncate(os.path.getsize(path) // 2)
            file.flush()
            os.fsync(file.fileno())
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def inject(fault, where):
    """Replace the function the chosen write goes through with one that fails there."""
    kind, _, rest = where.partition(":")
    if kind == "backup":
        copy, step = files.copy, int(rest)

        def failing_copy(source, target):
            copy(source, target)
            if f"{os.sep}.tmp-step_{step}-" in target and target.endswith(backups.WEIGHTS):
                _fail(fault, target)

        files.copy = failing_copy
    elif kind == "file":
        # Every atomic write of a local file ends in os.replace (zoo.files.rename, write_bytes).
        replace, (name, count), seen = os.replace, rest.rsplit(":", 1), [0]

        def failing_replace(source, target, **kwargs):
            if os.path.basename(os.fspath(target)) == name:
                seen[0] += 1
                if seen[0] == int(count):
                    _fail(fault, source)
            return replace(source, target, **kwargs)

        os.replace = failing_replace
    else:
        raise ValueError(f"WHERE: backup:STEP or file:NAME:N, not {where!r}")


if __name__ == "__main__":
    fault, where, separator, *args = sys.argv[1:]
    assert fault in ("kill", "enospc") and separator == "--", sys.argv
    inject(fault, where)
    sys.exit(main(args))
