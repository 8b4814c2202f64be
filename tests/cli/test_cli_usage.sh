#!/usr/bin/env bash
# CLI contract: --version and help succeed; an unknown subcommand or flag prints usage, exit 2.
set -u
cli=$1
fail() { echo "FAIL: $*"; exit 1; }
"$cli" --version | grep -q '^forgia [0-9]' || fail "--version"
"$cli" help | grep -q 'devices' || fail "help lists devices"
"$cli" help devices | grep -q 'usage: forgia devices' || fail "help devices"
"$cli" devices >/dev/null || fail "devices exit status"
"$cli" devices | grep -q 'NUMA nodes' || fail "devices shows NUMA nodes"
"$cli" devices | grep -q -E '^(cuda:[0-9]+: .*compute capability|cuda: )' || fail "devices shows a cuda line"
"$cli" frobnicate >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "unknown command exit 2"
grep -q usage err.txt || fail "unknown command prints usage"
"$cli" devices --bogus >/dev/null 2>err.txt; [ $? -eq 2 ] || fail "unknown flag exit 2"
grep -q usage err.txt || fail "unknown flag prints usage"
"$cli" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no command exit 2"
rm -f err.txt
echo ok
