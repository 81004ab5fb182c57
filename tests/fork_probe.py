"""What tests/test_forkserver.py asks a forked command: `python -m tests.fork_probe ACTION`
prints its pid, name, argv, folder and three variables as JSON on stdout, a line on stderr, then
exits with the status ACTION names (`exit:N`), raises (`raise`) or kills itself (`kill`)."""

import json
import os
import signal
import sys
import tempfile

if __name__ == "__main__":
    print(json.dumps({"pid": os.getpid(), "name": __name__, "argv": sys.argv[1:],
                      "cwd": os.getcwd(), "tf_config": os.environ.get("TF_CONFIG"),
                      "tmp": tempfile.gettempdir(), "modules": "tensorflow" in sys.modules,
                      "tf2_behavior": os.environ.get("TF2_BEHAVIOR")}),
          flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    action = sys.argv[1]
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise":
        raise ValueError("raised in the probe")
    sys.exit(int(action.split(":")[1]))
