#!/usr/bin/env bash
# Runs the whole test suite: format check, then every test (GPU tests skip, saying so, where no GPU exists), then the
# sanitizer phase (scripts/fuzz_ci.sh: ASan+UBSan unit tests and ~60 s of every fuzz target; SKIP_FUZZ=1 leaves it
# out, FUZZ_SECONDS sets the time per target).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# Tests run in parallel: idle OpenMP threads must sleep, not spin, or they starve each other.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
scripts/check_format.sh
scripts/check_layers.sh
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
if [[ -z ${SKIP_FUZZ:-} ]]; then
  scripts/fuzz_ci.sh
else
  echo "== sanitizer phase skipped (SKIP_FUZZ is set)"
fi
