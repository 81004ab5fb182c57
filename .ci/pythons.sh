#!/usr/bin/env bash
# `make test-pythons`: the built wheel on each Python zoo declares (python_requires), in a fresh
# environment per version with the tested dependency set (constraints.txt), and a smoke run
# from an empty directory, beside stand-ins for PyPI's `tools` and `tasks`: `zoo benchmark`'s
# one-line refusal (the lab is not in the wheel), `zoo demo --models bert_tiny`, `zoo reproduce
# --list`, then a tiny `zoo train` -> `zoo export` -> `zoo predict`, none of which may print
# TensorFlow's start-up lines. An interpreter is `pythonX.Y` on PATH
# or pyenv's X.Y.*.
#
# The Python `make test` runs on (TESTED, the Makefile's PYTHON: 3.11) gets the wheel, `pip
# check`, the check that zoo is imported from the wheel, `zoo --version` and the stand-ins, but
# not the smoke run: `make test` runs those commands on that Python with the same dependency
# set (tests/test_cli.py, test_samples.py, test_reproduce.py, test_export.py ...), and the
# other Pythons smoke-run the same wheel (one py3-none-any file, the same package data and
# start-up lines), so it repeated both, ~50 CPU-s of CI (docs/measurements.md, "The test
# suite"). `TESTED= PYTHONS=3.11 make test-pythons` smoke-runs 3.11 as well.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${PYTHONS:-3.11 3.12 3.13}
TESTED=${TESTED-3.11}
OUT=${OUT:-build/pythons}
rm -rf "$OUT" && mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)

find_python() {
    if command -v "python$1" >/dev/null 2>&1 && "python$1" -c "" 2>/dev/null; then
        command -v "python$1"; return
    fi
    local root
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    ls -d "$root"/versions/"$1".*/bin/"python$1" 2>/dev/null | sort -V | tail -1
}

# The wheel, built by the first Python (an isolated build: pyproject.toml's setuptools) from a
# copy of what it is built from (as tests/test_packaging.py builds it), without .venv: CI
# starts this beside `make install-test`, whose editable install writes zoo_models.egg-info
# into the tree, and uses the core that install leaves idle.
builder=$(find_python "${VERSIONS%% *}")
[ -n "$builder" ] || { echo "test-pythons: no Python ${VERSIONS%% *} to build the wheel"; exit 1; }
mkdir -p "$OUT/source"
tar -c --exclude=__pycache__ setup.cfg pyproject.toml README.md zoo zoo_tasks zoo_cli \
    zoo_benchmarks | tar -x -C "$OUT/source"
"$builder" -m pip wheel "$OUT/source" --no-deps -q -w "$OUT/wheel"
WHEEL=$(ls "$OUT"/wheel/zoo_models-*.whl)
# The wheel ships zoo, zoo_tasks and zoo_cli; the measurement lab is not in it.
if "$builder" -m zipfile -l "$WHEEL" | grep -q "zoo_benchmarks/"; then
    echo "the wheel ships the measurement lab (zoo_benchmarks/)"; exit 1
fi

# uv installs each environment, with this machine's pip settings (.ci/uv_as_pip.py): 10-12 s a
# version where pip took 33-43 (docs/measurements.md, "The test suite"). It runs from an
# environment of its own.
"$builder" -m venv "$OUT/uv"
"$OUT/uv/bin/python" -m pip install -q -c constraints.txt uv
uv() { "$OUT/uv/bin/python" .ci/uv_as_pip.py "$@"; }

# PyPI's `tools` and `tasks` distributions install import packages of those names (zoo's first
# layout used them): stand-ins are installed first, and must still import after zoo.
STAND_INS="$OUT/stand-ins"
mkdir -p "$STAND_INS"
"$builder" - "$STAND_INS" <<'PY'
import os, sys, zipfile
for name in ("tools", "tasks"):
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(os.path.join(sys.argv[1], f"{name}-1.0-py3-none-any.whl"), "w") as w:
        w.writestr(f"{name}/__init__.py", f"STAND_IN = {name!r}\n")
        w.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        w.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: zoo\nRoot-Is-Purelib: true\n"
                                    "Tag: py3-none-any\n")
        w.writestr(f"{info}/RECORD", "")
PY

# The stand-ins still import, zoo installed beside them (the environment's `python` on PATH).
stand_ins_import() {
    test "$(python -c 'import tools, tasks; print(tools.STAND_IN, tasks.STAND_IN)')" = \
        "tools tasks" || { echo "the stand-ins for tools and tasks no longer import"; return 1; }
}

