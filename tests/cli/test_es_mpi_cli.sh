#!/usr/bin/env bash
# `mpirun -np N forgia es spirals` (N = 2, and 3 for an uneven share of the population): the
# ranks split the members, gather the rewards and apply the same update, so the final
# accuracy, the parameter hash and the saved model.safetensors are a single process's; only
# rank 0 prints and saves.
# Usage: test_es_mpi_cli.sh FORGIA MPIEXEC [NUMPROC_FLAG]   (Open MPI's settings for running
# as root and oversubscribing come from the environment, tests/mpi.cmake)
set -u
cli=$1
mpiexec=$2
np_flag=${3:--np}
dir=$(mktemp -d "${TMPDIR:-/tmp}/forgia-es-mpi.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# The defaults (population 64, 500 iterations, target 0.90): the run must also pass its target.
# Sanitized builds (tests/mpi.cmake) shorten the run through FORGIA_ES_MPI_EXTRA: there the
# point is memory errors and equal bits, and 500 iterations x 6 processes under ASan take minutes.
args=(es spirals --device cpu --threads 1)
# shellcheck disable=SC2206
[ -n "${FORGIA_ES_MPI_EXTRA:-}" ] && args+=($FORGIA_ES_MPI_EXTRA)
fail() { echo "FAIL: $*"; exit 1; }

one=$("$cli" "${args[@]}" --save "$dir/one") || fail "one process: exit status $?"
final_one=$(echo "$one" | grep '^final: ') || fail "one process printed no final line"
hash_one=$(echo "$one" | grep '^params: ') || fail "one process printed no params line"
echo "$one" | grep -q "^PASS: " || fail "one process: no PASS line: $one"
echo "1 process:  $final_one / $hash_one"
for np in 2 3; do
  out=$("$mpiexec" "$np_flag" "$np" "$cli" "${args[@]}" --save "$dir/np$np") || fail "$np ranks: exit status $?"
  echo "$out" | grep -q "^PASS: " || fail "$np ranks: no PASS line: $out"
  echo "$out" | grep -q "x $np ranks" || fail "$np ranks: the run did not see $np ranks: $out"
  [ "$(echo "$out" | grep -c '^final: ')" -eq 1 ] || fail "$np ranks: expected one final line (rank 0 alone): $out"
  final=$(echo "$out" | grep '^final: ')
  hash=$(echo "$out" | grep '^params: ')
  echo "$np ranks:    $final / $hash"
  [ "$final" = "$final_one" ] || fail "$np ranks: '$final' differs from one process's '$final_one'"
  [ "$hash" = "$hash_one" ] || fail "$np ranks: '$hash' differs from one process's '$hash_one'"
  cmp -s "$dir/one/model.safetensors" "$dir/np$np/model.safetensors" ||
    fail "$np ranks: model.safetensors differs from one process's"
done
echo "PASS: es spirals under $mpiexec matches one process"
