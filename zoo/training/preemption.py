"""Preemption: SIGTERM and SIGINT stop `zoo train` at the next step with a backup.

SIGTERM is what Kubernetes, Slurm and GCE / Cloud TPU send before they kill a job; SIGINT is
Ctrl-C. Either one, while `fit` runs, is noted by a signal handler; at the end of the step
under way, `Preemption` commits a backup of that step (`backups.save`) and raises
`Interrupted`, which `zoo` turns into a message and exit code `EXIT_CODE`. The same command
then resumes at that very step: no step is lost and none is trained twice. A second SIGINT
while the backup is written interrupts at once, as Ctrl-C usually does.
"""

import contextlib
import signal
import threading

import keras

from zoo.training import backups

# EX_TEMPFAIL of sysexits.h: a temporary failure; the same command is meant to be run again.
EXIT_CODE = 75
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupted(Exception):
    """Training stopped on a signal after backing up; the message says how to resume."""

    exit_code = EXIT_CODE


@contextlib.contextmanager
def signals_noted():
    """While the block runs, SIGTERM and SIGINT are recorded instead of ending the process;
    yields a list that receives their names. Outside the main thread (where Python cannot
    install handlers) nothing is installed and the list stays empty."""
    received = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def note(number, frame):
        if received and number == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        received.append(signal.Signals(number).name)

    previous = {number: signal.signal(number, note) for number in SIGNALS}
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class Preemption(keras.callbacks.Callback):
    """At the end of the step during which a signal arrived: a backup, then `Interrupted`."""

    def __init__(self, received, backup_dir, command="the same command"):
        super().__init__()
        self.received, self.backup_dir, self.command = received, backup_dir, command

    def on_train_batch_end(self, batch, logs=None):
        # A step that ends training (StopAt) ends its round as usual: no interruption there.
        if self.received and not self.model.stop_training:
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            # Raising (not stop_training) skips on_epoch_end: no evaluation of a partial round.
            self._interrupt(step, backups.save(self.model, self.backup_dir, step))

    def on_epoch_end(self, epoch, logs=None):
        # A signal during the evaluation: `callbacks.Backup` has just backed this step up.
        if self.received:
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            self._interrupt(step, backups.committed(self.backup_dir)[0][1])

    def _interrupt(self, step, path):
        raise Interrupted(f"stopped by {self.received[0]} after step {step}; backed up to "
                          f"{path}: run {self.command} to resume")
