#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_muon.txt: Muon trajectories and saveState bytes from Fucina's
# own optim.Muon on its scalar backend (gen_muon.zig, built by muon_build.zig).
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_muon.sh
# Needs Zig 0.16.0 (pip install ziglang==0.16.0 gives `python3 -m ziglang`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/muon_build.zig" "$work/build.zig"
cp "$here/build.zig.zon" "$here/gen_muon.zig" "$work/"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build -Doptimize=ReleaseSafe)
golden=$here/../golden/fucina_muon.txt
"$work/zig-out/bin/fucina_muon_gen" >"$golden.tmp"
mv "$golden.tmp" "$golden"
echo "wrote $golden"
