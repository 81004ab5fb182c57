#!/usr/bin/env bash
# `make test-pythons`: the built wheel on each Python zoo declares (python_requires), in a fresh
# environment per version with the tested dependency set (constraints.txt), and a smoke run
# from an empty directory: `zoo demo --models bert_tiny`, then a tiny `zoo train` -> `zoo
# export` -> `zoo predict`. An interpreter is `pythonX.Y` on PATH or pyenv's X.Y.*.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${PYTHONS:-3.11 3.12 3.13}
OUT=${OUT:-build/pythons}
rm -rf "$OUT" && mkdir -p "$OUT"
.venv/bin/python -m pip wheel . --no-deps --no-build-isolation -q -w "$OUT/wheel"
WHEEL=$(ls "$OUT"/wheel/zoo_models-*.whl)

find_python() {
    if command -v "python$1" >/dev/null 2>&1 && "python$1" -c "" 2>/dev/null; then
        command -v "python$1"; return
    fi
    local root
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    ls -d "$root"/versions/"$1".*/bin/"python$1" 2>/dev/null | sort -V | tail -1
}

for version in $VERSIONS; do
    python=$(find_python "$version")
    [ -n "$python" ] || { echo "test-pythons: no Python $version (python$version or pyenv)"; exit 1; }
    env="$OUT/env-$version" work="$OUT/work-$version"
    echo "== Python $version: $python"
    "$python" -m venv "$env"
    "$env/bin/python" -m pip install -q --upgrade pip
    "$env/bin/python" -m pip install -q -c constraints.txt "$WHEEL"
    "$env/bin/python" -m pip check
    mkdir -p "$work"
    (
        cd "$work"
        export TF_CPP_MIN_LOG_LEVEL=3 PATH="$PWD/../env-$version/bin:$PATH"
        zoo --version
        zoo demo --models bert_tiny
        zoo data samples --out samples > /dev/null
        zoo data vocab --kind wordpiece --size 500 --corpus samples/corpus/corpus.txt \
            --out vocab > /dev/null 2>&1
        zoo train --experiment bert/glue_mrpc --set data.dir=samples/glue/MRPC \
            --set model.preset=bert_tiny --set model.vocabulary=vocab \
            --set data.sequence_length=32 --set train.steps=4 --set train.eval_every=4 \
            --run-dir runs/mrpc 2>/dev/null | tail -2
        zoo export --run-dir runs/mrpc --out exports/mrpc > export.txt 2>/dev/null
        head -1 export.txt
        printf '%s\n' '{"sentence1": "A cat sat .", "sentence2": "The cat sat ."}' > requests.jsonl
        answer=$(zoo predict --saved-model exports/mrpc --input requests.jsonl 2>/dev/null)
        echo "$answer"
        case "$answer" in *'"label": "'[01]'"'*) ;; *) echo "no label in: $answer"; exit 1;; esac
    )
    echo "== Python $version: passed"
done
