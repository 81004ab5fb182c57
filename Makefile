# Two commands do all set-up: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
WORKERS ?= 2
export TF_CPP_MIN_LOG_LEVEL := 3
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test test-benchmark test-pythons lint docs install install-test clean

$(VENV)/.installed: setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e .
	touch $@

# One install of the runtime and the test extras (a fresh clone's CI), by uv with pip's settings
# (.ci/uv_as_pip.py): the same set as pip installs, in 67 s of wall clock instead of 153 on the
# EPYC, the bytecode compiled on both cores (docs/measurements.md, "The test suite"). It leaves
# .installed done too: the same files, the same constraints.
$(VENV)/.installed-test: setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt uv
	$(PY) .ci/uv_as_pip.py pip install -q --python $(PY) --compile-bytecode -c constraints.txt \
		-e '.[test]'
	$(PY) -m pip check
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(VENV)/bin/zoo demo

# Two workers on two cores (WORKERS): each runs TensorFlow on one thread (tests/conftest.py).
# CI runs `make test-benchmark` beside `make test` (.ci/run), which fills the time a worker
# spends starting processes and waiting on them, so a third worker finds no idle core to fill:
# the same tests took 1,309-1,406 s of pytest on two in three CIs, 1,395-1,407 s on three in
# two, within the noise of single CIs (docs/measurements.md, "The test suite"). Each file runs
# in one worker (its module fixtures are trained once), the longest files first
# (tests/conftest.py, LONGEST_FIRST), in that order.
# tests/test_benchmark.py (`zoo benchmark all --tiny`: every library in its own processes, ~5
# minutes of CPU) is not part of it: `make test-benchmark`.
# Each test's and fixture's time goes to build/test-profile (tests/suite_profile.py:
# `$(PY) -m tests.suite_profile build/test-profile` groups them); the run ends with its time
# against its budget (tests/budget.py). The asserts that pass are counted only when asked
# (`-o enable_assertion_pass_hook=true`, then `tests.suite_profile --asserts`): pytest then
# explains every passing assert, which cost test_pretraining's loops ~100 CPU-s.
test: lint
	rm -rf build/test-profile
	ZOO_TEST_PROFILE=build/test-profile $(PY) -m pytest -n $(WORKERS) --dist loadfile \
		--no-loadscope-reorder -q --durations=15 --ignore=tests/test_benchmark.py

# The measurement lab's checks (zoo_benchmarks/, tests/test_benchmark.py): `zoo benchmark all
# --tiny` writes every section and the libraries agree; the GPU script runs zoo on JAX without
# TensorFlow. Two workers: the two halves of `all` (tests/test_benchmark.py's HALVES and
# xdist groups) run at once: alone, `all` keeps about one of the two cores busy.
test-benchmark: $(VENV)/.installed-test
	$(PY) -m pytest -n 2 --dist loadgroup -q --durations=5 tests/test_benchmark.py

# The built wheel on Python 3.11, 3.12 and 3.13, each in a fresh environment with the tested
# dependency set, and a smoke run (demo, train, export, predict) on each but `make test`'s own
# 3.11 (TESTED): .ci/pythons.sh. It needs no .venv (the first Python builds the wheel): CI runs
# it beside `make install-test` and `make test`; PYTHONS="3.13" make test-pythons checks one
# version, `TESTED= make test-pythons` smoke-runs all three.
test-pythons:
	bash .ci/pythons.sh

# pycodestyle's errors and warnings, pyflakes, isort's import order and unused noqa codes, by
# ruff (its settings: pyproject.toml); then the continuation-line rules ruff does not have
# (pycodestyle's E127, E128, E131: a line that continues a bracket lines up with it).
# tests/test_layout.py checks the same rules in docstring examples.
CODE := zoo zoo_tasks zoo_cli zoo_benchmarks tests
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pycodestyle --select=E127,E128,E131 --max-line-length=100 $(CODE)

# The documentation site (mkdocs.yml) into site/; `$(VENV)/bin/mkdocs serve` to browse it.
docs: $(VENV)/.installed-test
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build site *.egg-info
