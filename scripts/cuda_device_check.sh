#!/bin/bash
# Validates the CUDA backend on the GPU machine in one `device` run: the cross-backend op harness and the CUDA
# tests (golden models, per-node comparison, concurrency, memory, faults, timings), then steadyocr end to end on
# the dev sets with cuda-fp16 and cuda-fp32, scored. Logs and results: $OUT/cuda_check.tgz; a summary is printed.
#
# Bundle (here): scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/golden ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): scripts/cuda_device_check.sh   (E2E=0 skips the end-to-end part)
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/cuda_check_out}
R=/tmp/r
mkdir -p "$OUT" "$R"
tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
export STEADYOCR_MODELS=$PWD/files/models STEADYOCR_SHARED_DATA=$PWD/files STEADYOCR_TEST_DATA=$REPO/tests/data
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
T="./env.sh bin/test_backends"
summary() {  # name rc log
  echo "== $1: exit $2, $(grep -c '^\[       OK' "$3") ok, $(grep -c '^\[  FAILED  \].*(' "$3") failed"
  grep -E '^\[  FAILED  \].*\(' "$3" | sed 's/, where GetParam.*//' | head -20
}
if [ -x bin/test_backends ]; then
  STEADYOCR_CUDA_DEBUG_SYNC=1 timeout 100 $T --gtest_filter='All/BackendOps.*cuda*' >$R/ops.log 2>&1
  summary ops $? $R/ops.log
  timeout 100 $T --gtest_filter='CudaModels.*' >$R/models.log 2>&1
  summary models $? $R/models.log
  grep -E 'Failure|differ beyond|run 2:|logits|precision for (det|rec|cls)|fp16 vs fp32' $R/models.log | head -40
  filter='CudaRuntime.*:CudaFaults.*:CudaTiming.*'
  [ "${QUICK:-0}" = "1" ] && filter='CudaTiming.*'  # QUICK=1: timings only, no concurrency/memory/fault tests
  timeout 100 $T --gtest_filter="$filter" >$R/rt.log 2>&1
  summary runtime $? $R/rt.log
  grep -E 'Failure|TIMING|BUCKET|device free' $R/rt.log | head -40
  if [ "${QUICK:-0}" != "1" ]; then
    STEADYOCR_TEST_STICKY_FAULT=1 timeout 30 $T --gtest_filter='CudaFaults.Illegal*' >$R/sticky.log 2>&1
    summary sticky $? $R/sticky.log
  fi
fi
if [ "${E2E:-1}" = "1" ] && [ -x bin/steadyocr ]; then
  for be in ${BACKENDS:-cuda-fp16 cuda-fp32}; do
    for set in synth-dev sroie-dev; do
      [ -d files/$set ] || continue
      flags=""
      [ $set = sroie-dev ] && flags=--ignore-case
      timeout 120 ./env.sh bin/steadyocr --log-level info ocr files/$set --models files/models --backend $be \
        --format json -o $R/${set}_$be.json 2>$R/${set}_$be.log
      echo "== $set $be: exit $? $(tr '\r' '\n' <$R/${set}_$be.log | grep -E '^ocr: ' | tail -1)"
      grep -E 'precision for|WARN|ERROR' $R/${set}_$be.log | head -5
      python3 files/ocr_eval.py files/$set/labels.txt $R/${set}_$be.json $flags 2>&1 | tail -4
    done
  done
fi
tar czf "$OUT/cuda_check.tgz" -C /tmp r
