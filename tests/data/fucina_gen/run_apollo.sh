#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_apollo.txt (gen_apollo.zig, Fucina's scalar backend) with Fucina itself; run_gen.sh apollo does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_apollo.sh
exec "$(dirname "$0")/run_gen.sh" apollo "$@"
