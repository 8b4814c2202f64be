#!/usr/bin/env bash
# forgia's transformer runtime against llama.cpp on the same GGUF files and thread count: prompt
# processing (ppP) and generation (tgT) tokens/s from llama-bench, then from forgia's benchmark,
# one table with the ratio forgia / llama.cpp and the target it is held to
# (pp >= 1.0x, tg >= 0.8x).
#
#   bench/lm_vs_llamacpp.sh [--model GGUF]... [--threads N] [--pp P] [--tg T] [--reps R] \
#                           [--] FORGIA_BENCH_CMD...
#
# FORGIA_BENCH_CMD is run as `FORGIA_BENCH_CMD... MODEL --threads N --pp P --tg T` and must
# print one line per figure, `ppP <tok/s>` and `tgT <tok/s>` (other lines are ignored).
# llama-bench runs `-m MODEL -p P -n T -t N -r R` (its defaults otherwise: F16 KV cache, flash
# attention auto, batch 2048 / ubatch 512) and reports the mean over R repetitions.
# Defaults: --model .lm-cache/models/SmolLM2-135M-Instruct.Q4_1.gguf (the lm tests fetch it), --threads $(nproc), --pp 512,
# --tg 128, --reps 5. llama.cpp comes from LLAMA_CPP_BIN (a folder holding llama-bench) or is
# built by scripts/llama-cpp-build.sh into LLAMA_CPP_PREFIX (its default when unset).
# Run it on a quiet machine: the load average is printed first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
models=()
threads=$(nproc)
pp=512
tg=128
reps=5
die() { echo "lm_vs_llamacpp.sh: $*" >&2; exit 2; }
count_opt() { # OPTION VALUE...: VALUE must be a positive integer
  if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]{0,5}$ ]]; then die "$1 wants a positive integer"; fi
}
while [ $# -gt 0 ]; do
  case $1 in
    --model) [ $# -ge 2 ] || die "--model wants a GGUF path"; models+=("$2"); shift 2 ;;
    --threads) count_opt "$@"; threads=$2; shift 2 ;;
    --pp) count_opt "$@"; pp=$2; shift 2 ;;
    --tg) count_opt "$@"; tg=$2; shift 2 ;;
    --reps) count_opt "$@"; reps=$2; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "no FORGIA_BENCH_CMD given (e.g. build-cpu/bench/bench_lm)"
[ ${#models[@]} -gt 0 ] || models=("$root/.lm-cache/models/SmolLM2-135M-Instruct.Q4_1.gguf")
for m in "${models[@]}"; do [ -f "$m" ] || die "model $m not found"; done

bin=${LLAMA_CPP_BIN:-}
[ -n "$bin" ] || bin=$("$root/scripts/llama-cpp-build.sh" ${LLAMA_CPP_PREFIX:+"$LLAMA_CPP_PREFIX"} | tail -n 1)
[ -x "$bin/llama-bench" ] || die "no llama-bench in $bin"

echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; threads $threads; llama.cpp $("$bin/llama-bench" --version 2>&1 | head -n 1)"
rows=()
for m in "${models[@]}"; do
  json=$("$bin/llama-bench" -m "$m" -p "$pp" -n "$tg" -t "$threads" -r "$reps" -o json 2>/dev/null) \
    || die "llama-bench failed on $m"
  # llama-bench prints one record per test: n_prompt > 0 is ppP, n_gen > 0 is tgT
  lc=$(printf '%s' "$json" | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    name = "pp%d" % r["n_prompt"] if r["n_prompt"] > 0 else "tg%d" % r["n_gen"]
    print(name, r["avg_ts"], r["stddev_ts"])
') || die "cannot read llama-bench's JSON for $m"
  fg=$("$@" "$m" --threads "$threads" --pp "$pp" --tg "$tg") || die "forgia command failed on $m: $*"
  for test in "pp$pp" "tg$tg"; do
    read -r l_ts l_sd < <(printf '%s\n' "$lc" | awk -v t="$test" '$1 == t { print $2, $3 }')
    f_ts=$(printf '%s\n' "$fg" | awk -v t="$test" '$1 == t { print $2; exit }')
    [ -n "${l_ts:-}" ] || die "llama-bench gave no $test figure for $m"
    [ -n "$f_ts" ] || die "forgia command printed no '$test <tok/s>' line for $m"
    rows+=("$(basename "$m")|$test|$l_ts|$l_sd|$f_ts")
  done
done

printf '%-40s %-6s %12s %12s %8s %7s\n' model test "llama.cpp" forgia ratio target
for r in "${rows[@]}"; do
  IFS='|' read -r name test l_ts l_sd f_ts <<<"$r"
  awk -v n="$name" -v t="$test" -v l="$l_ts" -v s="$l_sd" -v f="$f_ts" 'BEGIN {
    want = (substr(t, 1, 2) == "pp") ? 1.0 : 0.8
    ratio = f / l
    verdict = (ratio >= want) ? "ok" : "LOW"
    printf "%-40s %-6s %7.1f+-%-4.1f %12.1f %7.2fx %s (>=%.1f)\n", n, t, l, s, f, ratio, verdict, want
  }'
done
