#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_frames/set_sched*.bin: an OptimizerSet with groups, a
# global clip and a warmup-cosine schedule, saved by Fucina itself (gen_set.zig, built with
# the same build.zig as gen.zig).
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] [BLAS=none] tests/data/fucina_gen/run_set.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/build.zig" "$here/build.zig.zon" "$work/"
cp "$here/gen_set.zig" "$work/gen.zig"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build -Doptimize=ReleaseSafe ${BLAS:+-Dblas=$BLAS})
golden=$here/../golden/fucina_frames
mkdir -p "$golden"
for name in set_sched set_sched_params; do
  "$work/zig-out/bin/fucina_gen" "$name" >"$golden/$name.bin.tmp"
  mv "$golden/$name.bin.tmp" "$golden/$name.bin"
done
echo "wrote $golden"
