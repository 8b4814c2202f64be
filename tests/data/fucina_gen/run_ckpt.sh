#!/usr/bin/env bash
# Rebuilds tests/data/golden/fucina_ckpt/, fucina_trainer_states/ and fucina_f64_text.txt (ckpt_gen.zig) with Fucina itself; run_gen.sh ckpt does the work.
#   FUCINA_SRC=/path/to/fucina [ZIG="python3 -m ziglang"] tests/data/fucina_gen/run_ckpt.sh
exec "$(dirname "$0")/run_gen.sh" ckpt "$@"
