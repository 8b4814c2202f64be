#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_rng.txt and fucina_sumsq.txt (gen.zig) with Fucina itself; run_gen.sh rng does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run.sh
exec "$(dirname "$0")/run_gen.sh" rng "$@"
