#!/usr/bin/env bash
# Runs the whole test suite: format check, then every test (GPU tests skip, saying so, where no GPU exists).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
scripts/check_format.sh
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
