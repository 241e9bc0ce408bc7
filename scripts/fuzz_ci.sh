#!/usr/bin/env bash
# The sanitizer phase of the test command (scripts/test.sh runs it last; docs/FUZZING.md):
#   1. a clang build with AddressSanitizer + UndefinedBehaviorSanitizer (CPU-only: no CUDA plugin, no oneDNN) of the
#      unit tests that need no GPU and no server process, and of the libFuzzer targets of fuzz/;
#   2. those unit tests under the sanitizers (any report fails them);
#   3. every fuzz target on its regression inputs (fuzz/regressions/<target>/), then FUZZ_SECONDS of fuzzing from
#      its committed seed corpus (fuzz/corpus/<target>/, in a scratch copy), JOBS targets at a time (an input
#      counts as hung after 30 s of wall time: generous, the CI machine is shared).
# Exit status 0 only when every test passed and no target crashed, leaked or hung; a crash's input is kept under
# $FUZZ_BUILD_DIR/fuzz-artifacts/<target>/ and named in the output.
#
#   scripts/fuzz_ci.sh
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_SECONDS (default 60), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-$(nproc)}
TARGETS=(fuzz_decode fuzz_onnx fuzz_db fuzz_request)
TESTS=(test_core test_graph test_pipeline test_server_parse)
# Unit tests left out under the sanitizers: the whole-model runs (the real PP-OCR models on the reference backend take
# minutes each under ASan; the plain build of scripts/test.sh runs them).
GTEST_EXCLUDE="PipelineModels.*:PassesModels.*:WarmUp.*:BatchingAcrossCallers.*:ExecutionProfile.*:RecMerge.*"
t0=$(date +%s)
stamp() { echo "== fuzz_ci: $1 ($(($(date +%s) - t0)) s)"; }

for tool in clang clang++; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fuzz_ci: $tool not found: install clang and libclang-rt-14-dev (scripts/debian-packages.txt; scripts/setup.sh" \
      "does), or run scripts/test.sh with SKIP_FUZZ=1" >&2
    exit 1
  fi
done

stamp "configuring $B (clang, ASan+UBSan, libFuzzer, CPU-only)"
mkdir -p "$B"
CC=clang CXX=clang++ cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DSTEADYOCR_FUZZ=ON -DSTEADYOCR_CUDA=OFF -DSTEADYOCR_ONEDNN=OFF \
  -DSTEADYOCR_BENCH=OFF >"$B/configure.log" 2>&1 || {
  tail -30 "$B/configure.log"
  echo "fuzz_ci: configuring the sanitizer build failed (log: $B/configure.log)" >&2
  exit 1
}
stamp "building ${TESTS[*]} ${TARGETS[*]}"
ninja -C "$B" -j "$JOBS" "${TESTS[@]}" "${TARGETS[@]}"

# Sanitizer reports end the process with an error: tests and fuzz runs fail on them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_WAIT_POLICY=PASSIVE

failed=()
stamp "unit tests under ASan+UBSan"
for t in "${TESTS[@]}"; do
  bin=$(find "$B/tests" -maxdepth 1 -name "$t" -type f | head -1)
  [[ -x $bin ]] || {
    failed+=("$t (not built)")
    continue
  }
  if "$bin" --gtest_filter="-$GTEST_EXCLUDE" --gtest_brief=1 >"$B/$t.log" 2>&1; then
    echo "   $t: $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$B/$t.log" | tail -1), passed"
  else
    tail -40 "$B/$t.log"
    failed+=("$t (log: $B/$t.log)")
  fi
done

stamp "fuzz targets: regressions, then ${SECONDS_PER_TARGET} s each, $JOBS at a time"
run_target() { # run_target NAME: regressions, then a time-limited run; one summary line
  local t=$1 bin=$B/fuzz/$1 work=$B/fuzz-work/$1 art=$B/fuzz-artifacts/$1 dict=()
  rm -rf "$work" "$art"
  mkdir -p "$work/corpus" "$art"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  [[ -f fuzz/$t.dict ]] && dict=(-dict="fuzz/$t.dict")
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
    if ! "$bin" fuzz/regressions/"$t"/* >"$work/regressions.log" 2>&1; then
      echo "   $t: a regression input fails again (log: $work/regressions.log)"
      return 1
    fi
  fi
  local rc=0
  "$bin" "$work/corpus" "${dict[@]}" -max_total_time="$SECONDS_PER_TARGET" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/" >"$work/run.log" 2>&1 || rc=$?
  local line execs
  line=$(grep -E '^#[0-9]+' "$work/run.log" | tail -1 | grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*')
  execs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$work/run.log" | grep -Eo '[0-9]+$' || echo "?")
  if ((rc != 0)); then
    echo "   $t: FAILED after $execs executions: $(grep -E 'ERROR|SUMMARY' "$work/run.log" | head -2 | tr '\n' ' ')"
    echo "   $t: input kept: $(ls "$art"/* 2>/dev/null | head -3 | tr '\n' ' ') (log: $work/run.log)"
    return 1
  fi
  echo "   $t: $execs executions, $line, regressions $(ls fuzz/regressions/"$t" 2>/dev/null | wc -l) ok"
}
pids=()
names=()
for t in "${TARGETS[@]}"; do
  while (($(jobs -rp | wc -l) >= JOBS)); do sleep 1; done
  run_target "$t" &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

stamp "done"
if ((${#failed[@]})); then
  echo "fuzz_ci: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz_ci: sanitizer unit tests and ${#TARGETS[@]} fuzz targets passed"
