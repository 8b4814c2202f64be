#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_optim.txt (gen_optim.zig) with Fucina itself; run_gen.sh optim does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_optim.sh
exec "$(dirname "$0")/run_gen.sh" optim "$@"
