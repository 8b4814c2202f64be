#!/usr/bin/env bash
# Issue 15's closing benchmarks in one command, one run: (1) every codec against ggml's
# quantizers and to_float on 1 and 2 threads, with bytes/floats equal (run_quant_vs_ggml.sh);
# (2) whole-model transcodes of a 1.1 GB model, Q8_0 and Q4_K_M, against llama-quantize and
# gguf-py, wall time and peak RSS (bench_transcode.sh, which also builds llama-quantize from the
# pinned sdist); (3) the load table: every converting and kept-dtype load against page-cache
# read and the decoder's own throughput x threads (bench_load; FORGIA_LOAD_FILE adds a model
# file of yours, e.g. a Q4_K_M made by llama-quantize).
#
#   bench/run_quantize_suite.sh [WORK_DIR]   (default ${TMPDIR:-/tmp}/forgia-quantize-suite)
#
# Run it on a quiet machine; each part prints the load average it ran under.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/forgia-quantize-suite}
mkdir -p "$work"
build=${FORGIA_BUILD_DIR:-$root/build}
echo "== codecs vs ggml"
FORGIA_BUILD_DIR=$build bash "$root/bench/run_quant_vs_ggml.sh" --reps 7
echo "== whole-model transcode vs llama-quantize and gguf-py"
FORGIA=${FORGIA:-$build/tools/forgia} bash "$root/bench/bench_transcode.sh" "$work/transcode"
echo "== loads vs page-cache read and decoder x threads"
"$build/bench/bench_load" --reps 3 ${FORGIA_LOAD_FILE:+--file "$FORGIA_LOAD_FILE"}
