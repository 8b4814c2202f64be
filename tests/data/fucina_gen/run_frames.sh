#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_frames/*.bin (gen_frames.zig) with Fucina itself; run_gen.sh frames does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_frames.sh
exec "$(dirname "$0")/run_gen.sh" frames "$@"
