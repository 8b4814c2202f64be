#!/usr/bin/env bash
# forgia demo end to end: every step succeeds, the table has its four rows, and the error
# grows as the type narrows (f32 source exact, then f16 < q8_0 < q4_K).
set -u
cli=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/forgia-demo-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT
out=$("$cli" demo --dir "$dir" --device cpu) || { echo "FAIL: demo exit status $?"; echo "$out"; exit 1; }
echo "$out"
rmse() { echo "$out" | awk -v f="$1" -v d="$2" '$1 == f && $2 == d { print $4 }'; }
st=$(rmse safetensors f32); f16=$(rmse gguf f16); q8=$(rmse gguf q8_0); q4=$(rmse gguf q4_K)
[ -n "$st" ] && [ -n "$f16" ] && [ -n "$q8" ] && [ -n "$q4" ] || { echo "FAIL: table rows missing"; exit 1; }
awk -v a="$st" -v b="$f16" -v c="$q8" -v d="$q4" 'BEGIN { exit !(a == 0 && b > 0 && b < c && c < d && d < 0.01) }' ||
  { echo "FAIL: RMSE ordering $st $f16 $q8 $q4"; exit 1; }
"$cli" demo --bogus >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: unknown flag"; exit 1; }
echo ok
