#!/bin/sh
# Regenerate tests/data/golden/llama_quant/ from scratch.
#
# usage: run.sh WORK_DIR [LLAMA_CPP_SRC]
#   WORK_DIR       scratch space outside the repository (~1.5 GB: the build, the sources
#                  models, one output at a time)
#   LLAMA_CPP_SRC  optional unpacked vendor/llama.cpp of llama-cpp-python 0.3.36
# PYTHON (default: the repository's .venv) must have gguf and numpy.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python3}
WORK=${1:?usage: run.sh WORK_DIR [LLAMA_CPP_SRC]}
mkdir -p "$WORK"

QBIN=$(PYTHON="$PY" "$HERE/build_llama_quantize.sh" "$WORK/lq" ${2:+"$2"} | tail -n 1)
"$PY" "$HERE/gen_models.py" "$WORK/models"
for f in "$WORK"/models/*.gguf; do
    case "$f" in *.imatrix.gguf) continue ;; esac
    "$PY" "$HERE/gen_imatrix.py" "$f" "${f%.gguf}.imatrix.gguf"
done
cd "$HERE"
"$PY" "$HERE/gen_tables.py" "$QBIN" "$WORK/models" "$ROOT/tests/data/golden/llama_quant"
