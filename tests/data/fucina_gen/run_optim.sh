#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_optim.txt: torch_optim.txt's trajectories run by Fucina's
# own SGD/Adam/AdamW (gen_optim.zig, built with the same build.zig as gen.zig).
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] [BLAS=none] tests/data/fucina_gen/run_optim.sh
# Needs Zig 0.16.0 (pip install ziglang==0.16.0 gives `python3 -m ziglang`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/build.zig" "$here/build.zig.zon" "$work/"
cp "$here/gen_optim.zig" "$work/gen.zig"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build -Doptimize=ReleaseSafe ${BLAS:+-Dblas=$BLAS})
golden=$here/../golden/fucina_optim.txt
"$work/zig-out/bin/fucina_gen" >"$golden.tmp"
mv "$golden.tmp" "$golden"
echo "wrote $golden"
