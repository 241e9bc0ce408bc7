#!/bin/bash
# Each CUDA plugin's op cases, golden models and (CUDA 13) runtime and fault tests, in one `device` run: the check
# after a change to the CUDA ops. cuBLAS 11 in /tmp/cu11lib as scripts/device_cuda11.sh says (else the 11.8 plugin
# is skipped, saying so). Logs in $OUT.
# Bundle (here): scripts/slim_bundle.py .devbundle build/libsteadyocr_cuda13.so build/libsteadyocr_cuda11.so \
#   build/tests/test_backends -- models ../shared/data/golden
# Device (repo root, carry [".devbundle"]): scripts/device_plugins_ops.sh
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/plugins_ops_out}
mkdir -p "$OUT"
rm -rf /tmp/bundle && tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
export STEADYOCR_MODELS=$PWD/files/models STEADYOCR_SHARED_DATA=$PWD/files STEADYOCR_TEST_DATA=$REPO/tests/data
T="./env.sh bin/test_backends"
summary() {  # name rc log
  echo "== $1: exit $2, $(grep -c '^\[       OK' "$3") ok, $(grep -c '^\[  FAILED  \].*(' "$3") failed"
  grep -E '^\[  FAILED  \].*\(' "$3" | sed 's/, where GetParam.*//' | head -20
}
per_backend() {
  for be in cuda_fp32 cuda_fp16 cuda_fp32_nocudnn cuda_fp16_nocudnn; do
    echo "   $be: $(grep -c "^\[       OK .*__${be} " "$1") ok"
  done
}
STEADYOCR_CUDA_DEBUG_SYNC=1 timeout 250 $T --gtest_filter='All/BackendOps.*cuda*:CudaPlugin.*' >$OUT/ops13.log 2>&1
summary "CUDA 13 plugin: op cases" $? $OUT/ops13.log
per_backend $OUT/ops13.log
timeout 200 $T --gtest_filter='CudaModels.*:CudaRuntime.*:CudaFaults.*' >$OUT/rt13.log 2>&1
summary "CUDA 13 plugin: golden models, runtime, faults" $? $OUT/rt13.log
grep -E 'planned on own kernels|cuDNN cannot plan' $OUT/rt13.log | head -3 | cut -c1-260
if [ -e /tmp/cu11lib/libcublasLt.so.11 ]; then
  export LD_LIBRARY_PATH=/tmp/cu11lib
  P11=$PWD/bin/libsteadyocr_cuda11.so
  STEADYOCR_CUDA_PLUGIN=$P11 STEADYOCR_CUDA_DEBUG_SYNC=1 timeout 250 $T --gtest_filter='All/BackendOps.*cuda*:CudaPlugin.*' \
    >$OUT/ops11.log 2>&1
  summary "CUDA 11.8 plugin: op cases" $? $OUT/ops11.log
  per_backend $OUT/ops11.log
  STEADYOCR_CUDA_PLUGIN=$P11 STEADYOCR_CUDA_CUDNN=0 timeout 200 $T --gtest_filter='CudaModels.*' >$OUT/models11.log 2>&1
  summary "CUDA 11.8 plugin: golden models (no cuDNN)" $? $OUT/models11.log
else
  echo "== CUDA 11.8 plugin: skipped (no cuBLAS 11 in /tmp/cu11lib)"
fi
echo "== done"
