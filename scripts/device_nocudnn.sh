#!/bin/bash
# The CUDA plugin with no convolution through cuDNN (STEADYOCR_CUDA_CUDNN=0: im2col/col2im + cuBLAS, issue 18) on
# the GPU machine, in one `device` run, beside the cuDNN path: the cross-backend op cases, the golden models, and
# steadyocr end to end on the dev sets (scored, images/s). Logs: $OUT/nocudnn.tgz; a summary is printed.
#
# Bundle (here): scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/golden ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): scripts/device_nocudnn.sh
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/nocudnn_out}
R=/tmp/r
mkdir -p "$OUT" "$R"
tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
export STEADYOCR_MODELS=$PWD/files/models STEADYOCR_SHARED_DATA=$PWD/files STEADYOCR_TEST_DATA=$REPO/tests/data
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T="./env.sh bin/test_backends"
summary() {  # name rc log
  echo "== $1: exit $2, $(grep -c '^\[       OK' "$3") ok, $(grep -c '^\[  FAILED  \].*(' "$3") failed"
  grep -E '^\[  FAILED  \].*\(' "$3" | sed 's/, where GetParam.*//' | head -20
}
# The op cases run on every backend the registry lists: cuda-fp32, cuda-fp16 and their -nocudnn forms.
STEADYOCR_CUDA_DEBUG_SYNC=1 timeout 200 $T --gtest_filter='All/BackendOps.*cuda*' >$R/ops.log 2>&1
summary "op cases" $? $R/ops.log
for be in cuda_fp32 cuda_fp16 cuda_fp32_nocudnn cuda_fp16_nocudnn; do
  echo "   $be: $(grep -c "^\[       OK .*__${be} " $R/ops.log) ok"
done
STEADYOCR_CUDA_CUDNN=0 timeout 150 $T --gtest_filter='CudaModels.*' >$R/models_cudnn0.log 2>&1
summary "golden models, STEADYOCR_CUDA_CUDNN=0" $? $R/models_cudnn0.log
grep -E 'Failure|differ beyond|max abs|logits' $R/models_cudnn0.log | head -20
BACKENDS="cuda-fp32 cuda-fp32-nocudnn cuda-fp16 cuda-fp16-nocudnn"
for set in synth-dev sroie-dev; do
  flags=""
  [ $set = sroie-dev ] && flags=--ignore-case
  for be in $BACKENDS; do
    tag=${set}_$be
    timeout 150 ./env.sh bin/steadyocr --log-level info ocr files/$set --models files/models --backend $be \
      --format json -o $R/$tag.json 2>$R/$tag.log
    echo "== $set $be: exit $? $(tr '\r' '\n' <$R/$tag.log | grep -E '^ocr: ' | tail -1)"
    grep -m1 -E 'cuDNN' $R/$tag.log | cut -c1-240
    grep -E 'WARN|ERROR' $R/$tag.log | head -3
    python3 files/ocr_eval.py files/$set/labels.txt $R/$tag.json $flags 2>&1 | tail -3
  done
done
# Speed: synth-dev x10 (400 images), each backend twice, interleaved.
mkdir -p /tmp/synth10
for i in $(seq 10); do for f in files/synth-dev/*.png files/synth-dev/*.jpg; do
  [ -e "$f" ] && ln -sf "$PWD/$f" /tmp/synth10/r${i}_$(basename "$f"); done; done
echo "== speed: $(ls /tmp/synth10 | wc -l) images"
for pass in 1 2; do
  for be in $BACKENDS; do
    timeout 150 ./env.sh bin/steadyocr ocr /tmp/synth10 --models files/models --backend $be --format json \
      -o /tmp/speed.json 2>$R/speed_${be}_$pass.log
    echo "   pass $pass $be: $(tr '\r' '\n' <$R/speed_${be}_$pass.log | grep -E '^ocr: ' | tail -1)"
  done
done
tar czf "$OUT/nocudnn.tgz" -C /tmp r
