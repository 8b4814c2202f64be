#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_frames/set_sched*.bin (gen_set.zig) with Fucina itself; run_gen.sh set does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_set.sh
exec "$(dirname "$0")/run_gen.sh" set "$@"
