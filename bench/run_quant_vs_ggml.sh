#!/usr/bin/env bash
# One command: forgia's quant codecs against ggml's on the same rows, in one run — encode and
# decode MB/s for every type on 1 and 2 threads, the ratio, and whether the bytes and floats are
# equal; and, for every type whose quantizer takes an importance matrix, encode with the same
# per-column weights on both sides ("wencode", "wbytes") (bench_quant --ggml; the table is the
# "#" lines at the end).
#
#   bench/run_quant_vs_ggml.sh [bench_quant flags: --reps N --warmup N --size BYTES --peer PYTHON]
#
# Builds bench_quant in FORGIA_BUILD_DIR (default build/, configured if absent) and ggml's peer
# with bench/ggml_peer/build_ggml.sh in GGML_PEER_DIR (default ${TMPDIR:-/tmp}/forgia-ggml-peer;
# LLAMA_CPP_DIR names an unpacked llama.cpp tree, else the pinned sdist is downloaded there).
# Timings are medians; run it on a quiet machine (the load average is printed first).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FORGIA_BUILD_DIR:-$root/build}
peer_dir=${GGML_PEER_DIR:-${TMPDIR:-/tmp}/forgia-ggml-peer}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DFORGIA_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target bench_quant >/dev/null
peer=$("$root/bench/ggml_peer/build_ggml.sh" "$peer_dir" ${LLAMA_CPP_DIR:+"$LLAMA_CPP_DIR"} | tail -n 1)
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(gcc --version | head -n 1)"
exec "$build/bench/bench_quant" --ggml "$peer" "$@"
