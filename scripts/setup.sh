#!/usr/bin/env bash
# Installs what is missing (Debian packages, the Python venv for interop tests), then
# configures and builds forgia in ./build. Idempotent: a second run only rebuilds.
#   FORGIA_BUILD_DIR   build folder (default: build)
#   FORGIA_CMAKE_ARGS  extra arguments for the configure step
set -euo pipefail
cd "$(dirname "$0")/.."

# openmpi-bin and libopenmpi-dev: the MPI communicator and its tests (mpirun -np 2 and 3).
debs=(cmake g++ make pkg-config libhwloc-dev libcjson-dev libpcre2-dev libutf8proc-dev libopenblas-dev libgtest-dev python3-venv openmpi-bin libopenmpi-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3-venv is only needed when the python3 on PATH lacks a working venv module.
if python3 -c 'import venv, ensurepip' 2>/dev/null; then
  missing=("${missing[@]/python3-venv}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Interop tests compare with the reference Python implementations.
# (jinja2 renders the checkpoints' chat templates for tests/interop/test_chat_interop.cpp;
# sentencepiece, protobuf, tokenizers and tiktoken are the references of tests/interop/test_tok_real_interop.cpp.)
if ! .venv/bin/python3 -c 'import gguf, safetensors, numpy, jinja2, sentencepiece, tokenizers, tiktoken, google.protobuf' \
    2>/dev/null; then
  echo "setup: creating .venv with gguf, safetensors, numpy, jinja2, sentencepiece, protobuf, tokenizers, tiktoken"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check gguf==0.19.0 safetensors==0.8.0 numpy jinja2==3.1.6 \
    sentencepiece==0.2.3 protobuf==7.36.2 tokenizers==0.23.3 tiktoken==0.14.0
fi

build=${FORGIA_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FORGIA_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs"
