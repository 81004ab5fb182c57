"""Fault injection for the crash-consistency tests: `python -m tests.faults FAULT STEP -- ARGS`
runs `zoo ARGS` with a fault injected at one chosen write, not at a moment chosen by sleeping.

The write is the copy of the weights into the staging directory of the backup of step STEP
(`zoo.training.backups.save` copies them with `zoo.files.copy`), the largest and most often
written file of a run. FAULT is
    kill    half the file is written, then the process is killed with SIGKILL (a kill -9, or a
            machine that goes away, in the middle of the write);
    enospc  half the file is written, then the write fails with "No space left on device", as
            a full disk fails it.
"""

import errno
import os
import signal
import sys

from tools.main import main
from zoo import files
from zoo.training import backups


def inject(fault, step):
    """Replace `zoo.files.copy` as `backups.save` calls it with one that fails at `step`."""
    copy = files.copy

    def failing_copy(source, target):
        if f"{os.sep}.tmp-step_{step}-" not in target or not target.endswith(backups.WEIGHTS):
            return copy(source, target)
        with open(source, "rb") as file:
            data = file.read()
        with open(target, "wb") as file:  # the torn file a failed write leaves
            file.write(data[:len(data) // 2])
            file.flush()
            os.fsync(file.fileno())
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)

    files.copy = failing_copy


if __name__ == "__main__":
    fault, step, separator, *args = sys.argv[1:]
    assert fault in ("kill", "enospc") and separator == "--", sys.argv
    inject(fault, int(step))
    sys.exit(main(args))
