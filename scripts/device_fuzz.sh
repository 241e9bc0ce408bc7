#!/usr/bin/env bash
# Long fuzz runs on a many-core machine without Debian's dev libraries, from a bundle of the fuzz binaries
# (docs/FUZZING.md). Make the bundle here:
#
#   scripts/fuzz_ci.sh                     # or any STEADYOCR_FUZZ=ON build; FUZZ_BUILD_DIR=build-fuzz by default
#   scripts/slim_bundle.py .devbundle build-fuzz/fuzz/fuzz_decode build-fuzz/fuzz/fuzz_onnx build-fuzz/fuzz/fuzz_db \
#       build-fuzz/fuzz/fuzz_request -- fuzz
#
# then on the machine (the bundle unpacked, e.g. `tar xzf .devbundle/bundle.tgz -C /tmp`):
#
#   scripts/device_fuzz.sh /tmp/bundle SECONDS [FORKS] [OUT]
#
# Runs every target in bundle/bin/fuzz_* one after the other, each for SECONDS with libFuzzer's -fork=FORKS (default:
# number of cores) and -ignore_crashes (a crash is saved and the run goes on), from its seed corpus
# (bundle/files/fuzz/corpus/<target>/) after its regression inputs (bundle/files/fuzz/regressions/<target>/). Writes
# OUT/<target>/{corpus/,artifacts/,run.log} (OUT defaults to ./fuzz-out) and prints one summary line per target:
# executions, coverage (cov, ft), corpus size, crashes/timeouts/OOMs and CPU-seconds (forks x wall time).
# TARGETS="fuzz_decode fuzz_onnx" limits the run to those targets.
set -euo pipefail
if (($# < 2)); then
  sed -n '2,20p' "$0"
  exit 2
fi
BUNDLE=$(cd "$1" && pwd)
SECS=$2
FORKS=${3:-$(nproc)}
OUT=${4:-fuzz-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
FILES=$BUNDLE/files/fuzz
[[ -x $BUNDLE/env.sh ]] || {
  echo "device_fuzz: $BUNDLE/env.sh missing: pass the unpacked bundle of scripts/slim_bundle.py" >&2
  exit 2
}
[[ -d $FILES/corpus ]] || {
  echo "device_fuzz: $FILES/corpus missing: make the bundle with '-- fuzz' (the seed corpora and dictionaries)" >&2
  exit 2
}
if [[ -n ${TARGETS:-} ]]; then
  read -r -a targets <<<"$TARGETS"
else
  targets=()
  for b in "$BUNDLE"/bin/fuzz_*; do targets+=("$(basename "$b")"); done
fi
# Fork-mode workers inherit these: any sanitizer report is a crash, saved under artifacts/.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
summary=()
status=0
for t in "${targets[@]}"; do
  w=$OUT/$t
  mkdir -p "$w/corpus" "$w/artifacts"
  cp -n "$FILES/corpus/$t"/* "$w/corpus/" 2>/dev/null || true
  dict=()
  [[ -f $FILES/$t.dict ]] && dict=(-dict="$FILES/$t.dict")
  if compgen -G "$FILES/regressions/$t/*" >/dev/null; then
    if ! "$BUNDLE/env.sh" "$BUNDLE/bin/$t" "$FILES/regressions/$t"/* >"$w/regressions.log" 2>&1; then
      echo "device_fuzz: $t: a regression input fails again (log: $w/regressions.log)"
      status=1
    fi
  fi
  echo "== $t: $SECS s, -fork=$FORKS ($(date -u +%H:%M:%S) UTC)"
  start=$(date +%s)
  # Workers are started by the fork-mode parent from its own path: env.sh's LD_LIBRARY_PATH carries over to them.
  (cd "$w" && "$BUNDLE/env.sh" "$BUNDLE/bin/$t" corpus "${dict[@]}" -fork="$FORKS" -ignore_crashes=1 -ignore_ooms=1 \
    -ignore_timeouts=1 -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -artifact_prefix="$w/artifacts/" \
    >"$w/run.log" 2>&1) || true
  wall=$(($(date +%s) - start))
  # The fork-mode status line: "#EXECS: cov: C ft: F corp: N exec/s E oom/timeout/crash: O/T/X time: Ss job: J ..."
  last=$(grep -E '^#[0-9]+: cov:' "$w/run.log" | tail -1 || true)
  execs=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$last")
  cov=$(sed -nE 's/.* cov: ([0-9]+) .*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+) .*/\1/p' <<<"$last")
  corp=$(ls "$w/corpus" | wc -l)
  oomtc=$(sed -nE 's#.*oom/timeout/crash: ([0-9]+/[0-9]+/[0-9]+).*#\1#p' <<<"$last")
  crashes=$(find "$w/artifacts" -name 'crash-*' | wc -l)
  line=$(printf '%-14s execs %-12s cov %-6s ft %-7s corpus %-6s oom/timeout/crash %-9s crash files %-4s wall %5ss cpu %6ss' \
    "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corp" "${oomtc:-?}" "$crashes" "$wall" "$((wall * FORKS))")
  echo "$line"
  summary+=("$line")
  ((crashes == 0)) || status=1
done
echo "== summary ($FORKS forks; crash inputs under $OUT/<target>/artifacts/)"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
exit "$status"
