#!/bin/sh
# Builds ggml's quantizers from the pinned source outside this repository, runs
# gen_quant_goldens.c against them, and compares what it writes with the committed goldens in
# tests/data/golden (README.md here).
#   build_and_run.sh [OUT_DIR [GGML_DIR]]
# OUT_DIR: where the regenerated files go (default: a temporary folder, removed afterwards);
#   give tests/data/golden to rewrite the goldens themselves (then `git diff` is the check).
# GGML_DIR: a ggml source tree (the folder holding include/ and src/); default: the ggml/
#   folder of llama.cpp vendored in the llama-cpp-python 0.3.36 sdist, downloaded with pip
#   and checked against its sha256.
# Exits non-zero if a regenerated file differs from the committed one. Nothing built here is
# committed; only the outputs are.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
GOLDEN=$ROOT/tests/data/golden
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ggml-quant-gen.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
OUT=${1:-$WORK/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ $# -ge 2 ]; then
  G=$(cd "$2" && pwd)
else
  V=0.3.36
  SHA=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
  python3 -m pip download "llama-cpp-python==$V" --no-binary :all: --no-deps -d "$WORK/dl" >&2
  echo "$SHA  $WORK/dl/llama_cpp_python-$V.tar.gz" | sha256sum -c --quiet - >&2
  tar -xzf "$WORK/dl/llama_cpp_python-$V.tar.gz" -C "$WORK" "llama_cpp_python-$V/vendor/llama.cpp/ggml"
  G=$WORK/llama_cpp_python-$V/vendor/llama.cpp/ggml
fi
[ -f "$G/src/ggml-quants.c" ] || { echo "build_and_run.sh: no src/ggml-quants.c under $G" >&2; exit 2; }

# The flags the goldens were made with: no -march, so no F16C and ggml's portable fp16
# conversion; no contraction, so no fused multiply-add changes a rounding.
F="-O2 -ffp-contract=off -fPIC -DNDEBUG -I$WORK -I$G/include -I$G/src"
cd "$WORK"
# The version strings: the sdist's ggml.c includes ggml-version.h (configured by CMake from
# ggml-version.h.in), older trees such as the ggml commit of tests/data/golden/README.md take
# them as -D definitions. Both, with the same placeholder.
printf '#pragma once\n#define GGML_VERSION "unknown"\n#define GGML_COMMIT "unknown"\n' > ggml-version.h
gcc -std=gnu11 $F -D_GNU_SOURCE -DGGML_VERSION='"unknown"' -DGGML_COMMIT='"unknown"' -c "$G/src/ggml.c" -o ggml.o
gcc -std=gnu11 $F -D_GNU_SOURCE -c "$G/src/ggml-quants.c" -o ggml-quants.o
g++ -std=c++17 $F -c "$G/src/ggml-threading.cpp" -o ggml-threading.o
cat > stubs.c <<'STUBS'
#include <stdlib.h>
/* backend entry points ggml.c references for tensors in backend buffers; the generator
   creates no tensor */
void ggml_backend_buffer_get_usage(void) { abort(); }
void ggml_backend_tensor_set(void) { abort(); }
void ggml_backend_tensor_get(void) { abort(); }
void ggml_backend_tensor_memset(void) { abort(); }
STUBS
gcc -O2 -c stubs.c -o stubs.o
gcc -std=gnu11 $F -D_GNU_SOURCE -I"$GOLDEN/weighted" -Wall -Wextra -c "$HERE/gen_quant_goldens.c" -o gen.o
g++ -o gen_quant_goldens gen.o ggml.o ggml-quants.o ggml-threading.o stubs.o -lm -lpthread
./gen_quant_goldens "$OUT"

[ "$OUT" = "$(cd "$GOLDEN" && pwd)" ] && exit 0
status=0
for f in "$OUT"/*.bin; do
  b=$(basename "$f")
  if cmp -s "$f" "$GOLDEN/$b"; then
    echo "same     $b"
  else
    echo "DIFFERS  $b"
    status=1
  fi
done
exit $status
