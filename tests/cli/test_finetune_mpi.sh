#!/usr/bin/env bash
# `mpirun -np N forgia finetune` (N = 2 and 3) on a tiny model folder: the ranks share each
# step's 6 sequences (--batch 3 --accum 2) and sum their gradients in sequence order, so the
# saved adapters, optimizer state, trainer state and the per-step losses are one process's
# bytes; only rank 0 prints and writes; --full too. es-finetune's ranks share the population: the same.
# Usage: test_finetune_mpi.sh FORGIA LM_TINY_WRITE TOKDIR MPIEXEC [NUMPROC_FLAG]
set -u
cli=$1
writer=$2
tokdir=$3
mpiexec=$4
np_flag=${5:--np}
dir=$(mktemp -d "${TMPDIR:-/tmp}/forgia-ft-mpi.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$writer" "$dir/model" "$tokdir" || fail "could not write the tiny model"
printf 'The quick brown fox jumps over the lazy dog. It was 42 degrees, or so they said!\nA fixed answer: forty-two.\n' >"$dir/text.txt"
args=(finetune "$dir/model" --data "$dir/text.txt" --ctx 8 --batch 3 --accum 2 --steps 4 --lora-rank 2
  --lora-dropout 0.1 --shuffle --lr 0.01 --mode exact --device cpu --threads 1 --quiet)
"$cli" "${args[@]}" --save "$dir/one" --metrics "$dir/one.jsonl" >"$dir/one.out" || fail "one process: exit status $?"
for np in 2 3; do
  "$mpiexec" "$np_flag" "$np" "$cli" "${args[@]}" --save "$dir/np$np" --metrics "$dir/np$np.jsonl" >"$dir/np$np.out" ||
    fail "$np ranks: exit status $?"
  [ "$(grep -c '^finetune: ' "$dir/np$np.out")" -eq 1 ] || fail "$np ranks: expected one summary line (rank 0 alone)"
  for f in adapters.safetensors optimizer.fucina trainer_state.json; do
    cmp -s "$dir/one/$f" "$dir/np$np/$f" || fail "$np ranks: $f differs from one process's"
  done
  # the losses (not the timings) of every step
  diff <(sed 's/"seconds": [0-9.e+-]*//' "$dir/one.jsonl") <(sed 's/"seconds": [0-9.e+-]*//' "$dir/np$np.jsonl") >/dev/null ||
    fail "$np ranks: the per-step metrics differ"
  echo "$np ranks: the bytes of one process"
done
# --full: every weight's gradient is summed the same way (model.safetensors and the optimizer
# state with its f32 masters are one process's bytes).
full=(finetune "$dir/model" --data "$dir/text.txt" --ctx 8 --batch 3 --accum 2 --steps 3 --full --shuffle --lr 0.01
  --optim adamw --mode exact --device cpu --threads 1 --quiet)
"$cli" "${full[@]}" --save "$dir/full1" >/dev/null || fail "--full, one process: exit status $?"
for np in 2 3; do
  "$mpiexec" "$np_flag" "$np" "$cli" "${full[@]}" --save "$dir/full$np" >/dev/null || fail "--full, $np ranks: exit status $?"
  for f in model.safetensors optimizer.fucina trainer_state.json; do
    cmp -s "$dir/full1/$f" "$dir/full$np/$f" || fail "--full, $np ranks: $f differs from one process's"
  done
  echo "--full, $np ranks: the bytes of one process"
done
# A rank count that does not divide the step's sequences is refused.
"$mpiexec" "$np_flag" 4 "$cli" "${args[@]}" >/dev/null 2>"$dir/err4" && fail "4 ranks over 6 sequences ran"
grep -q "do not divide" "$dir/err4" || fail "4 ranks: no clear error: $(cat "$dir/err4")"
# es-finetune: the ranks share each iteration's population (fg_es_step_comm).
es=(es-finetune "$dir/model" --data "$dir/text.txt" --ctx 8 --batch 2 --population 6 --iterations 3 --lora-rank 2
  --sigma 0.05 --gemm exact --device cpu --threads 1 --quiet)
"$cli" "${es[@]}" --save "$dir/es1" >/dev/null || fail "es-finetune, one process: exit status $?"
for np in 2 3; do
  "$mpiexec" "$np_flag" "$np" "$cli" "${es[@]}" --save "$dir/es$np.d" >"$dir/es$np.out" ||
    fail "es-finetune, $np ranks: exit status $?"
  [ "$(grep -c '^es-finetune: ' "$dir/es$np.out")" -eq 1 ] || fail "es-finetune, $np ranks: expected one summary line"
  for f in adapters.safetensors trainer_state.json; do
    cmp -s "$dir/es1/$f" "$dir/es$np.d/$f" || fail "es-finetune, $np ranks: $f differs from one process's"
  done
  echo "es-finetune, $np ranks: the bytes of one process"
done
# es-finetune --mode full: every weight evolves, the population shared the same way.
esf=(es-finetune "$dir/model" --data "$dir/text.txt" --ctx 8 --batch 2 --population 6 --iterations 2 --mode full
  --sigma 0.05 --gemm exact --device cpu --threads 1 --quiet)
"$cli" "${esf[@]}" --save "$dir/esf1" >/dev/null || fail "es-finetune --mode full, one process: exit status $?"
"$mpiexec" "$np_flag" 2 "$cli" "${esf[@]}" --save "$dir/esf2" >/dev/null || fail "es-finetune --mode full, 2 ranks"
for f in model.safetensors trainer_state.json; do
  cmp -s "$dir/esf1/$f" "$dir/esf2/$f" || fail "es-finetune --mode full, 2 ranks: $f differs from one process's"
done
echo "es-finetune --mode full, 2 ranks: the bytes of one process"
echo "PASS: finetune under $mpiexec matches one process"
