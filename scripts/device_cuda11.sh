#!/bin/bash
# Both CUDA plugins on the GPU machine (issue 18), in one `device` run: which plugin the engine picks and why; the
# CUDA 11.8 plugin (libsteadyocr_cuda11.so) on the op cases, the golden models and end to end; the CUDA 13 plugin with
# cuDNN hidden from the loader (`--backend auto` must stay on the GPU, on cuda-fp32-nocudnn, visibly); speed of each
# side by side. Logs: $OUT/r; a summary is printed.
#
# cuBLAS 11 (libcublas.so.11 + libcublasLt.so.11 of Debian's libcublas11/libcublaslt11, 670 MB, 255 MB as
# .tar.zst) is larger than one call may carry: earlier calls carry .cu11/part.NN and move them to /tmp/cu11 (the
# machine keeps /tmp while it is warm); this script joins them. See docs/COMPATIBILITY.md, "Tested".
#
# Bundle (here): scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so \
#   build/libsteadyocr_cuda11.so build/tests/test_backends -- models ../shared/data/golden ../shared/data/synth-dev \
#   ../shared/data/sroie-dev ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): scripts/device_cuda11.sh
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/cuda11_out}
R=$OUT/r  # straight into $OUT: a run cut short by its limit still brings its logs back
mkdir -p "$OUT" "$R"
tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
CU11=/tmp/cu11lib
if [ ! -e $CU11/libcublasLt.so.11 ]; then
  mkdir -p $CU11 && cat /tmp/cu11/part.* | zstd -dq | tar x -C $CU11 || { echo "cuBLAS 11 chunks incomplete"; exit 3; }
  ln -sf libcublas.so.11.11.3.6 $CU11/libcublas.so.11
  ln -sf libcublasLt.so.11.11.3.6 $CU11/libcublasLt.so.11
fi
ls -la $CU11 | tail -4
cd /tmp/bundle || exit 2
export STEADYOCR_MODELS=$PWD/files/models STEADYOCR_SHARED_DATA=$PWD/files STEADYOCR_TEST_DATA=$REPO/tests/data
export LD_LIBRARY_PATH=$CU11  # env.sh puts the bundle and /usr/local/cuda/lib64 first; cuBLAS 11 is only here
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
P11=$PWD/bin/libsteadyocr_cuda11.so
T="./env.sh bin/test_backends"
S="./env.sh bin/steadyocr"
summary() {  # name rc log
  echo "== $1: exit $2, $(grep -c '^\[       OK' "$3") ok, $(grep -c '^\[  FAILED  \].*(' "$3") failed"
  grep -E '^\[  FAILED  \].*\(' "$3" | sed 's/, where GetParam.*//' | head -20
}
plugins_check() {  # doctor json
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for layer in j["layers"]:
    for c in layer.get("checks", []):
        if c["check"] in ("plugins", "plugin", "driver_vs_runtime", "cudnn", "cublas", "arch") or c["status"] == "fail":
            print(f"   L{layer['level']} {c['check']}: {c['status']} {c.get('code') or ''} {c['summary'][:300]}")
print("   passed level", j.get("passed_level"), "build", json.dumps(j["environment"]["build"])[:300])
PY
}

echo "== the pick, no pin (driver 580 = CUDA 13.0: the CUDA 13 plugin)"
$S doctor --level 3 --json >$R/doctor_default.json 2>$R/doctor_default.log
echo "   exit $?"; plugins_check $R/doctor_default.json
echo "== the CUDA 11.8 plugin pinned (--cuda-plugin)"
$S doctor --level 3 --json --cuda-plugin $P11 >$R/doctor_11.json 2>$R/doctor_11.log
echo "   exit $?"; plugins_check $R/doctor_11.json

echo "== CUDA 11.8 plugin: op cases (every backend the registry lists: the -nocudnn ones, cuDNN 9 here is the CUDA 13 build)"
STEADYOCR_CUDA_PLUGIN=$P11 STEADYOCR_CUDA_DEBUG_SYNC=1 timeout 200 $T --gtest_filter='All/BackendOps.*cuda*:CudaPlugin.*' \
  >$R/ops11.log 2>&1
