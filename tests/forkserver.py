"""`python -m MODULE ARGS` for zoo's commands, forked from a process that has imported them.

The fault tests (crash consistency, multi-worker, storage faults, the run lock, a killed
export or reproduction) need `zoo` in processes of their own, to kill, signal, starve of disk
or run side by side: about 40 per suite. Each used to pay TensorFlow's, Keras's and zoo's
imports, ~5.5 CPU-s of the ~10-20 such a process takes (docs/measurements.md, "The test
suite"). `start` sends the command instead to this test process's fork server, which has
done those imports once and forks a child per command. The child is a real process, whose pid
the test signals and whose exit status it gets as `subprocess.Popen` reports it; it takes the
command's environment, working directory and standard streams, and runs MODULE as
`python -m` does, to the interpreter's own exit. What it shares with the server is the
imported modules (imports have no side effects zoo relies on: the server checks that
TensorFlow's runtime has not started, so no thread pool is forked half-made).

A command whose environment differs from the server's in anything but `RUNTIME` (variables
read after start-up) and what the server's imports set runs in a fresh interpreter instead, as
do all of them with `ZOO_TEST_FORK=0`; where the test process's own environment has changed
since the server started, a new server is started. The start-up itself stays checked in
fresh processes: `make test-pythons` (TensorFlow's lines kept off the terminal, where zoo is
imported from), tests/test_cli.py (help and --version without TensorFlow), the `zoo predict`
of tests/test_text_classification.py and the `zoo data samples` of tests/test_samples.py.
"""

import atexit
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the server imports before it forks: what `zoo train`, `zoo export`, `zoo predict`,
# `zoo reproduce` and `zoo data` load (zoo_cli/main.py imports TensorFlow, then the command).
PRELOAD = ("tensorflow", "keras", "zoo", "zoo_tasks", "zoo_tasks.runs", "zoo_cli.main",
           "zoo_cli.train", "zoo_cli.export", "zoo_cli.predict", "zoo_cli.reproduce",
           "zoo_cli.data", "zoo.training.preemption", "tests.faults")
# Environment variables read after start-up, which may differ from the server's: the cluster
# of a multi-worker run, the traceback switch, the temporary folder (the child forgets the
# server's), pytest's current test and this module's own switch.
RUNTIME = {"TF_CONFIG", "ZOO_TRACEBACK", "TMPDIR", "PYTEST_CURRENT_TEST", "ZOO_TEST_FORK"}
# The environment of every `zoo` process the tests start (besides `RUNTIME` variables).
BASE_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO, "KERAS_BACKEND": "tensorflow"}


# --- The server (`python -m tests.forkserver SOCKET`) ---

def _serve(path, imported):
    """Accept commands on the unix socket `path` until stdin closes. Returns only in a forked
    child, with the child's command. `imported`: the variables the imports set, told to the
    test process with "ready"."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a child's exit wakes the select
    children = {}  # pid -> the connection its exit status goes back on
    print("ready", json.dumps(imported), flush=True)
    while True:
        ready, _, _ = select.select([listener, wake_r, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1024):
            for pid in children:  # the test process is gone: so are its commands
                os.kill(pid, signal.SIGKILL)
            return None
        if wake_r in ready:
            os.read(wake_r, 4096)
            while children:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
                if pid == 0:
                    break
                conn = children.pop(pid)
                _reply(conn, {"exit": os.waitstatus_to_exitcode(status),
                              "cpu": usage.ru_utime + usage.ru_stime})
                conn.close()
        if listener in ready:
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            if not message or len(fds) != 3:  # a test process that went away
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for sock in (listener, conn, *children.values()):
                    sock.close()
                os.close(wake_r)
                os.close(wake_w)
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                for fd in set(fds):
                    os.close(fd)
                return json.loads(message)
            for fd in set(fds):
                os.close(fd)
            if _reply(conn, {"pid": pid}):
                children[pid] = conn
            else:
                os.kill(pid, signal.SIGKILL)  # no one to report to
                os.waitpid(pid, 0)
                conn.close()


def _reply(conn, message):
    """Send `message` to the test process; False where it has closed its end."""
    try:
        conn.send(json.dumps(message).encode())
        return True
    except OSError:
        return False


def _main(path):
    before = dict(os.environ)
    # TensorFlow's start-up lines (written before its logging starts) go to a file, not to the
    # test's stderr; the children get their own streams.
    saved = os.dup(2)
    with open(path + ".imports.txt", "w") as log:
        os.dup2(log.fileno(), 2)
        try:
            for module in PRELOAD:
                __import__(module)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    from tensorflow.python.eager import context

    if context.context()._context_handle is not None:
        raise SystemExit("forkserver: TensorFlow's runtime started during the imports")
    # What the imports set (TensorFlow: TF2_BEHAVIOR, TPU_ML_PLATFORM, KMP_* ...): a fresh
    # process's imports set them too, whatever the test process had imported.
    imported = {k: v for k, v in os.environ.items() if before.get(k) != v}
    command = _serve(path, imported)
    if command is None:
        return
    # The child: `python -m MODULE ARGS` in the command's folder and environment, with what
    # its imports would have set.
    os.chdir(command["cwd"])
    os.environ.clear()
    os.environ.update({**command["env"], **imported})
    tempfile.tempdir = None
    sys.argv = [command["module"], *command["args"]]
    # Run as `python -m` runs it: a module of its own named __main__ (imported here it is in
    # sys.modules, and runpy would warn on stderr).
    sys.modules.pop(command["module"], None)
    runpy.run_module(command["module"], run_name="__main__", alter_sys=True)


# --- The test side ---

_SERVER = {}  # this test process's current fork server: proc, path, env, imported
# Commands forked and started fresh in this test process, servers started, and the CPU
# seconds of the forked commands that have ended (not in this process's `os.times`: they are
# the server's children).
STATS = {"forked": 0, "fresh": 0, "servers": 0, "cpu": 0.0}


def _differs(env, server_env, imported):
    """The variables, besides `RUNTIME` ones and those the server's imports set, in which
    `env` differs from the server's."""
    keys = (set(env) | set(server_env)) - RUNTIME - set(imported)
    return sorted(k for k in keys if env.get(k) != server_env.get(k))


