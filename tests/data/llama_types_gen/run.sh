#!/usr/bin/env bash
# Regenerates tests/data/golden/llama_types/tables.txt: builds libllama from the
# llama-cpp-python 0.3.36 sdist (PyPI) outside this repository, compiles gen_type_tables.cpp
# against it and runs it. Usage: run.sh [WORK_DIR]   (default /tmp/forgia-llama-types)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-/tmp/forgia-llama-types}
mkdir -p "$work"
cd "$work"
if [ ! -d llama_cpp_python-0.3.36 ]; then
  python3 -m pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps -d .
  tar xzf llama_cpp_python-0.3.36.tar.gz
fi
L=$work/llama_cpp_python-0.3.36/vendor/llama.cpp
if [ ! -f build/bin/libllama.so ]; then
  cmake -S "$L" -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF >/dev/null
  cmake --build build --target llama -j "$(nproc)"
fi
g++ -std=c++17 -O1 -I"$L/include" -I"$L/src" -I"$L/ggml/include" "$here/gen_type_tables.cpp" \
  -Lbuild/bin -lllama -lggml -lggml-base -Wl,-rpath,"$work/build/bin" -o gen_type_tables
./gen_type_tables > "$here/../golden/llama_types/tables.txt" 2>gen.log
echo "wrote $(wc -l < "$here/../golden/llama_types/tables.txt") lines"
