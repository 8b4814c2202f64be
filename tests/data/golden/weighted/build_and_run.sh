#!/bin/sh
# Builds ggml's quantizers and llama.cpp's importance-matrix loader from the llama-cpp-python
# 0.3.36 source distribution, outside this repository, and runs gen_weighted.cpp against
# them to rewrite the goldens in this folder (README.md here).
#   build_and_run.sh [SDIST_DIR]
# SDIST_DIR is an unpacked llama_cpp_python-0.3.36 (default: downloaded with pip into a
# temporary folder). Nothing built here is committed; only the outputs are.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ $# -ge 1 ]; then
  SD=$1
else
  python3 -m pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps -d "$WORK/dl"
  tar -xzf "$WORK"/dl/llama_cpp_python-0.3.36.tar.gz -C "$WORK"
  SD=$WORK/llama_cpp_python-0.3.36
fi
L=$SD/vendor/llama.cpp
G=$L/ggml
F="-O2 -ffp-contract=off -fPIC -DNDEBUG -I$G/include -I$G/src"
cd "$WORK"
# what CMake would configure from ggml-version.h.in
printf '#pragma once\n#define GGML_VERSION "unknown"\n#define GGML_COMMIT "unknown"\n' > ggml-version.h
gcc -std=gnu11 $F -I. -D_GNU_SOURCE -c "$G/src/ggml.c" -o ggml.o
gcc -std=gnu11 $F -D_GNU_SOURCE -c "$G/src/ggml-quants.c" -o ggml-quants.o
g++ -std=c++17 $F -c "$G/src/ggml-threading.cpp" -o ggml-threading.o
g++ -std=c++17 $F -c "$G/src/gguf.cpp" -o gguf.o
# llama.cpp's loader, copied next to two small headers of ours that stand in for common.h
# and log.h (it uses one string helper and one log macro from them), so that it builds
# without the rest of libcommon.
cp "$L/common/imatrix-loader.cpp" "$L/common/imatrix-loader.h" .
cat > common.h <<'EOF'
#pragma once
#include <string>
static inline bool string_remove_suffix(std::string &s, const std::string &suf) {
  if (s.size() < suf.size() || s.compare(s.size() - suf.size(), suf.size(), suf) != 0) return false;
  s.resize(s.size() - suf.size());
  return true;
}
EOF
cat > log.h <<'EOF'
#pragma once
#include <cstdio>
#define LOG_ERR(...) fprintf(stderr, __VA_ARGS__)
EOF
g++ -std=c++17 $F -I. -c imatrix-loader.cpp -o imatrix-loader.o
cat > stubs.c <<'EOF'
#include <stdlib.h>
/* backend entry points ggml.c and gguf.cpp reference for tensors in backend buffers; the
   generator's tensors never live in one */
void ggml_backend_buffer_get_usage(void) { abort(); }
void ggml_backend_tensor_set(void) { abort(); }
void ggml_backend_tensor_get(void) { abort(); }
void ggml_backend_tensor_memset(void) { abort(); }
EOF
gcc -O2 -c stubs.c -o stubs.o
g++ -std=c++17 $F -I. -I"$HERE" -Wall -Wextra -c "$HERE/gen_weighted.cpp" -o gen.o
g++ -o gen_weighted gen.o imatrix-loader.o ggml.o ggml-quants.o ggml-threading.o gguf.o stubs.o -lm -lpthread
python3 "$HERE/make_imatrix.py" "$HERE"
./gen_weighted "$HERE" "$HERE"