# zoo as a user runs it (TF_CPP_MIN_LOG_LEVEL unset): fails on a TensorFlow start-up line,
# which TensorFlow writes before absl's logging starts; prints zoo's standard output.
zoo_quiet() {
    local out="$OUT/zoo.out" err="$OUT/zoo.err"
    if ! zoo "$@" >"$out" 2>"$err"; then
        echo "zoo $* failed:"; tail -n 20 "$out" "$err"; return 1
    fi
    if grep -E 'absl::InitializeLog|oneDNN custom operations|cuda drivers|cudart_stub|port\.cc|cpu_feature_guard' "$out" "$err"; then
        echo "zoo $*: TensorFlow start-up lines reach the user (above)"; return 1
    fi
    cat "$out"
}

for version in $VERSIONS; do
    python=$(find_python "$version")
    [ -n "$python" ] || { echo "test-pythons: no Python $version (python$version or pyenv)"; exit 1; }
    env="$OUT/env-$version" work="$OUT/work-$version"
    echo "== Python $version: $python"
    "$python" -m venv "$env"
    uv pip install -q --python "$env/bin/python" --no-deps --no-index "$STAND_INS"/*.whl
    # No bytecode (uv compiles none unless asked; pip's --no-compile): compiling every module of
    # every dependency took ~20 CPU-s a version, TensorFlow's thousands of files; the smoke run
    # compiles only what it imports, once: its first command writes the bytecode the others
    # read (PYTHONDONTWRITEBYTECODE is unset below; where it was set, each command compiled
    # TensorFlow again, ~8 CPU-s).
    uv pip install -q --python "$env/bin/python" -c constraints.txt "$WHEEL"
    "$env/bin/python" -m pip check
    mkdir -p "$work"
    (
        cd "$work"
        unset TF_CPP_MIN_LOG_LEVEL KERAS_BACKEND PYTHONPATH PYTHONDONTWRITEBYTECODE
        export PATH="$PWD/../env-$version/bin:$PATH"
        site=$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
        # Where each package would be imported from (its spec: found, not run, so without
        # TensorFlow's ~10 s start-up; the smoke run below imports them).
        python -c "import importlib.util as u, sys; sys.exit(any(not u.find_spec(m).origin \
            .startswith(sys.argv[1]) for m in ('zoo_cli', 'zoo_tasks', 'zoo')))" \
            "$site" 2>/dev/null || { echo "zoo is not imported from the wheel"; exit 1; }
        zoo --version
        if [ "$version" = "$TESTED" ]; then
            stand_ins_import
            echo "no smoke run: \`make test\` runs its commands on Python $version (TESTED=$TESTED)"
            exit 0
        fi
        # The measurement lab (zoo_benchmarks/) stays in the repository: `zoo benchmark` from
        # the wheel fails with one line saying where it runs.
        if zoo benchmark tokenizers >"$OUT/bench.out" 2>"$OUT/bench.err"; then
            echo "zoo benchmark ran from the wheel"; exit 1
        fi
        if [ "$(wc -l <"$OUT/bench.err")" -ne 1 ] || \
                ! grep -q "run it from a clone of the repository" "$OUT/bench.err"; then
            echo "zoo benchmark from the wheel, not one line saying so:"; cat "$OUT/bench.err"
            exit 1
        fi
        zoo_quiet demo --models bert_tiny
        zoo_quiet reproduce --list | grep -q "bert/imdb"
        zoo_quiet data samples --out samples > /dev/null
        zoo_quiet data vocab --kind wordpiece --size 500 --corpus samples/corpus/corpus.txt \
            --out vocab > /dev/null
        zoo_quiet train --experiment bert/glue_mrpc --set data.dir=samples/glue/MRPC \
            --set model.preset=bert_tiny --set model.vocabulary=vocab \
            --set data.sequence_length=32 --set train.steps=4 --set train.eval_every=4 \
            --run-dir runs/mrpc | tail -2
        test -f runs/mrpc/final.keras
        zoo_quiet export --run-dir runs/mrpc --out exports/mrpc | head -1
        printf '%s\n' '{"sentence1": "A cat sat .", "sentence2": "The cat sat ."}' > requests.jsonl
        answer=$(zoo_quiet predict --saved-model exports/mrpc --input requests.jsonl)
        echo "$answer"
        case "$answer" in *'"label": "'[01]'"'*) ;; *) echo "no label in: $answer"; exit 1;; esac
        stand_ins_import
    )
    echo "== Python $version: passed"
done
