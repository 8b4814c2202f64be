#!/usr/bin/env bash
# Builds ggml's quantizer library (ggml.c, ggml-quants.c, ggml-threading.cpp: no CPU backend,
# so ggml's portable scalar codecs and fp16 conversion) and bench/ggml_peer/ggml_quant_peer.c
# against it, into a folder outside the repository. Nothing of ggml is committed.
#
#   bench/ggml_peer/build_ggml.sh [OUT_DIR [LLAMA_CPP_DIR]]
#
# OUT_DIR defaults to ${TMPDIR:-/tmp}/forgia-ggml-peer. LLAMA_CPP_DIR is llama.cpp's source
# tree (the one holding ggml/); without it the llama-cpp-python 0.3.36 source distribution,
# which vendors llama.cpp, is downloaded with pip into OUT_DIR/sdist (checked against its
# sha256) and its ggml/ folder unpacked there.
# The flags are forgia's library flags (cmake/flags.cmake: gcc, -O3 in its default
# RelWithDebInfo build, -ffp-contract=off, -fno-math-errno, no -march), so the comparison is
# the same compiler and options on the same machine; GGML_PEER_OPT overrides -O3.
# Prints the peer's path on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${TMPDIR:-/tmp}/forgia-ggml-peer}
src=${2:-}
sdist_version=0.3.36
sdist_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$out/" in
  "$(cd "$here/../.." && pwd)"/*) echo "build_ggml.sh: OUT_DIR must be outside the repository" >&2; exit 2 ;;
esac

if [ -z "$src" ]; then
  src="$out/sdist/llama_cpp_python-$sdist_version/vendor/llama.cpp"
  if [ ! -f "$src/ggml/src/ggml-quants.c" ]; then
    mkdir -p "$out/sdist"
    tarball=$(ls "$out/sdist"/llama_cpp_python-$sdist_version.tar.gz 2>/dev/null || true)
    if [ -z "$tarball" ]; then
      python3 -m pip download "llama-cpp-python==$sdist_version" --no-binary :all: --no-deps \
        -d "$out/sdist" >&2
      tarball="$out/sdist/llama_cpp_python-$sdist_version.tar.gz"
    fi
    echo "$sdist_sha256  $tarball" | sha256sum -c --quiet - >&2 || {
      echo "build_ggml.sh: $tarball is not the pinned llama-cpp-python $sdist_version sdist" >&2
      exit 2
    }
    tar -xzf "$tarball" -C "$out/sdist" "llama_cpp_python-$sdist_version/vendor/llama.cpp/ggml"
  fi
fi
g="$src/ggml"
[ -f "$g/src/ggml-quants.c" ] || { echo "build_ggml.sh: no ggml/src/ggml-quants.c under $src" >&2; exit 2; }

opt=${GGML_PEER_OPT:--O3}
cflags="-std=gnu11 $opt -ffp-contract=off -fno-math-errno -fPIC -DNDEBUG -D_GNU_SOURCE"
cxxflags="-std=c++17 $opt -ffp-contract=off -fno-math-errno -fPIC -DNDEBUG"
obj="$out/obj"
mkdir -p "$obj"
# ggml.c includes the version header that ggml's CMake configures
printf '#pragma once\n#define GGML_VERSION "llama-cpp-python-%s"\n#define GGML_COMMIT "sdist"\n' "$sdist_version" \
  > "$obj/ggml-version.h"
inc="-I$obj -I$g/include -I$g/src"
stamp="$cflags|$cxxflags|$src"
if [ ! -f "$out/libggml-quants.a" ] || [ "$(cat "$out/flags" 2>/dev/null)" != "$stamp" ]; then
  gcc $cflags $inc -c "$g/src/ggml.c" -o "$obj/ggml.o" &
  pid=$!
  gcc $cflags $inc -c "$g/src/ggml-quants.c" -o "$obj/ggml-quants.o"
  g++ $cxxflags $inc -c "$g/src/ggml-threading.cpp" -o "$obj/ggml-threading.o"
  wait "$pid"
  rm -f "$out/libggml-quants.a"
  ar rcs "$out/libggml-quants.a" "$obj/ggml.o" "$obj/ggml-quants.o" "$obj/ggml-threading.o"
  printf '%s' "$stamp" > "$out/flags"
fi
gcc $cflags -fopenmp -Wall -Wextra -I"$g/include" "$here/ggml_quant_peer.c" "$out/libggml-quants.a" \
  -lstdc++ -lm -lpthread -o "$out/ggml_quant_peer"
echo "$out/ggml_quant_peer"
