#!/usr/bin/env bash
# Fucina's ES throughput on bench_es's shape, as a peer for bench_es's figures:
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] bench/fucina_peer/run_es_peer.sh [BENCH_ES]
# Builds es_peer.zig three times (set-up only, + 5 perturb/restore pairs, + 5 updates) with
# ReleaseFast against Fucina (tests/data/fucina_gen/build.zig), times each process (best of 3),
# prints Fucina's elements/s, and, given forgia's bench_es, forgia's figures and the ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/../../tests/data/fucina_gen/build.zig" "$here/../../tests/data/fucina_gen/build.zig.zon" "$here/es_peer.zig" "$work/"
ln -s "$src" "$work/fucina"
best() { # seconds of the fastest of 3 runs
  local b=""
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N); "$1" >/dev/null; e=$(date +%s.%N)
    b=$(python3 -c "print(min(float('${b:-1e9}'), $e - $s))")
  done
  echo "$b"
}
declare -a t
for p in 0 1 2; do
  echo "pub const phase = $p;" > "$work/phase.zig"
  (cd "$work" && $zig build -Doptimize=ReleaseFast -Dgen=es_peer.zig --prefix "out$p" >/dev/null)
  t[$p]=$(best "$work/out$p/bin/fucina_gen")
done
n=$((16 << 20))
pr=$(python3 -c "print($n * 5 / (${t[1]} - ${t[0]}))")
up=$(python3 -c "print($n * 5 / (${t[2]} - ${t[0]}))")
echo "{\"bench\":\"es_fucina_peer\",\"figure\":\"fucina_perturb_restore_16M\",\"value\":$pr,\"unit\":\"elem/s\"}"
echo "{\"bench\":\"es_fucina_peer\",\"figure\":\"fucina_update_pop32_16M\",\"value\":$up,\"unit\":\"elem/s\"}"
if [ $# -ge 1 ]; then
  "$1" --reps 3 | python3 -c "
import json, sys
peer = {'cpu_perturb_restore_16M': $pr, 'cpu_update_pop32_16M': $up}
for line in sys.stdin:
    try: r = json.loads(line)
    except ValueError: continue
    if r.get('figure') in peer and r.get('limit', '').startswith('memcpy'):
        print(json.dumps({'bench': 'es_fucina_peer', 'figure': r['figure'], 'value': r['value'], 'unit': 'elem/s',
                          'limit': 'fucina_es_trainer', 'limit_value': peer[r['figure']],
                          'ratio': round(r['value'] / peer[r['figure']], 4)}))
"
fi
