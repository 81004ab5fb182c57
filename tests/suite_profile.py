"""The test suite's own clock: each test's and each fixture's time, and the run against its budget.

A pytest plugin (tests/conftest.py loads it). For every test phase (setup, call, teardown) and
every fixture set-up it records the wall-clock seconds and the CPU seconds of the worker process
and of the processes it started and waited on (`os.times`). With `ZOO_TEST_PROFILE=<folder>` set,
each process (the xdist controller and each worker) writes them there, one JSON line a record, so
that `python -m tests.suite_profile <folder>` can group them (docs/measurements.md, "The test
suite"). At the end of a run the controller prints the suite's wall-clock time against
`BUDGET_S`, and names each test over `SLOW_S` that `tests/budget.py` does not give a reason for.
"""

import json
import os
import sys
import time
from collections import defaultdict

import pytest

from tests import forkserver
from tests.budget import BUDGET_S, SLOW, SLOW_S


def _cpu():
    t = os.times()  # and the `zoo` commands forked for this process (tests.forkserver)
    return t.user + t.system + t.children_user + t.children_system + forkserver.STATS["cpu"]


class _Clock:
    def __init__(self, folder):
        self.folder = folder
        self.file = None
        self.started = time.monotonic()
        self.durations = defaultdict(float)  # nodeid -> wall seconds, setup + call + teardown
        self.asserts = defaultdict(lambda: defaultdict(int))  # nodeid -> {line: passes}

    def write(self, record):
        if self.folder is None:
            return
        if self.file is None:
            os.makedirs(self.folder, exist_ok=True)
            name = os.environ.get("PYTEST_XDIST_WORKER", "main")
            # Appended one line at a time: a record is whole or missing, never half a line
            # that hides the next. A profile is a measurement, not a run's output.
            self.file = open(os.path.join(self.folder, f"{name}.jsonl"), "a")
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()


def pytest_configure(config):
    folder = os.environ.get("ZOO_TEST_PROFILE")
    # Absolute now: a test may change the working directory before the first record.
    config._zoo_clock = _Clock(os.path.abspath(folder) if folder else None)


