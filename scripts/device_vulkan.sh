#!/bin/bash
# The Vulkan rung on the GPU machine (issue 19), in one `device` run: the Vulkan loader brought in (.gl/, the GPU
# machine has no libvulkan1), the NVIDIA Vulkan driver found, then the Vulkan tests (plugin contract, the
# cross-backend op cases, the golden models), the doctor's Vulkan chain, steadyocr end to end on the dev sets on
# vulkan beside cuda-fp32 and cpu (scored; lines compared with the ONNX Runtime reference), speed (bench) beside the
# PyTorch eager peer, and `--backend auto` with CUDA made unusable (the plugin moved away; CUDA_VISIBLE_DEVICES=)
# landing on vulkan. Logs: $OUT/vulkan.tgz; a summary is printed.
#
# Here, once: echo /.gl/ >> .git/info/exclude; mkdir -p .gl /tmp/amd64/partial;
#   o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'; apt-get $o update;
#   (cd .gl && apt-get $o download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2 vulkan-tools)
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/libsteadyocr_vulkan.so \
#   build/tests/test_backends -- models ../shared/data/golden ../shared/data/synth-dev ../shared/data/sroie-dev \
#   ../shared/data/reference ../shared/tools/ocr_eval.py ../shared/tools/peers scripts/compare_reference.py
# Device (repo root, carry [".devbundle", ".gl"]): scripts/device_vulkan.sh
#   PARTS="tests doctor e2e auto bench models peers newshape" (default: all) picks the parts. newshape: what a new
#   input shape costs the host (issue 13), synth-dev and sroie-dev read cold on vulkan with one plan for every shape,
#   on vulkan with --per-shape-plans and on cuda-fp16 (one plan too), from the debug logs (scripts/new_shape_costs.py),
#   and the two vulkan runs' lines compared. VK_TESTS (a gtest filter): the tests part runs only those.
set -uo pipefail
PARTS=${PARTS:-tests doctor e2e auto bench models peers newshape}
want() { [[ " $PARTS " == *" $1 "* ]]; }
REPO=$PWD
OUT=${OUT:-/tmp/vulkan_out}
R=/tmp/r
mkdir -p "$OUT" "$R"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ldconfig -p | grep -q libvulkan.so.1; then echo "no libvulkan.so.1 after unpacking .gl"; fi
if [ -z "${VK_DRIVER_FILES:-}" ] && ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
  for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$f" ] && export VK_DRIVER_FILES=$f && break
  done
fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
F=$PWD/files
export STEADYOCR_MODELS=$F/models STEADYOCR_SHARED_DATA=$F STEADYOCR_TEST_DATA=$REPO/tests/data
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
vulkaninfo --summary 2>&1 | grep -E "deviceName|deviceType|driverName|driverInfo|apiVersion" | head -12
T="./env.sh bin/test_backends"
summary() {  # name rc log
  echo "== $1: exit $2, $(grep -c '^\[       OK' "$3") ok, $(grep -c '^\[  FAILED  \].*(' "$3") failed, $(grep -c '^\[  SKIPPED \].*(' "$3") skipped"
  grep -E '^\[  FAILED  \].*\(' "$3" | sed 's/, where GetParam.*//' | head -20
}
if want tests && [ -n "${VK_TESTS:-}" ]; then  # only these (a gtest filter)
timeout 300 $T --gtest_filter="$VK_TESTS" >$R/some.log 2>&1
summary "$VK_TESTS" $? $R/some.log
grep -E '^\[  SKIPPED \].*\(' $R/some.log | head -5
elif want tests; then
timeout 120 $T --gtest_filter='VulkanPlugin.*' >$R/plugin.log 2>&1
summary "plugin" $? $R/plugin.log
grep -E 'SKIPPED|Vulkan plugin' $R/plugin.log | head -5
timeout 200 $T --gtest_filter='All/BackendOps.*__vulkan*' >$R/ops.log 2>&1
summary "op cases on vulkan" $? $R/ops.log
grep -E '^\[  SKIPPED \].*\(' $R/ops.log | head
timeout 200 $T --gtest_filter='VulkanModels.*:CudaModels.GoldenFp32' >$R/models.log 2>&1
summary "golden models" $? $R/models.log
grep -E 'vulkan .*(run 0|logits)|nodes checked' $R/models.log | head -12
fi
if want doctor; then
timeout 120 ./env.sh bin/steadyocr doctor --format json >$R/doctor.json 2>$R/doctor.log
echo "== doctor: exit $?"
python3 - $R/doctor.json <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no doctor JSON:", e); sys.exit()
v = d.get("vulkan")
print(json.dumps(v, indent=None)[:3000] if v is not None else "no vulkan section; keys: %s" % list(d))
PY
./env.sh bin/steadyocr doctor 2>/dev/null | grep -i -A12 vulkan | head -30
fi
if want e2e; then
for set in synth-dev sroie-dev; do
  flags=""
  [ $set = sroie-dev ] && flags=--ignore-case
  echo "== $set, the ONNX Runtime reference: $(python3 $F/ocr_eval.py $F/$set/labels.txt $F/reference/$set.ort.json $flags 2>&1 | tail -1)"
  for be in vulkan vulkan-fp16 cuda-fp32 cpu reference; do
    tag=${set}_$be
    timeout 300 ./env.sh bin/steadyocr --log-level info ocr $F/$set --models $F/models --backend $be \
      --format json -o $R/$tag.json 2>$R/$tag.log
    echo "== $set $be: exit $? $(tr '\r' '\n' <$R/$tag.log | grep -E '^ocr: ' | tail -1)"
    grep -E 'WARN|ERROR' $R/$tag.log | head -3
    python3 $F/ocr_eval.py $F/$set/labels.txt $R/$tag.json $flags 2>&1 | grep -E 'det_hmean|e2e_char|line_exact|token_f1' | tr '\n' ' '; echo
  done
  for be in vulkan vulkan-fp16 cuda-fp32 cpu; do
    echo "   $be vs the reference backend: $(python3 $F/compare_reference.py $R/${set}_$be.json $R/${set}_reference.json 2>&1 | grep -E 'identical_share|matched_share' | tr '\n' ' ')"
  done
