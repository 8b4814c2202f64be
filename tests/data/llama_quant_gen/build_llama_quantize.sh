#!/bin/sh
# Build llama.cpp's llama-quantize (CPU only) from the llama-cpp-python 0.3.36 sdist, outside
# the repository. Nothing built here is committed; only the tables it produces are.
#
# usage: build_llama_quantize.sh WORK_DIR [LLAMA_CPP_SRC]
#   WORK_DIR        where the sdist is downloaded/unpacked and the build goes
#   LLAMA_CPP_SRC   an already unpacked llama.cpp tree (the sdist's vendor/llama.cpp);
#                   without it the sdist is downloaded from PyPI with pip
# Prints the path of the llama-quantize binary on its last line.
set -eu
VERSION=0.3.36
# sha256 of llama_cpp_python-0.3.36.tar.gz as PyPI served it when the goldens were made
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
WORK=${1:?usage: build_llama_quantize.sh WORK_DIR [LLAMA_CPP_SRC]}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

if [ $# -ge 2 ]; then
    SRC=$(cd "$2" && pwd)
else
    PY=${PYTHON:-python3}
    if [ ! -d "$WORK/llama_cpp_python-$VERSION" ]; then
        "$PY" -m pip download "llama-cpp-python==$VERSION" --no-binary :all: --no-deps -d "$WORK"
        echo "$SDIST_SHA256  $WORK/llama_cpp_python-$VERSION.tar.gz" | sha256sum -c -
        tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
    fi
    SRC=$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp
fi

# the sdist pins llama.cpp by the commit its changelog names; the tree has no .git
if [ -f "$SRC/../../CHANGELOG.md" ]; then
    echo "llama-cpp-python $VERSION: $(grep -m1 'update llama.cpp to' "$SRC/../../CHANGELOG.md")"
fi

# a copy, so that the source tree (possibly read-only) stays untouched; its .git pointer
# leads nowhere outside the sdist's own checkout, so it is dropped
if [ ! -d "$WORK/llama.cpp" ]; then
    cp -r "$SRC" "$WORK/llama.cpp"
    rm -f "$WORK/llama.cpp/.git"
fi

cmake -S "$WORK/llama.cpp" -B "$WORK/build" \
    -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
    -DGGML_BACKEND_DL=OFF -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >"$WORK/cmake.log"
cmake --build "$WORK/build" --target llama-quantize -j"${JOBS:-2}" >"$WORK/build.log"
echo "$WORK/build/bin/llama-quantize"