def _timed(kind, name, phase, config):
    wall, cpu = time.monotonic(), _cpu()
    yield
    clock = config._zoo_clock
    record = {"kind": kind, "id": name, "phase": phase,
              "wall": round(time.monotonic() - wall, 3), "cpu": round(_cpu() - cpu, 3)}
    clock.write(record)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _timed("test", item.nodeid, "setup", item.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _timed("test", item.nodeid, "call", item.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _timed("test", item.nodeid, "teardown", item.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """A fixture's own set-up time: pytest sets up the fixtures it names before this hook."""
    where = request.node.nodeid if fixturedef.scope == "function" else (
        getattr(request.node, "nodeid", "") or fixturedef.baseid)
    yield from _timed("fixture", f"{fixturedef.scope}:{fixturedef.argname}",
                      where, request.config)


def pytest_assertion_pass(item, lineno, orig, expl):
    """Each passing `assert` of a test module, counted per test (only with pytest's
    `enable_assertion_pass_hook`, which the profile run sets: `-o enable_assertion_pass_hook=true`).
    """
    item.config._zoo_clock.asserts[item.nodeid][lineno] += 1


def pytest_sessionfinish(session):
    clock = session.config._zoo_clock
    for nodeid, lines in clock.asserts.items():
        clock.write({"kind": "asserts", "id": nodeid, "n": sum(lines.values()),
                     "lines": sorted(lines)})
    if forkserver.STATS["forked"] or forkserver.STATS["fresh"]:
        clock.write({"kind": "forkserver", **forkserver.STATS})


def pytest_runtest_logreport(report):
    """The controller sees every worker's reports: it sums each test's three phases."""
    config = _CONFIG.get("config")
    if config is not None:
        config._zoo_clock.durations[report.nodeid] += report.duration


_CONFIG = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _CONFIG["config"] = session.config


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return
    clock = config._zoo_clock
    wall = time.monotonic() - clock.started
    slow = sorted(((d, n) for n, d in clock.durations.items()
                   if d > SLOW_S and n not in SLOW), reverse=True)
    terminalreporter.write_sep("-", "the suite against its budget (tests/budget.py)")
    terminalreporter.write_line(
        f"suite: {wall:.0f} s of wall clock against a budget of {BUDGET_S} s "
        f"({100 * wall / BUDGET_S:.0f} %)")
    if clock.folder and clock.durations:  # the run's test times, for tests/durations.json
        os.makedirs(clock.folder, exist_ok=True)
        with open(os.path.join(clock.folder, "durations.json"), "w") as f:
            json.dump(durations_record(clock.durations, wall), f, indent=1)
    for duration, nodeid in slow:
        terminalreporter.write_line(
            f"over {SLOW_S} s without a reason in tests/budget.py SLOW: {nodeid} "
            f"({duration:.0f} s)")


def durations_record(durations, wall):
    """What tests/durations.json holds: the run's wall-clock seconds and each test's seconds
    (set-up, call and teardown) over a tenth of SLOW_S, longest first."""
    return {"suite_seconds": round(wall), "tests": {
        nodeid: round(seconds, 1) for nodeid, seconds in
        sorted(durations.items(), key=lambda kv: -kv[1]) if seconds > SLOW_S / 10}}


def _load(folder):
    records = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name)) as f:
                records += [json.loads(line) for line in f if line.endswith("\n")]
    return records


def report(folder, top=40):
    """Per test file and per fixture: summed wall and CPU seconds, largest CPU first."""
    records = _load(folder)
    files = defaultdict(lambda: [0.0, 0.0, 0])
    fixtures = defaultdict(lambda: [0.0, 0.0, 0])
    tests = defaultdict(lambda: [0.0, 0.0])
    for r in records:
        if r["kind"] == "test":
            path = r["id"].split("::")[0]
            files[path][0] += r["wall"]
            files[path][1] += r["cpu"]
            files[path][2] += r["phase"] == "call"
            tests[r["id"]][0] += r["wall"]
            tests[r["id"]][1] += r["cpu"]
        elif r["kind"] == "fixture":
            key = (r["id"], r["phase"].split("::")[0])
            fixtures[key][0] += r["wall"]
            fixtures[key][1] += r["cpu"]
            fixtures[key][2] += 1
    total_wall = sum(v[0] for v in files.values())
    total_cpu = sum(v[1] for v in files.values())
    print(f"all tests: {total_wall:.0f} s wall, {total_cpu:.0f} CPU-s, {len(tests)} tests")
    forks = [r for r in records if r["kind"] == "forkserver"]
    if forks:  # tests.forkserver's commands, all test processes together
        print("zoo commands (tests.forkserver): " + ", ".join(
            f"{sum(r[key] for r in forks):.0f} {key}" for key in ("forked", "fresh", "servers")))
    print("\n| file | tests | wall s | CPU-s |\n|---|---|---|---|")
    for path, (w, c, n) in sorted(files.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| {path} | {n} | {w:.0f} | {c:.0f} |")
    print("\n| fixture (scope:name) | where | set-ups | wall s | CPU-s |\n|---|---|---|---|---|")
    for (name, where), (w, c, n) in sorted(fixtures.items(), key=lambda kv: -kv[1][1])[:top]:
        if c >= 1:
            print(f"| {name} | {where} | {n} | {w:.0f} | {c:.0f} |")
    print("\n| test | wall s | CPU-s |\n|---|---|---|")
    for nodeid, (w, c) in sorted(tests.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"| {nodeid} | {w:.0f} | {c:.0f} |")


def asserts(folder):
    """{test file: "passes/statements"}: the passing asserts of a profile run with
    `enable_assertion_pass_hook`, and the distinct assert statements that passed in each test,
    summed over its tests (a loop's assert counted once a test)."""
    counts = defaultdict(lambda: [0, 0])
    for r in _load(folder):
        if r["kind"] == "asserts":
            counts[r["id"].split("::")[0]][0] += r["n"]
            counts[r["id"].split("::")[0]][1] += len(r.get("lines", ()))
    return {path: f"{n}/{lines}" for path, (n, lines) in counts.items()}


if __name__ == "__main__":
    if sys.argv[1] == "--asserts":  # python -m tests.suite_profile --asserts BEFORE [AFTER]
        tables = [asserts(folder) for folder in sys.argv[2:]]
        for path in sorted(set().union(*tables)):
            print(path, *(t.get(path, "0/0") for t in tables))
    else:
        report(sys.argv[1], *(int(a) for a in sys.argv[2:]))