done
fi
# CUDA made unusable: auto must land on vulkan, visibly, with the same results as vulkan pinned.
if want auto; then
for how in plugin_moved cuda_hidden; do
  if [ $how = plugin_moved ]; then
    env_set="STEADYOCR_CUDA_PLUGIN=/nonexistent/libsteadyocr_cuda13.so"
  else
    env_set="CUDA_VISIBLE_DEVICES="
  fi
  timeout 300 env $env_set ./env.sh bin/steadyocr --log-level info ocr $F/synth-dev --models $F/models --backend auto \
    --format json -o $R/auto_$how.json 2>$R/auto_$how.log
  echo "== auto, CUDA unusable ($env_set): exit $? $(tr '\r' '\n' <$R/auto_$how.log | grep -E '^ocr: ' | tail -1)"
  grep -E 'backend event|WARN' $R/auto_$how.log | head -4 | cut -c1-300
  python3 - $R/auto_$how.json $R/synth-dev_vulkan.json <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
be = {v.get("backend") for v in a.values()}
fb = {f["reason"] for v in a.values() for f in v.get("fallbacks", [])}
same = sum(1 for k in a if [l["text"] for l in a[k]["lines"]] == [l["text"] for l in b.get(k, {}).get("lines", [])])
print("   backends %s, fallback reasons %s, %d/%d images read identically to vulkan pinned" % (be, fb, same, len(a)))
PY
done
fi
# Speed: bench (steady state, images in memory) per backend on both sets, then the PyTorch eager peer.
if want bench; then
for set in synth-dev sroie-dev; do
  for be in vulkan vulkan-fp16 cuda-fp32 cpu; do
    timeout 300 ./env.sh bin/steadyocr bench $F/$set --models $F/models --backend $be --json \
      >$R/bench_${set}_$be.json 2>$R/bench_${set}_$be.log
    echo "== bench $set $be: exit $? $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.1f img/s (rung %s, fell back %s), first pass %.0f ms, new shape %.2f ms/img, det %.2f rec %.2f ms/img' % (r['images_per_s'], r['rung'], r['fell_back'], r['first_pass_ms'], r['new_shape_ms_per_image'], r['stage_ms']['det']['mean'], r['stage_ms']['rec']['mean']))" $R/bench_${set}_$be.json 2>&1 | tail -1)"
  done
done
fi
# One model call at a time (no pipeline): where the device time goes per model.
if want models; then
python3 -c "
import numpy as np
rng = np.random.default_rng(0)
np.save('/tmp/det960.npy', rng.standard_normal((1, 3, 960, 736), dtype=np.float32))
np.save('/tmp/rec8.npy', rng.standard_normal((8, 3, 48, 320), dtype=np.float32))
np.save('/tmp/cls8.npy', rng.standard_normal((8, 3, 48, 192), dtype=np.float32))"
for m in "ch_PP-OCRv4_det_infer.onnx det960" "ch_PP-OCRv4_rec_infer.onnx rec8" "ch_ppocr_mobile_v2.0_cls_infer.onnx cls8"; do
  set -- $m
  for be in vulkan vulkan-fp16 cuda-fp32 cpu; do
    echo "   $(timeout 120 ./env.sh bin/steadyocr run-model $F/models/$1 /tmp/$2.npy /tmp/o.npy --backend $be --repeat 20 2>&1 | grep -E ' on ' | tail -1)"
  done
done
fi
if want peers; then
for set in synth-dev sroie-dev; do
  timeout 240 python3 $F/peers/ref_ppocr.py $F/models $F/$set $R/peer_torch_$set.json --runner torch --repeat 1 \
    >$R/peer_torch_$set.log 2>&1
  echo "== peer torch $set: exit $? $(tail -1 $R/peer_torch_$set.log)"
done
fi
if want newshape; then
for set in synth-dev sroie-dev; do
  for v in "vulkan one" "vulkan pershape --per-shape-plans" "cuda-fp16 one"; do
    set -- $v
    tag=ns_${set}_$1_$2
    timeout 300 ./env.sh bin/steadyocr --log-level debug ocr $F/$set --models $F/models --backend $1 ${3:-} \
      --format json -o $R/$tag.json 2>$R/$tag.log
    echo "== new shapes, $set $1 $2: exit $? $(tr '\r' '\n' <$R/$tag.log | grep -E '^ocr: ' | tail -1)"
    grep -E 'WARN|ERROR' $R/$tag.log | sort | uniq -c | sort -rn | head -3 | cut -c1-200
    python3 $REPO/scripts/new_shape_costs.py $R/$tag.log "$set $1 $2" | grep -v "on reference"
  done
  python3 $REPO/scripts/compare_ocr_lines.py $R/ns_${set}_vulkan_one.json $R/ns_${set}_vulkan_pershape.json "$set vulkan" \
    "one plan against per shape"
done
fi
tar czf "$OUT/vulkan.tgz" -C /tmp r
