#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_frames/*.bin: optimizer state frames written by Fucina's
# own optimizers (gen_frames.zig, built with the same build.zig as gen.zig).
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] [BLAS=none] tests/data/fucina_gen/run_frames.sh
# Needs Zig 0.16.0 (pip install ziglang==0.16.0 gives `python3 -m ziglang`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/build.zig" "$here/build.zig.zon" "$work/"
cp "$here/gen_frames.zig" "$work/gen.zig"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build -Doptimize=ReleaseSafe ${BLAS:+-Dblas=$BLAS})
golden=$here/../golden/fucina_frames
mkdir -p "$golden"
for name in adamw_v3 adamw_v4 adamw_v5 adam_v3 adam_v4 adam_v5 sgd_plain_v3 sgd_momentum_v3 \
  sgd_nesterov_v4 sgd_plain_v5 sgd_momentum_v5 muon_v3 muon_v4 muon_v5 apollo_v3 apollo_mini_v3 \
  apollo_v5 set_v3 tensors; do
  "$work/zig-out/bin/fucina_gen" "$name" >"$golden/$name.bin.tmp"
  mv "$golden/$name.bin.tmp" "$golden/$name.bin"
done
echo "wrote $golden"
