#!/bin/bash
# The CUDA plan for every input shape (issue 13) on the GPU machine, in one `device` run:
#   tests:  the plan against the reference and against the per-shape plan's bits on every op case
#           (All/SymbolicOps.*cuda*), concurrent callers of one plan on the recogniser
#           (CudaModels.OnePlanForEveryShape*), the plugin table (CudaPlugin.*), the op cases on cuda-fp16, the golden
#           models where the bundle has them.
#   vktest: VK_TESTS (a gtest filter, default the Vulkan queue-busy test) with the Vulkan loader brought in from .gl/
#           (device_vulkan.sh).
#   plans:  one image at a time, cold, with debug logs: what each new shape cost the host, one plan (default) against
#           --per-shape-plans (device_busy.sh's `plans` step).
#   lines:  cold `ocr` of synth-dev and sroie-dev on cuda-fp16 and cuda-fp32, --per-shape-plans against the default,
#           lines compared, scored, and each new shape's cost (device_busy.sh's `lines` step).
#   ab:     images/s with 16 in flight and one image at a time, --per-shape-plans against the default, alternating
#           (device_busy.sh's `ab` step, SETS="synth sroie").
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/libsteadyocr_vulkan.so \
#   build/tests/test_backends -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py
#   (stripped binaries: strip -o; ../shared/data/golden too when it fits in 64 MiB)
# Device (repo root, carry [".devbundle", ".gl"]): PARTS="tests plans lines" scripts/device_shapefree.sh, then
#   PARTS=ab scripts/device_shapefree.sh (ROUNDS, REPEAT as device_busy.sh; LINE_BACKENDS, PLAN_BACKENDS; LINES,
#   PLAN_VARIANTS, VARIANTS: device_busy.sh's variants, e.g. base with files/base_cuda13.so in the bundle; BUNDLE: a
#   bundle folder other than .devbundle, carried instead of it).
set -u
PARTS=${PARTS:-tests lines ab plans vktest}
OUT=${OUT:-/tmp/shapefree_out}
mkdir -p "$OUT"
has() { [[ " $PARTS " == *" $1 "* ]]; }
if has tests; then
  REPO=$PWD
  rm -rf /tmp/bundle && tar xzf "${BUNDLE:-.devbundle}/bundle.tgz" -C /tmp || exit 2
  (cd /tmp/bundle && STEADYOCR_MODELS=files/models STEADYOCR_SHARED_DATA=files STEADYOCR_TEST_DATA=$REPO/tests/data \
    timeout 300 ./env.sh bin/test_backends --gtest_filter="${CUDA_TESTS:-All/SymbolicOps.*cuda*:CudaModels.OnePlanForEveryShape*:CudaModels.Golden*:CudaPlugin.*:All/BackendOps.*__cuda_fp16}") \
    >"$OUT/tests.log" 2>&1
  echo "== CUDA tests: exit $?, $(grep -c '^\[       OK' "$OUT/tests.log") ok, $(grep -c '^\[  FAILED  \].*(' \
    "$OUT/tests.log") failed, $(grep -c '^\[  SKIPPED \].*(' "$OUT/tests.log") skipped" | tee -a "$OUT/summary.txt"
  grep -E '^\[  FAILED  \].*\(' "$OUT/tests.log" | sed 's/, where GetParam.*//' | head -20 | tee -a "$OUT/summary.txt"
  grep -B6 -E '^\[  FAILED  \].*\(' "$OUT/tests.log" | grep -vE '^\[' | head -40 | cut -c1-300 | tee -a "$OUT/summary.txt"
  grep -E '^\[  SKIPPED \].*OnePlan|^\[       OK \].*OnePlan' "$OUT/tests.log" | tee -a "$OUT/summary.txt"
fi
for step in lines ab plans; do  # in this order: a run cut short by its time limit keeps the first ones' summaries
  has $step || continue
  OUT=$OUT/$step STEPS=$step LINES=${LINES:-pershape new} PLAN_BACKENDS=${PLAN_BACKENDS:-cuda-fp16} \
    LINE_BACKENDS=${LINE_BACKENDS:-cuda-fp16 cuda-fp32} PLAN_VARIANTS=${PLAN_VARIANTS:-new pershape} \
    VARIANTS=${VARIANTS:-pershape new} \
    SETS="synth sroie" ROUNDS=${ROUNDS:-2} REPEAT=${REPEAT:-4} scripts/device_busy.sh >/dev/null 2>&1
  cat "$OUT/$step/summary.txt"
done
if has vktest; then  # the Vulkan loader brought in from .gl/ (device_vulkan.sh), VK_TESTS
  OUT=$OUT/vk PARTS=tests VK_TESTS=${VK_TESTS:-VulkanPlugin.AQueueBusy*} scripts/device_vulkan.sh 2>&1 |
    grep -E '^==|SKIPPED|FAILED' | head -8 | tee -a "$OUT/summary.txt"
fi
