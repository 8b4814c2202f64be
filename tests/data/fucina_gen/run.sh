#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_rng.txt and fucina_sumsq.txt with Fucina itself.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] [BLAS=none] tests/data/fucina_gen/run.sh
# Needs Zig 0.16.0 (pip install ziglang==0.16.0 gives `python3 -m ziglang`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/build.zig" "$here/build.zig.zon" "$here/gen.zig" "$work/"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build -Doptimize=ReleaseSafe ${BLAS:+-Dblas=$BLAS})
golden=$here/../golden
for what in rng sumsq; do
  "$work/zig-out/bin/fucina_gen" "$what" >"$golden/fucina_$what.txt.tmp"
  mv "$golden/fucina_$what.txt.tmp" "$golden/fucina_$what.txt"
done
echo "wrote $golden/fucina_rng.txt and $golden/fucina_sumsq.txt"
