#!/bin/bash
# The doctor matrix on a GPU machine in one go: every level with the real models, each injected failure, both
# cuDNN installs, and the failures reproduced through the environment (hidden devices, the toolkit's stub
# libcuda, cuDNN missing). Results are appended as they come (a run cut short still returns what it has).
#
# Here: build, then pack the doctor binary, the plugin and the models. steadyocr-doctor is the same `doctor`
# command without the OCR pipeline (whose OpenCV/GDAL libraries do not fit the 64 MiB transfer with the plain
# bundler); the full binary works too when packed with scripts/slim_bundle.py (bin/steadyocr is preferred):
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build steadyocr-doctor steadyocr_cuda
#   ../shared/tools/device-bundle.sh .devbundle build/steadyocr-doctor build/libsteadyocr_cuda13.so -- models/
#   (or: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models)
# On the device (repo root, carry [".devbundle"]):
#   scripts/device_doctor.sh      # -> $OUT (the device tool) or ./doctor-out: summary.txt, doctor_outputs.tar
set -u
OUTDIR=${OUT:-$PWD/doctor-out}
mkdir -p "$OUTDIR"
W=$(mktemp -d)
R=$W/doctor
mkdir -p "$R"
tar xzf .devbundle/bundle.tgz -C "$W" || { echo "no .devbundle/bundle.tgz (see this script's header)"; exit 2; }
B=$W/bundle
E=$B/env.sh
S=$B/bin/steadyocr
[[ -x $S ]] || S=$B/bin/steadyocr-doctor
M=$B/files/models
TORCH_CUDNN=${TORCH_CUDNN:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib}
SUMMARY=$OUTDIR/summary.txt
TAR=$OUTDIR/doctor_outputs.tar
: >"$SUMMARY"
tar cf "$TAR" -C "$W" --files-from /dev/null

# Prints the verdict and every non-pass finding of a doctor JSON report.
describe() {
  python3 - "$1" <<'PY' 2>/dev/null || echo "   (no JSON report)"
import json, sys
j = json.load(open(sys.argv[1]))
if "verdict" in j:
    print(f"   passed_level={j['passed_level']} ok={j['ok']} verdict: {j['verdict'][:400]}")
    for f in j["findings"]:
        print(f"   {f['status']:7} L{f['level']} {f['check']:18} {f['code'] or '-':28} {f['summary'][:170]}")
PY
}

# run NAME SECONDS CMD...: stdout -> NAME.out, stderr -> NAME.err; a --json-file goes to NAME.json.
run() {
  local name=$1 secs=$2
  shift 2
  local t0=$(date +%s%N)
  timeout -k 5 "$secs" "$@" >"$R/$name.out" 2>"$R/$name.err"
  local rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "== $name: rc=$rc ${ms}ms :: ${*#$E }" >>"$SUMMARY"
  local json=$R/$name.out
  [[ -f $R/$name.json ]] && json=$R/$name.json
  describe "$json" >>"$SUMMARY"
  tar rf "$TAR" -C "$W" "doctor/$name.out" "doctor/$name.err" $([[ -f $R/$name.json ]] && echo "doctor/$name.json")
}

{
  echo "== machine"
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,memory.total,memory.used --format=csv,noheader
  uname -r
  ls -la /usr/lib/x86_64-linux-gnu/libcudnn.so.9* /usr/local/cuda/lib64/libcudnn.so.9* "$TORCH_CUDNN"/libcudnn.so.9* 2>&1
  ldconfig -p | grep -E 'libcudnn.so.9 |libcublas.so.13 |libcuda.so.1 '
  command -v cuobjdump >/dev/null && cuobjdump --list-elf --list-ptx "$B/bin/libsteadyocr_cuda13.so" | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c
  echo "binary: $S"
} >>"$SUMMARY" 2>&1

# 1. Layers 1-4 with the cuDNN the loader finds by default and every conv shape of the real models.
run full_default 240 "$E" "$S" doctor --level 4 --models "$M" --check-timeout-ms 40000 --json-file "$R/full_default.json"
# 2. Injected failures: only the check concerned runs in layers 3-4 (--only); layers 1-2 always run.
for pair in no_kernel_image:kernel_image illegal_address:kernel_image cudnn_not_supported:cudnn_conv \
  numeric_mismatch:cudnn_conv numeric_mismatch:backend_ops stream_hang:streams memory_growth:memory \
  budget_unavailable:budget hang_child:streams; do
  fault=${pair%%:*}
  check=${pair##*:}
  run "fault_${fault}_$check" 90 "$E" "$S" doctor --json --level 4 --only "$check" --inject "$fault" \
    --watchdog-ms 3000 --check-timeout-ms 8000
done
# 3. PyTorch's cuDNN folder first on the loader path.
run torch_cudnn 120 "$E" sh -c "LD_LIBRARY_PATH=$TORCH_CUDNN:\$LD_LIBRARY_PATH exec $S doctor --json --level 3 --only kernel_image,cudnn_conv,backend_ops"
# 4. Failures reproduced through the environment.
run hidden_empty 60 "$E" sh -c "CUDA_VISIBLE_DEVICES= exec $S doctor --json --level 1"
run hidden_minus1 60 "$E" sh -c "CUDA_VISIBLE_DEVICES=-1 exec $S doctor --json --level 2"
mkdir -p "$W/stub" && ln -sf /usr/local/cuda/lib64/stubs/libcuda.so "$W/stub/libcuda.so.1"
run stub_libcuda 60 "$E" sh -c "LD_LIBRARY_PATH=$W/stub:\$LD_LIBRARY_PATH exec $S doctor --json --level 2"
# cuDNN missing: every libcudnn.so.9 the loader could find is covered by /dev/null in a private mount
# namespace (nothing changes outside this one command).
cat >"$W/hide_cudnn.sh" <<SH
for f in \$( (ldconfig -p | awk '/libcudnn.so.9 /{print \$NF}'; ls /usr/local/cuda/lib64/libcudnn.so.9 $B/lib/libcudnn.so.9 2>/dev/null) | sort -u); do
  mount --bind /dev/null "\$(readlink -f \$f)" || exit 3
done
exec "$E" "$S" doctor --json --level 2
SH
run cudnn_hidden 60 unshare -m sh "$W/hide_cudnn.sh"
run env 60 "$E" "$S" doctor --env --json
# 5. The human table of the full run, for the issue note.
cp "$R/full_default.out" "$OUTDIR/full_default.txt" 2>/dev/null
echo "done: $SUMMARY $TAR"
