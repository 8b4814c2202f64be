#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_muon.txt (gen_muon.zig, Fucina's scalar backend) with Fucina itself; run_gen.sh muon does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_muon.sh
exec "$(dirname "$0")/run_gen.sh" muon "$@"
