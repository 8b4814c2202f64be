#!/usr/bin/env bash
# Regenerates tests/data/golden/llama_bytes/: the source model and importance matrix
# (gen_model.py, with the repository's .venv), then llama-quantize's output for every
# mixture, without and with the matrix, as size and SHA-256 (sha256.txt). llama-quantize is
# built from the llama-cpp-python 0.3.36 sdist outside this repository by
# ../llama_types_gen/run.sh's recipe (the same work folder): run.sh [WORK_DIR].
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
gold=$here/../golden/llama_bytes
work=${1:-/tmp/forgia-llama-types}
mkdir -p "$work" "$gold"
cd "$work"
if [ ! -d llama_cpp_python-0.3.36 ]; then
  python3 -m pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps -d .
  tar xzf llama_cpp_python-0.3.36.tar.gz
fi
L=$work/llama_cpp_python-0.3.36/vendor/llama.cpp
if [ ! -x build/bin/llama-quantize ]; then
  cmake -S "$L" -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build build --target llama-quantize -j "$(nproc)"
fi
"$repo/.venv/bin/python3" "$here/gen_model.py" "$gold"
"$repo/.venv/bin/python3" "$here/gen_split.py" "$gold"
mixes="Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS
       TQ1_0 TQ2_0 MXFP4_MOE IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ1_S IQ1_M F16 BF16 F32 Q2_0"
out=$gold/sha256.txt
: > "$out"
for m in $mixes; do
  for kind in plain imatrix; do
    args=()
    [ $kind = imatrix ] && args=(--imatrix "$gold/imatrix.gguf")
    # the file name as llama-quantize records it in quantize.imatrix.file is the path given:
    # run from the golden folder so that it is "imatrix.gguf"
    if (cd "$gold" && "$work/build/bin/llama-quantize" "${args[@]/#$gold\//}" model.gguf "$work/out.gguf" $m 1) \
        >"$work/q.log" 2>&1; then
      echo "$m $kind $(stat -c %s "$work/out.gguf") $(sha256sum "$work/out.gguf" | cut -d' ' -f1)" >> "$out"
    else
      echo "$m $kind refused" >> "$out"
    fi
    rm -f "$work/out.gguf"
  done
done
# --keep-split on the 3-part split: one line per output part
for m in Q4_K_M IQ4_XS; do
  rm -f "$work"/ks-*.gguf
  (cd "$gold" && "$work/build/bin/llama-quantize" --keep-split --imatrix imatrix.gguf split/model-00001-of-00003.gguf \
    "$work/ks.gguf" $m 1) >"$work/q.log" 2>&1
  for i in 1 2 3; do
    f=$work/ks-0000$i-of-00003.gguf
    echo "$m keep-split-$i $(stat -c %s "$f") $(sha256sum "$f" | cut -d' ' -f1)" >> "$out"
  done
done
echo "wrote $out: $(grep -vc refused "$out") files, $(grep -c refused "$out") refusals"
