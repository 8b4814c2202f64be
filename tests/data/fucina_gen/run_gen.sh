#!/usr/bin/env bash
# Rebuilds the goldens of one Fucina generator with Fucina itself:
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] [BLAS=none] [GOLDEN=dir] \
#     tests/data/fucina_gen/run_gen.sh NAME
# NAME: rng (gen.zig: fucina_rng.txt, fucina_sumsq.txt), ckpt (ckpt_gen.zig: fucina_ckpt/,
# fucina_trainer_states/, fucina_f64_text.txt), frames (gen_frames.zig: fucina_frames/*.bin),
# optim (gen_optim.zig: fucina_optim.txt), muon (gen_muon.zig: fucina_muon.txt), apollo
# (gen_apollo.zig: fucina_apollo.txt), set (gen_set.zig: fucina_frames/set_sched*.bin), es
# (gen_es.zig: fucina_es.txt), es_ternary (gen_es_ternary.zig: fucina_es_ternary.txt).
# Muon and APOLLO build Fucina's scalar backend without BLAS (BLAS does not apply to them or to
# ckpt). GOLDEN (default tests/data/golden) is where the files go, e.g. a scratch directory to
# compare with the committed ones. Needs Zig 0.16.0 (pip install ziglang==0.16.0 gives
# `python3 -m ziglang`).
set -euo pipefail
name=${1:?usage: run_gen.sh rng|ckpt|frames|optim|muon|apollo|set|es|es_ternary}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${FUCINA_SRC:?set FUCINA_SRC to a Fucina source tree}" && pwd)
zig=${ZIG:-zig}
golden=${GOLDEN:-$here/../golden}
flags=(-Doptimize=ReleaseSafe)
case $name in
  rng) gen=gen.zig ;;
  ckpt) gen=ckpt_gen.zig ;;
  muon | apollo) gen=gen_$name.zig flags+=(-Dscalar=true) ;;
  frames | optim | set | es | es_ternary) gen=gen_$name.zig ;;
  ptqtp) gen=gen_ptqtp.zig ;; # fucina_ptqtp.txt (ptqtp.quantizeMatrix planes and stats)
  *) echo "run_gen.sh: unknown generator '$name'" >&2; exit 2 ;;
esac
case $name in rng | frames | optim | set) flags+=(${BLAS:+-Dblas=$BLAS}) ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/build.zig" "$here/build.zig.zon" "$here/$gen" "$work/"
[[ $gen == gen_* ]] && cp "$here/common.zig" "$work/"
ln -s "$src" "$work/fucina"
(cd "$work" && $zig build "${flags[@]}" -Dgen="$gen")
exe=$work/zig-out/bin/fucina_gen
mkdir -p "$golden"

# Writes each output through a temporary name, so that a failed run leaves the old file.
write() {
  local to=$1
  shift
  "$exe" "$@" >"$to.tmp"
  mv "$to.tmp" "$to"
}

frames="adamw_v3 adamw_v4 adamw_v5 adam_v3 adam_v4 adam_v5 sgd_plain_v3 sgd_momentum_v3
  sgd_nesterov_v4 sgd_plain_v5 sgd_momentum_v5 muon_v3 muon_v4 muon_v5 apollo_v3 apollo_mini_v3
  apollo_v5 set_v3 tensors"
case $name in
  rng) for what in rng sumsq; do write "$golden/fucina_$what.txt" "$what"; done ;;
  ckpt)
    mkdir -p "$work/out"
    "$exe" "$work/out"
    rm -rf "$golden/fucina_ckpt" "$golden/fucina_trainer_states"
    cp -r "$work/out/fucina_ckpt" "$work/out/fucina_trainer_states" "$work/out/fucina_f64_text.txt" "$golden/"
    ;;
  frames | set)
    mkdir -p "$golden/fucina_frames"
    [[ $name == set ]] && frames="set_sched set_sched_params"
    for f in $frames; do write "$golden/fucina_frames/$f.bin" "$f"; done
    ;;
  *) write "$golden/fucina_$name.txt" ;;
esac
echo "wrote the $name goldens under $golden"
