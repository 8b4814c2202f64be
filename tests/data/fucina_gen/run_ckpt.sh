#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_ckpt/, fucina_trainer_states/ and fucina_f64_text.txt with Fucina itself.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_ckpt.sh
# Needs Zig 0.16.0 (pip install ziglang==0.16.0 gives `python3 -m ziglang`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/ckpt_build.zig" "$work/build.zig"
cp "$here/build.zig.zon" "$here/ckpt_gen.zig" "$work/"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build -Doptimize=ReleaseSafe)
golden=$here/../golden
mkdir -p "$work/out"
"$work/zig-out/bin/fucina_ckpt_gen" "$work/out"
rm -rf "$golden/fucina_ckpt" "$golden/fucina_trainer_states"
cp -r "$work/out/fucina_ckpt" "$work/out/fucina_trainer_states" "$work/out/fucina_f64_text.txt" "$golden/"
echo "wrote $golden/fucina_ckpt, fucina_trainer_states and fucina_f64_text.txt"
