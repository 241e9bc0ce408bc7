#!/bin/bash
# The doctor, every layer, on each CUDA plugin the way a user meets it (issue 18), plus the device memory of the
# cuDNN-free path: (1) the CUDA 11.8 plugin pinned (no cuDNN 9 for CUDA 11 here), (2) the CUDA 13 plugin with cuDNN
# hidden from the loader, (3) the CUDA 13 plugin as the machine is; then peak device memory of steadyocr ocr with and
# without cuDNN (nvidia-smi sampled every 100 ms). Reports in $OUT (doctor JSON for scripts/compat_row.py).
# Needs cuBLAS 11 in /tmp/cu11lib (scripts/device_cuda11.sh says how it travels) and the bundle of that script.
# Device (repo root, carry [".devbundle"]): scripts/device_plugins_doctor.sh
set -uo pipefail
REPO=$PWD
OUT=${OUT:-/tmp/plugins_doctor_out}
mkdir -p "$OUT"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
[ -e /tmp/cu11lib/libcublasLt.so.11 ] || { echo "no cuBLAS 11 in /tmp/cu11lib"; exit 3; }
cd /tmp/bundle || exit 2
export STEADYOCR_MODELS=$PWD/files/models STEADYOCR_TEST_DATA=$REPO/tests/data LD_LIBRARY_PATH=/tmp/cu11lib
S="./env.sh bin/steadyocr"
P11=$PWD/bin/libsteadyocr_cuda11.so
CUDNN=$(readlink -f /usr/lib/x86_64-linux-gnu/libcudnn.so.9)
show() {  # doctor json: exit, passed level, warnings and failures
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("   passed level", j.get("passed_level"), "of", j.get("requested_level"), "exit", j.get("exit_code"))
for layer in j["layers"]:
    for c in layer.get("checks", []):
        if c["status"] in ("warn", "fail") or c["check"] in ("plugins", "backend_ops", "cudnn_conv"):
            print(f"   L{layer['level']} {c['check']}: {c['status']} {c.get('code') or ''} {c['summary'][:220]}")
PY
}
echo "== (1) CUDA 11.8 plugin pinned, doctor --level 4"
$S doctor --level 4 --models files/models --json --cuda-plugin $P11 >$OUT/doctor_cuda11.json 2>$OUT/doctor_cuda11.log
show $OUT/doctor_cuda11.json
echo "== (2) CUDA 13 plugin, cuDNN hidden, doctor --level 4"
unshare -m /bin/bash -c "mount --bind /dev/null '$CUDNN' && cd /tmp/bundle && LD_LIBRARY_PATH= ./env.sh \
  bin/steadyocr doctor --level 4 --models files/models --json" >$OUT/doctor_cuda13_nocudnn.json 2>$OUT/doctor_cuda13_nocudnn.log
show $OUT/doctor_cuda13_nocudnn.json
echo "== (3) CUDA 13 plugin as the machine is, doctor --level 4"
$S doctor --level 4 --models files/models --json >$OUT/doctor_cuda13.json 2>$OUT/doctor_cuda13.log
show $OUT/doctor_cuda13.json

echo "== peak device memory (MiB, nvidia-smi every 100 ms) of one ocr process"
peak() {  # label, then the command
  local label=$1
  shift
  "$@" >/dev/null 2>$OUT/mem_$label.log &
  local pid=$! max=0 v
  while kill -0 $pid 2>/dev/null; do
    v=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    [ "${v:-0}" -gt "$max" ] && max=$v
    sleep 0.1
  done
  wait $pid
  echo "   $label: exit $? peak ${max} MiB (idle $(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1) MiB) $(tr '\r' '\n' <$OUT/mem_$label.log | grep -E '^ocr: ' | tail -1)"
}
for set in synth-dev sroie-dev; do
  peak ${set}_cudnn $S ocr files/$set --models files/models --backend cuda-fp32 --format json -o /tmp/m.json
  peak ${set}_nocudnn $S ocr files/$set --models files/models --backend cuda-fp32-nocudnn --format json -o /tmp/m.json
  peak ${set}_cuda11 env STEADYOCR_CUDA_PLUGIN=$P11 $S ocr files/$set --models files/models --backend cuda-fp32-nocudnn \
    --format json -o /tmp/m.json
done
echo "== done"
