#!/usr/bin/env bash
# One command: a whole-model transcode (a 1.14 GB Llama-shaped f16 GGUF) by forgia export
# against llama-quantize (ggml's tensor-at-a-time program) and gguf-py, in one run: Q8_0 and
# Q4_K_M on 1 and 2 threads (gguf-py: Q8_0 only, it has no Q4_K quantizer), wall time, MB/s
# of source, peak RSS, the 1 -> 2 thread speedup, each tool's ratio to llama-quantize on the
# same threads, and whether the outputs are byte-identical to llama-quantize's (cmp; gguf-py
# writes its own metadata layout, so its tensors are compared instead).
#
#   bench/bench_transcode.sh [WORK_DIR]      (default ${TMPDIR:-/tmp}/forgia-bench-transcode)
#
# Environment: FORGIA (a forgia binary; default: built in WORK_DIR/forgia-build from this
# checkout, CPU-only), LLAMA_WORK (where llama-quantize is built from the llama-cpp-python
# 0.3.36 sdist by tests/data/llama_types_gen's recipe; default /tmp/forgia-llama-types),
# REPS (runs per case, default 3: the best wall time is kept, with that run's RSS), LAYERS
# (default 10). The source is read once first so every run starts page-cache warm; each run
# starts after `sync`, so no run pays for an earlier run's writeback. forgia's output is
# durable when it returns (it fsyncs before the rename); llama-quantize's and gguf-py's are
# not. Run it on a quiet machine: the load average is printed first and last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/forgia-bench-transcode}
reps=${REPS:-3}
py=$root/.venv/bin/python3
[ -x /usr/bin/time ] || { echo "bench_transcode: /usr/bin/time (GNU time, Debian package time) is needed for peak RSS" >&2; exit 2; }
"$py" -c "import gguf, numpy" 2>/dev/null ||
  { echo "bench_transcode: $py with gguf and numpy is needed (scripts/setup.sh makes the .venv)" >&2; exit 2; }
mkdir -p "$work"
cd "$work"

if [ -z "${FORGIA:-}" ]; then
  [ -f forgia-build/CMakeCache.txt ] || cmake -S "$root" -B forgia-build -DFORGIA_CUDA=OFF >/dev/null
  cmake --build forgia-build -j"$(nproc)" --target forgia_cli >/dev/null
  FORGIA=$work/forgia-build/tools/forgia
fi

lw=${LLAMA_WORK:-/tmp/forgia-llama-types}
LQ=$lw/build/bin/llama-quantize
if [ ! -x "$LQ" ]; then
  mkdir -p "$lw"
  (cd "$lw"
   if [ ! -d llama_cpp_python-0.3.36 ]; then
     python3 -m pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps -d . >/dev/null
     tar xzf llama_cpp_python-0.3.36.tar.gz
   fi
   cmake -S llama_cpp_python-0.3.36/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
     -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
   cmake --build build --target llama-quantize -j "$(nproc)" >/dev/null)
fi

src=$work/src.gguf
[ -f "$src" ] || "$py" "$root/bench/transcode_model.py" "$src" "${LAYERS:-10}"
src_mb=$(( $(stat -c %s "$src") / 1000000 ))
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; source $src ($src_mb MB)"
cat "$src" > /dev/null

# run TOOL MIX THREADS: the best of $reps runs into best[TOOL MIX THREADS] as "wall rss_kb";
# the output stays as out-TOOL-MIX-THREADS.gguf
declare -A best
run() {
  local tool=$1 mix=$2 t=$3 out=$work/out-$1-$2-$3.gguf
  local -a cmd
  case $tool in
    forgia) cmd=(env OMP_NUM_THREADS="$t" "$FORGIA" export --from-gguf "$src" --out "$out" --dtype "$mix") ;;
    llama-quantize) cmd=("$LQ" "$src" "$out" "$mix" "$t") ;;
    gguf-py) cmd=(env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$py" "$root/bench/transcode_ggufpy.py" "$src" "$out") ;;
  esac
  rm -f "$out"
  sync
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "${cmd[@]}" >"$work/$tool.log" 2>&1 ||
    { echo "$tool $mix $t failed:"; tail -n 5 "$work/$tool.log"; exit 1; }
  read -r wall rss < "$work/time.txt"
  local key="$tool $mix $t"
  if [ -z "${best[$key]:-}" ] || awk -v a="$wall" -v b="${best[$key]%% *}" 'BEGIN { exit !(a < b) }'; then
    best[$key]="$wall $rss"
  fi
}

cases=("forgia Q8_0 1" "forgia Q8_0 2" "llama-quantize Q8_0 1" "llama-quantize Q8_0 2" "gguf-py Q8_0 1"
       "forgia Q4_K_M 1" "forgia Q4_K_M 2" "llama-quantize Q4_K_M 1" "llama-quantize Q4_K_M 2")
for ((r = 0; r < reps; r++)); do
  for c in "${cases[@]}"; do run $c; done  # interleaved: every case sees the same machine load
done

same() {  # same TOOL MIX THREADS: its output against llama-quantize's on the same threads
  local a=$work/out-$1-$2-$3.gguf b=$work/out-llama-quantize-$2-$3.gguf
  case $1 in
    llama-quantize) echo "-" ;;
    gguf-py) "$py" "$root/bench/transcode_ggufpy.py" --compare "$a" "$b" | cut -d: -f1 | sed 's/$/ tensors/' ;;
    *) cmp -s "$a" "$b" && echo "identical" || echo "DIFFERENT" ;;
  esac
}

printf '%-15s %-7s %7s %8s %8s %9s %8s %9s  %s\n' tool mixture threads "wall s" "MB/s" "RSS MB" "1->2" \
  "x lq" "bytes vs llama-quantize"
for c in "${cases[@]}"; do
  set -- $c
  read -r wall rss <<< "${best[$c]}"
  one=${best[$1 $2 1]%% *}
  lq=${best[llama-quantize $2 $3]%% *}
  awk -v tool="$1" -v mix="$2" -v t="$3" -v w="$wall" -v rss="$rss" -v mb="$src_mb" -v one="$one" -v lq="$lq" \
      -v same="$(same $c)" 'BEGIN {
    up = t == 1 ? "-" : sprintf("%.2fx", one / w)
    printf "%-15s %-7s %7d %8.2f %8.0f %9.0f %8s %8.2fx  %s\n", tool, mix, t, w, mb / w, rss / 1024, up, lq / w, same }'
done
# thread count does not change forgia's bytes
for m in Q8_0 Q4_K_M; do
  cmp -s "$work/out-forgia-$m-1.gguf" "$work/out-forgia-$m-2.gguf" && echo "# forgia $m: 1 and 2 threads identical" ||
    echo "# forgia $m: 1 and 2 threads DIFFERENT"
done
echo "# best of $reps interleaved runs; x lq: llama-quantize's wall time / this row's (same threads); load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$work"/out-*.gguf
