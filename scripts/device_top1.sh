#!/bin/bash
# Each recognition step's top-1 pair computed on the device (issue 13, progress), in one `device` run: the CUDA tests
# (Top1 op cases, the rest of Cuda*), the time table (scripts/device_time_table.sh) with the top-1 output (the default)
# and with --host-ctc (every class's probability back to the host, the layout before), default runs in flight and
# one image at a time, on synth-dev and sroie-dev; two levers probed for the next step: every convolution on cuDNN
# (STEADYOCR_CUDA_OWN_CONV=0) and the per-op device profile (STEADYOCR_CUDA_PROFILE_OPS); then `ocr` on both sets
# with and without --host-ctc, compared line by line (text and box) and scored. Summary: $OUT/summary.txt.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py ../shared/data/golden
# Device (repo root, carry [".devbundle"]): scripts/device_top1.sh   (PARTS="tests table probe ocr")
set -uo pipefail
STEPS=${PARTS:-tests table probe ocr}
export OUT=${OUT:-/tmp/top1_out}
R=/tmp/t1
W=$R
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_top1 "$R" "$OUT"

if want tests; then
  device_cuda_tests
fi

if want table; then
  TAG=top1 CONCS="default 1" scripts/device_time_table.sh >/dev/null
  TAG=hostctc EXTRA=--host-ctc CONCS="default 1" scripts/device_time_table.sh >/dev/null
  mv "$OUT/time_table.tgz" "$R/" 2>/dev/null
fi

if want probe; then
  STEADYOCR_CUDA_OWN_CONV=0 TAG=allcudnn SETS=synth-dev CONCS="default 1" scripts/device_time_table.sh >/dev/null
  (cd /tmp/bundle && STEADYOCR_WORKER_CONCURRENCY=1 STEADYOCR_CUDA_PROFILE_OPS=40 ./env.sh bin/steadyocr bench \
    files/synth-dev --models files/models --backend cuda-fp32 --require-gpu --warmup 1 --repeat 2 --json) \
    >"$R/profile.json" 2>"$R/profile.log"
  echo "op profile run: exit $?" | tee -a "$S"
  grep "op profile" "$R/profile.log" | sed 's/.*op profile/op profile/' | sort | uniq | tail -12 | tee -a "$S"
fi

if want ocr; then
  F=/tmp/bundle/files
  for set in synth-dev sroie-dev; do
    flags=""
    [ "$set" = sroie-dev ] && flags="--ignore-case"
    for mode in top1 hostctc; do
      extra=""
      [ $mode = hostctc ] && extra=--host-ctc
      tag=ocr_${set}_$mode
      (cd /tmp/bundle && ./env.sh bin/steadyocr ocr "$F/$set" --models "$F/models" --backend cuda-fp32 --require-gpu \
        $extra --format json -o "$R/$tag.json") 2>"$R/$tag.log"
      echo "$tag: exit $?; $(python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$R/$tag.json" $flags 2>&1 | tail -3 |
        tr '\n' ' ')" | tee -a "$S"
    done
    python3 "$REPO/scripts/compare_ocr_lines.py" "$R/ocr_${set}_top1.json" "$R/ocr_${set}_hostctc.json" "$set" \
      "between top-1 and --host-ctc" | tee -a "$S"
  done
fi
tar czf "$OUT/top1.tgz" -C "$R" . 2>/dev/null
cat "$S"