def _server():
    """This test process's fork server for its environment now (plus `BASE_ENV`), started on
    first use and again when the environment has changed (a library imported since has set a
    variable: sentence-transformers sets TORCHINDUCTOR_CACHE_DIR, say); an earlier server
    stays up for the commands it started. None if one died or could not start: every later
    command then starts fresh."""
    env = {**os.environ, **BASE_ENV}
    if _SERVER:
        if _SERVER["proc"].poll() is not None:
            return None
        if not _differs(env, _SERVER["env"], _SERVER["imported"]):
            return _SERVER
    folder = tempfile.mkdtemp(prefix="forkserver_")
    path = os.path.join(folder, "socket")
    proc = subprocess.Popen([sys.executable, "-m", "tests.forkserver", path], cwd=REPO, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = proc.stdout.readline().split(" ", 1)
    atexit.register(lambda: proc.poll() is None and (proc.stdin.close(), proc.wait()))
    _SERVER.update(proc=proc, path=path, env=env)
    if ready[0] != "ready":
        proc.kill()
        proc.wait()
        return None
    _SERVER["imported"] = json.loads(ready[1])
    STATS["servers"] += 1
    return _SERVER


class Forked:
    """A command the fork server started: the part of `subprocess.Popen` the tests use."""

    def __init__(self, args, conn, pid, stdout, stderr):
        self.args, self.pid, self.returncode = args, pid, None
        self.stdout, self.stderr = stdout, stderr
        self._conn = conn
        self._output = None

    def poll(self):
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def _read_status(self):
        message = self._conn.recv(4096)
        self._conn.close()
        if not message:
            raise RuntimeError(f"the fork server exited before {self.args} (pid {self.pid})")
        status = json.loads(message)
        self.returncode = status["exit"]
        STATS["cpu"] += status["cpu"]  # a child of the server: tests.suite_profile adds it

    def wait(self, timeout=None):
        if self.returncode is None:
            if not select.select([self._conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._read_status()
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def communicate(self, timeout=None):
        """(stdout, stderr) read to their ends, once the command has exited."""
        if self._output is None:  # the pipes are read by threads, as Popen does with a timeout
            self._output = {}

            def read(name, stream):
                self._output[name] = stream.read()
                stream.close()
            self._readers = [threading.Thread(target=read, args=(name, stream), daemon=True)
                             for name, stream in (("stdout", self.stdout), ("stderr", self.stderr))
                             if stream is not None]
            for reader in self._readers:
                reader.start()
        self.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self._output.get("stdout"), self._output.get("stderr")


def _fds(stdout, stderr):
    """(fds to send, fds to close here, (our stdout, our stderr) streams) for Popen-style
    stdout / stderr arguments: PIPE, DEVNULL, STDOUT (stderr only) or None (inherited)."""
    send, close, ours = [], [], []
    for which, target in ((1, stdout), (2, stderr)):
        if target == subprocess.PIPE:
            read, write = os.pipe()
            send.append(write)
            close.append(write)
            ours.append(open(read, encoding="utf-8", errors="replace"))
        elif target == subprocess.STDOUT:
            send.append(send[0])
            ours.append(None)
        elif target == subprocess.DEVNULL:
            null = os.open(os.devnull, os.O_WRONLY)
            send.append(null)
            close.append(null)
            ours.append(None)
        elif target is None:
            send.append(which)
            ours.append(None)
        else:
            raise ValueError(f"unsupported stream {target!r}")
    null = os.open(os.devnull, os.O_RDONLY)  # stdin
    return [null, *send], [null, *close], ours


def start(module, args, env=None, cwd=REPO, stdout=None, stderr=None):
    """`python -m MODULE ARGS` with `env` (the test process's environment by default;
    `BASE_ENV` for what it does not set), as a `Forked` from the fork server, or as a fresh
    `subprocess.Popen` (text mode) where the environment differs in what is read at start-up,
    or with `ZOO_TEST_FORK=0`."""
    env = {**BASE_ENV, **(os.environ if env is None else env)}
    args = [str(a) for a in args]
    server = _server() if os.environ.get("ZOO_TEST_FORK", "1") != "0" else None
    if server is None or _differs(env, server["env"], server["imported"]):
        STATS["fresh"] += 1
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                                stdout=stdout, stderr=stderr, text=True)
    send, close, (out, err) = _fds(stdout, stderr)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(server["path"])
        socket.send_fds(conn, [json.dumps({"module": module, "args": args, "cwd": str(cwd),
                                           "env": env}).encode()], send)
    finally:
        for fd in close:
            os.close(fd)
    reply = conn.recv(4096)
    if not reply:
        raise RuntimeError(f"the fork server did not start {module} {args}")
    STATS["forked"] += 1
    return Forked([module, *args], conn, json.loads(reply)["pid"], out, err)


def run(module, args, env=None, cwd=REPO, stdout=None, stderr=None, timeout=None):
    """`start`, then wait: a `subprocess.CompletedProcess`, as `subprocess.run` gives."""
    proc = start(module, args, env, cwd, stdout, stderr)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


if __name__ == "__main__":
    _main(sys.argv[1])
