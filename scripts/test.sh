#!/usr/bin/env bash
# Sets up (installs what is missing, builds) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd "${FORGIA_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