summary "op cases (cuda11)" $? $R/ops11.log
for be in cuda_fp32 cuda_fp16 cuda_fp32_nocudnn cuda_fp16_nocudnn; do
  echo "   $be: $(grep -c "^\[       OK .*__${be} " $R/ops11.log) ok"
done
grep -E '^cuda plugin' $R/ops11.log | head -2
STEADYOCR_CUDA_PLUGIN=$P11 STEADYOCR_CUDA_CUDNN=0 timeout 150 $T --gtest_filter='CudaModels.*' >$R/models11.log 2>&1
summary "golden models (cuda11, no cuDNN)" $? $R/models11.log
grep -E 'Failure|differ beyond|logits' $R/models11.log | head -10

echo "== end to end: CUDA 13 plugin (cuDNN) vs CUDA 11.8 plugin"
run_set() {  # tag set backend [extra env]
  local tag=$1 set=$2 be=$3
  shift 3
  env "$@" timeout 150 $S --log-level info ocr files/$set --models files/models --backend $be --format json \
    -o $R/$tag.json 2>$R/$tag.log
  echo "== $tag: exit $? $(tr '\r' '\n' <$R/$tag.log | grep -E '^ocr: ' | tail -1)"
  grep -m2 -E 'CUDA plugin|cuDNN' $R/$tag.log | cut -c1-260
  grep -E 'WARN|ERROR' $R/$tag.log | head -3 | cut -c1-260
  local flags=""
  [ $set = sroie-dev ] && flags=--ignore-case
  python3 files/ocr_eval.py files/$set/labels.txt $R/$tag.json $flags 2>&1 | tail -2
}
same_lines() {  # a.json b.json: lines identical in text
  python3 - "$1" "$2" <<'PY'
import json, sys
def lines(p):  # the ocr command's JSON: {file: {"lines": [{"text": ...}], "rung": ..., "fallbacks": [...]}}
    return {k: [l["text"] for l in v.get("lines", [])] for k, v in json.load(open(p)).items()}
a, b = lines(sys.argv[1]), lines(sys.argv[2])
tot = same = 0
for k, la in a.items():
    lb = b.get(k, [])
    tot += max(len(la), len(lb))
    same += sum(1 for x, y in zip(la, lb) if x == y)
print(f"   identical lines {same}/{tot}")
PY
}
for set in synth-dev sroie-dev; do
  run_set ${set}_13_fp32 $set cuda-fp32
  run_set ${set}_11_fp32 $set cuda-fp32-nocudnn STEADYOCR_CUDA_PLUGIN=$P11
  same_lines $R/${set}_13_fp32.json $R/${set}_11_fp32.json
  run_set ${set}_11_fp16 $set cuda-fp16-nocudnn STEADYOCR_CUDA_PLUGIN=$P11
done
echo "== --backend auto with the CUDA 11.8 plugin: cuda-fp32 refuses (cuDNN here is the CUDA 13 build), the nocudnn rung serves"
run_set auto_11 synth-dev auto STEADYOCR_CUDA_PLUGIN=$P11
grep -E 'falling back|cannot serve|serving' $R/auto_11.log | head -5 | cut -c1-300

echo "== CUDA 13 plugin, cuDNN hidden from the loader (/dev/null bound over it), --backend auto"
CUDNN=$(readlink -f /usr/lib/x86_64-linux-gnu/libcudnn.so.9)
unshare -m /bin/bash -c "mount --bind /dev/null '$CUDNN' && cd /tmp/bundle && \
  LD_LIBRARY_PATH= timeout 150 ./env.sh bin/steadyocr --log-level info ocr files/synth-dev --models files/models \
  --backend auto --format json -o $R/hidden.json" 2>$R/hidden.log
echo "   exit $? $(tr '\r' '\n' <$R/hidden.log | grep -E '^ocr: ' | tail -1)"
grep -E 'falling back|cannot serve|cuDNN|CUDA plugin' $R/hidden.log | head -6 | cut -c1-300
python3 files/ocr_eval.py files/synth-dev/labels.txt $R/hidden.json 2>&1 | tail -2
same_lines $R/synth-dev_13_fp32.json $R/hidden.json
python3 -c "import json; d=json.load(open('$R/hidden.json')); v=next(iter(d.values())); print('   first result: rung', v['rung'], 'backend', v['backend'], 'fallbacks', json.dumps(v['fallbacks'])[:240])"

# Speed: synth-dev x10 (400 images), interleaved, twice.
mkdir -p /tmp/synth10
for i in $(seq 10); do for f in files/synth-dev/*.png files/synth-dev/*.jpg; do
  [ -e "$f" ] && ln -sf "$PWD/$f" /tmp/synth10/r${i}_$(basename "$f"); done; done
echo "== speed: $(ls /tmp/synth10 | wc -l) images"
for pass in 1 2; do
  for cfg in "13 cuda-fp32" "13 cuda-fp32-nocudnn" "11 cuda-fp32-nocudnn"; do
    set -- $cfg
    pin=""
    [ $1 = 11 ] && pin="STEADYOCR_CUDA_PLUGIN=$P11"
    env $pin timeout 150 $S ocr /tmp/synth10 --models files/models --backend $2 --format json -o /tmp/speed.json \
      2>$R/speed_$1_$2_$pass.log
    echo "   pass $pass plugin $1 $2: $(tr '\r' '\n' <$R/speed_$1_$2_$pass.log | grep -E '^ocr: ' | tail -1)"
  done
done
echo "== done"
