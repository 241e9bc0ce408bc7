#!/bin/bash
# Leased activation arenas on the GPU machine (issue 13, progress), in one `device` run: the CUDA tests, then
# cuda-fp32 with each plan holding its own arena and 64 plans cached (STEADYOCR_CUDA_ARENAS=per-plan --plan-cache 64,
# the layout before 2026-12-02) beside runs leasing arenas with 512 plans cached (the default now): bench images/s,
# first pass, and the device memory peak (nvidia-smi, every 100 ms) on synth-dev and sroie-dev; `ocr` outputs of
# both compared line by line and scored. Logs: $OUT/arenas.tgz; a summary is printed and in $OUT/summary.txt.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): scripts/device_arenas.sh   (PARTS="tests bench ocr", REPEAT=3)
set -uo pipefail
PARTS=${PARTS:-tests bench ocr}
REPEAT=${REPEAT:-3}
STEPS=$PARTS
OUT=${OUT:-/tmp/arenas_out}
R=/tmp/r
W=$R
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_arenas "$R" "$OUT" \
  "$(nvidia-smi --query-gpu=memory.total --format=csv,noheader 2>/dev/null) device memory"
cd "$B" || exit 2
export STEADYOCR_MODELS=$F/models STEADYOCR_SHARED_DATA=$F STEADYOCR_TEST_DATA=$REPO/tests/data

# Runs a command while sampling the GPU's used memory; prints the peak in MiB.
with_peak() {  # log cmd...
  local log=$1
  shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$log.mem" 2>/dev/null &
  local smi=$!
  "$@"
  local rc=$?
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  echo "$rc $(sort -n "$log.mem" | tail -1)"
}

if want tests; then
  device_cuda_tests
  grep -E 'device free before' "$R/tests.log" | tee -a "$S"
fi

modes=("per-plan" "leased")
mode_env() { [ "$1" = per-plan ] && echo "STEADYOCR_CUDA_ARENAS=per-plan" || echo "STEADYOCR_CUDA_ARENAS=leased"; }
mode_flags() { [ "$1" = per-plan ] && echo "--plan-cache 64" || echo ""; }

if want bench; then
  for set in synth-dev sroie-dev; do
    for mode in "${modes[@]}"; do
      tag=bench_${set}_${mode}
      res=$(with_peak "$R/$tag" sh -c "env $(mode_env $mode) ./env.sh bin/steadyocr --log-level debug bench '$F/$set' \
        --models '$F/models' --backend cuda-fp32 --require-gpu --warmup 1 --repeat $REPEAT $(mode_flags $mode) --json \
        >'$R/$tag.json' 2>'$R/$tag.log'")
      python3 - "$R/$tag.json" "$tag" "$res" <<'EOF' | tee -a "$S"
import json, sys
tag, res = sys.argv[2], sys.argv[3].split()
log = open(sys.argv[1][:-5] + ".log", errors="replace").read()
plans = sum(1 for l in log.splitlines() if "[runtime] planned " in l)
made = [l for l in log.splitlines() if "activation arena" in l and " made: " in l]
arenas = made[-1].split(" made: ")[1] if made else "none leased"
try:
    r = json.load(open(sys.argv[1]))
    print(f"{tag}: exit {res[0]}, {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}), "
          f"pass {r['pass_ms_median']:.1f} ms, first pass {r['first_pass_ms']:.1f} ms, "
          f"new shape {r['new_shape_ms_per_image']:.2f} ms/image, startup {r['startup_ms']:.0f} ms, "
          f"GPU memory peak {res[1] if len(res) > 1 else '?'} MiB, failed {r['failed']}, "
          f"plans made {plans} ({r['images'] * (r['passes'] + 1)} images read), arenas at the end: {arenas}")
except Exception as e:
    print(f"{tag}: exit {res[0]}, no result ({e})")
EOF
    done
  done
fi

if want ocr; then
  for set in synth-dev sroie-dev; do
    flags=""
    [ "$set" = sroie-dev ] && flags="--ignore-case"
    for mode in "${modes[@]}"; do
      tag=ocr_${set}_${mode}
      env $(mode_env $mode) ./env.sh bin/steadyocr ocr "$F/$set" --models "$F/models" --backend cuda-fp32 \
        --require-gpu $(mode_flags $mode) --format json -o "$R/$tag.json" 2>"$R/$tag.log"
      echo "$tag: exit $?; $(python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$R/$tag.json" $flags 2>&1 | tail -3 |
        tr '\n' ' ')" | tee -a "$S"
    done
    python3 - "$R/ocr_${set}_per-plan.json" "$R/ocr_${set}_leased.json" "$set" <<'EOF' | tee -a "$S"
import json, sys
def lines(p):
    d = json.load(open(p))  # {file: {"lines": [...], ...}}
    return [(f, l.get("text"), json.dumps(l.get("box"))) for f in sorted(d) for l in d[f].get("lines", [])]
try:
    a, b = lines(sys.argv[1]), lines(sys.argv[2])
    same = sum(1 for x, y in zip(a, b) if x == y)
    print(f"{sys.argv[3]}: {len(a)} / {len(b)} lines, {same} identical (text and box) between per-plan and leased")
except Exception as e:
    print(f"{sys.argv[3]}: compare failed ({e})")
EOF
  done
fi
tar czf "$OUT/arenas.tgz" -C "$R" . 2>/dev/null
cat "$S"
