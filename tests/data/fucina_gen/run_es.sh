#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_es.txt (gen_es.zig, Fucina's es.Trainer) with Fucina itself; run_gen.sh es does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_es.sh
exec "$(dirname "$0")/run_gen.sh" es "$@"
