#!/usr/bin/env bash
# CLI contract (see `forgia help`): --version and help succeed; bad usage (an unknown command
# or option, a value option given twice, a bad device) exits 2 with one line naming the usage;
# a failed write to stdout exits 1 with one line. tests/cpu/test_cli_contract.cpp has the rest.
set -u
cli=$1
fail() { echo "FAIL: $*"; exit 1; }
lines() { wc -l <err.txt | tr -d ' '; }
"$cli" --version | grep -q '^forgia [0-9]' || fail "--version"
"$cli" help | grep -q 'devices' || fail "help lists devices"
"$cli" help | grep -q 'exit status' || fail "help states the exit statuses"
"$cli" help help | grep -q 'exit status' || fail "help help"
"$cli" help devices | grep -q 'usage: forgia devices' || fail "help devices"
"$cli" devices >/dev/null || fail "devices exit status"
"$cli" devices | grep -q 'NUMA nodes' || fail "devices shows NUMA nodes"
"$cli" devices | grep -q -E '^(cuda:[0-9]+: .*compute capability|cuda: )' || fail "devices shows a cuda line"
"$cli" frobnicate >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "unknown command exit 2"
grep -q usage err.txt || fail "unknown command prints usage"
[ "$(lines)" = 1 ] || fail "unknown command: one line"
"$cli" help frobnicate >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "help of an unknown command exit 2"
"$cli" devices --bogus >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "unknown flag exit 2"
grep -q usage err.txt || fail "unknown flag prints usage"
grep -q '^forgia devices: --bogus: unknown option' err.txt || fail "unknown flag: one prefix, the flag, the problem"
[ "$(lines)" = 1 ] || fail "unknown flag: one line"
"$cli" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no command exit 2"
"$cli" export --from-gguf a.gguf --out x.gguf --out y.gguf >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "repeated --out exit 2"
grep -q '^forgia export: --out: given twice' err.txt || fail "repeated --out named"
"$cli" load a.gguf --device tpu >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "load: bad device exit 2"
[ "$(lines)" = 1 ] || fail "bad device: one line"
"$cli" export --from-gguf a.gguf --out x.gguf --dtype q9_9 >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "bad dtype exit 2"
grep -q 'export: export:' err.txt && fail "doubled prefix"
if [ -w /dev/full ]; then
  "$cli" devices >/dev/full 2>err.txt; [ $? -eq 1 ] || fail "devices > /dev/full exit 1"
  grep -q '^forgia devices: stdout: ' err.txt || fail "devices > /dev/full says so"
  [ "$(lines)" = 1 ] || fail "devices > /dev/full: one line"
  "$cli" help >/dev/full 2>err.txt; [ $? -eq 1 ] || fail "help > /dev/full exit 1"
fi
rm -f err.txt
echo ok
