#!/bin/bash
# Closing checks of a change on the GPU machine (issue 13), in one `device` run: the CUDA tests with the goldens; a
# 10,000-image soak (`bench --repeat 250` over synth-dev's 40 images) with the whole device's memory sampled by
# nvidia-smi every 250 ms; and the cpu backend against the ONNX Runtime reference pipeline on the host's cores (cold
# `ocr --backend cpu`, then ref_ppocr.py --runner ort, one after the other). Summary: $OUT/summary.txt.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/synth-dev ../shared/data/golden ../shared/tools/peers ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): scripts/device_checks.sh
#   (STEPS="tests soak ort", SOAK_BACKEND=cuda-fp16, SOAK_REPEAT=250, ORT_SETS=synth-dev)
set -u
STEPS=${STEPS:-tests soak ort}
SOAK_BACKEND=${SOAK_BACKEND:-cuda-fp16}
SOAK_REPEAT=${SOAK_REPEAT:-250}
ORT_SETS=${ORT_SETS:-synth-dev}
OUT=${OUT:-/tmp/checks_out}
W=/tmp/checks
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_checks "$W" "$OUT"

if want tests; then
  device_cuda_tests
  echo "golden and per-node tests passed: $(grep -E '^\[       OK \] CudaModels\.(Golden|PerNode)' "$W/tests.log" |
    sed -E 's/.*CudaModels\.([A-Za-z0-9]+).*/\1/' | tr '\n' ' ')" | tee -a "$S"
fi

if want soak; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 >"$W/mem.txt" 2>/dev/null &
  smi=$!
  $B/env.sh $B/bin/steadyocr bench "$F/synth-dev" --models "$F/models" --backend "$SOAK_BACKEND" --require-gpu \
    --warmup 1 --repeat "$SOAK_REPEAT" --json >"$W/soak.json" 2>"$W/soak.log"
  rc=$?
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  python3 - "$W/soak.json" "$W/mem.txt" "$SOAK_BACKEND" "$rc" <<'PY' | tee -a "$S"
import json, sys
path, mem, backend, rc = sys.argv[1:5]
m = [int(l) for l in open(mem) if l.strip().isdigit()]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"soak {backend}: exit {rc}, no result ({e})"); sys.exit()
print(f"soak {backend}: exit {rc}, {r['images_per_s']:.1f} images/s, {r['images']} images x {r['passes']} passes, "
      f"failed {r['failed']}; gpu_memory {json.dumps(r.get('gpu_memory'))}")
if m:
    n = len(m)
    after = m[n // 20:]
    print(f"  whole device (nvidia-smi, {n} samples): at 5 % {m[n // 20]}, 50 % {m[n // 2]}, 98 % {m[int(n * 0.98)]} "
          f"MiB; after the first 5 %: min {min(after)}, max {max(after)} MiB")
PY
fi

if want ort; then
  for set in $ORT_SETS; do
    s0=$(date +%s.%N)
    $B/env.sh $B/bin/steadyocr ocr "$F/$set" --models "$F/models" --backend cpu --format json -o "$W/cpu.$set.json" \
      >/dev/null 2>"$W/cpu.$set.log"
    s1=$(date +%s.%N)
    python3 "$F/peers/ref_ppocr.py" "$F/models" "$F/$set" "$W/ort.$set.json" --runner ort >"$W/ort.$set.log" 2>&1
    s2=$(date +%s.%N)
    echo "== $set, $(nproc) cores: steadyocr cpu wall $(python3 -c "print(f'{$s1 - $s0:.2f}')") s," \
      "$(tr '\r' '\n' <"$W/cpu.$set.log" | grep -E '^ocr: ' | tail -1); ONNX Runtime reference wall" \
      "$(python3 -c "print(f'{$s2 - $s1:.2f}')") s, $(tail -1 "$W/ort.$set.log")" | tee -a "$S"
    flags=""
    [ "$set" = sroie-dev ] && flags=--ignore-case
    python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$W/cpu.$set.json" $flags 2>&1 | tail -6 | tr '\n' ' ' |
      sed 's/^/   steadyocr cpu: /' | tee -a "$S"
    echo | tee -a "$S"
  done
fi
