#!/usr/bin/env bash
# The SmolLM2-135M-Instruct files the runtime is benchmarked on, made from the Q4_1 file with
# llama.cpp's llama-quantize --allow-requantize: F32 (the Q4_1/Q8_0 values exactly), F16, Q8_0
# and Q4_K_M. F16 is NOT the Q4_1 values exactly: about a quarter of the dequantized Q4_1 weights
# and most Q8_0 embedding values need more than f16's 11 significand bits and are rounded
# (relative error <= 2^-11); the F32 file is the lossless one for NLL comparisons.
#
#   scripts/lm-variants.sh [OUT_DIR [SOURCE_GGUF]]
#
# OUT_DIR defaults to ${TMPDIR:-/tmp}/forgia-llama-cpp/models, SOURCE_GGUF to
# .lm-cache/models/SmolLM2-135M-Instruct.Q4_1.gguf (the lm tests fetch it). llama.cpp is built (or found) by
# scripts/llama-cpp-build.sh in LLAMA_CPP_PREFIX. Idempotent: existing files are kept.
# Prints one made file per line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${TMPDIR:-/tmp}/forgia-llama-cpp/models}
src=${2:-$(cd "$(dirname "$0")/.." && pwd)/.lm-cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -f "$src" ] || { echo "lm-variants.sh: $src not found" >&2; exit 2; }
mkdir -p "$out"
case "$(cd "$out" && pwd)/" in
  "$root"/*) echo "lm-variants.sh: OUT_DIR must be outside the repository" >&2; exit 2 ;;
esac
bin=$("$root/scripts/llama-cpp-build.sh" ${LLAMA_CPP_PREFIX:+"$LLAMA_CPP_PREFIX"} | tail -n 1)
stem=$(basename "$src" .gguf)
stem=${stem%.Q4_1}
for type in F32 F16 Q8_0 Q4_K_M; do
  dst="$out/$stem.$type.gguf"
  if [ ! -f "$dst" ]; then
    # write then rename, so an interrupted run leaves no half file behind
    nice -n 5 "$bin/llama-quantize" --allow-requantize "$src" "$dst.part" "$type" 2 >"$dst.log" 2>&1 || {
      echo "lm-variants.sh: llama-quantize $type failed, see $dst.log" >&2
      exit 1
    }
    mv "$dst.part" "$dst"
  fi
  echo "$dst"
done
