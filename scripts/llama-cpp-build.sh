#!/usr/bin/env bash
# Builds the llama.cpp that forgia's transformer runtime is measured against: the one vendored in
# the llama-cpp-python 0.3.36 source distribution (llama.cpp commit 0c1e570), CPU only, Release,
# GGML_NATIVE, no network code. Targets: llama-bench, llama-perplexity, llama-quantize, and
# tests/data/lm/llama_nll.cpp (per-token NLL dump) and tests/data/tok/llama_tok.cpp (token ids)
# linked against the built libllama.
# Nothing of llama.cpp is committed; everything lands under PREFIX.
#
#   scripts/llama-cpp-build.sh [PREFIX]
#
# PREFIX defaults to ${TMPDIR:-/tmp}/forgia-llama-cpp. The sdist is taken from
# LLAMA_CPP_SDIST (a .tar.gz) or PREFIX/sdist, else downloaded there with pip; either way it is
# checked against its sha256. Idempotent: each step runs only when its output is missing (or,
# for llama_nll, older than its source). Builds niced with -j${LLAMA_CPP_JOBS:-2}.
# Prints the folder holding the four binaries on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-${TMPDIR:-/tmp}/forgia-llama-cpp}
jobs=${LLAMA_CPP_JOBS:-2}
sdist_version=0.3.36
sdist_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
llama_commit=0c1e57098bba43ac29e6e3b677cdceebdd22334f
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
case "$prefix/" in
  "$root"/*) echo "llama-cpp-build.sh: PREFIX must be outside the repository" >&2; exit 2 ;;
esac
src="$prefix/sdist/llama_cpp_python-$sdist_version/vendor/llama.cpp"
build="$prefix/build"
bin="$build/bin"

if [ ! -f "$src/CMakeLists.txt" ]; then
  mkdir -p "$prefix/sdist"
  tarball=${LLAMA_CPP_SDIST:-$prefix/sdist/llama_cpp_python-$sdist_version.tar.gz}
  if [ ! -f "$tarball" ]; then
    python3 -m pip download "llama-cpp-python==$sdist_version" --no-binary :all: --no-deps \
      -d "$prefix/sdist" >&2
    tarball="$prefix/sdist/llama_cpp_python-$sdist_version.tar.gz"
  fi
  echo "$sdist_sha256  $tarball" | sha256sum -c --quiet - >&2 || {
    echo "llama-cpp-build.sh: $tarball is not the pinned llama-cpp-python $sdist_version sdist" >&2
    exit 2
  }
  # the submodule's HEAD names the vendored llama.cpp commit; refuse anything else
  head=$(tar -xzOf "$tarball" "llama_cpp_python-$sdist_version/.git/modules/vendor/llama.cpp/HEAD")
  [ "$head" = "$llama_commit" ] || {
    echo "llama-cpp-build.sh: sdist vendors llama.cpp $head, expected $llama_commit" >&2
    exit 2
  }
  tar -xzf "$tarball" -C "$prefix/sdist" "llama_cpp_python-$sdist_version/vendor/llama.cpp"
fi

targets="llama-bench llama-perplexity llama-quantize"
missing=0
for t in $targets; do [ -x "$bin/$t" ] || missing=1; done
if [ "$missing" = 1 ]; then
  start=$(date +%s)
  # static libraries so llama_nll links without an rpath; tools are needed for the three
  # targets, but only those targets are built
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_RPC=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON \
    -DLLAMA_BUILD_COMMIT="${llama_commit:0:7}" >&2
  # shellcheck disable=SC2086
  nice -n 5 cmake --build "$build" -j"$jobs" --target $targets >&2
  echo "llama-cpp-build.sh: llama.cpp targets built in $(( $(date +%s) - start )) s" >&2
fi

# The two reference tools linked against the static libllama: llama_nll (per-token NLL) and
# llama_tok (token ids and detokenized text, tests/data/tok/llama_tok.cpp).
for tool in "lm/llama_nll" "tok/llama_tok"; do
  tool_src="$root/tests/data/$tool.cpp"
  name=$(basename "$tool")
  if [ ! -x "$bin/$name" ] || [ "$tool_src" -nt "$bin/$name" ]; then
    libs=()
    for l in src/libllama.a ggml/src/libggml.a ggml/src/libggml-cpu.a ggml/src/libggml-base.a; do
      [ -f "$build/$l" ] || { echo "llama-cpp-build.sh: $build/$l missing" >&2; exit 2; }
      libs+=("$build/$l")
    done
    nice -n 5 g++ -std=c++17 -O2 -Wall -Wextra -I"$src/include" -I"$src/ggml/include" \
      "$tool_src" "${libs[@]}" -fopenmp -lpthread -ldl -lm -o "$bin/$name"
  fi
done
echo "$bin"
