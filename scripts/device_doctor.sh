#!/bin/bash
# The doctor matrix on a GPU machine in one go: every level, both cuDNN installs, every injected failure, the
# environment-reproduced ones (hidden devices, toolkit stub libcuda, missing cuDNN), then everything tarred.
#
# Here (build, then pack the binaries, the plugin and the models):
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build steadyocr steadyocr_cuda
#   ../shared/tools/device-bundle.sh .devbundle build/steadyocr build/libsteadyocr_cuda.so -- models/
# On the device (repo root, carry [".devbundle"]):
#   scripts/device_doctor.sh            # outputs in $OUT (the device tool) or ./doctor-out
# Every run's stdout/stderr/JSON lands in doctor_outputs.tgz; summary.txt lists rc, verdict and codes per run.
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
M=$B/files/models
TORCH_CUDNN=${TORCH_CUDNN:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib}
SUMMARY=$R/summary.txt

# Prints rc, time, verdict and the non-pass codes of a doctor JSON report.
describe() {
  python3 - "$1" <<'PY' 2>/dev/null || echo "   (no JSON)"
import json, sys
j = json.load(open(sys.argv[1]))
if "verdict" in j:
    print("   verdict:", j["verdict"][:300])
    for f in j["findings"]:
        print(f"   {f['status']:7} L{f['level']} {f['check']:20} {f['code'] or '-':30} {f['summary'][:150]}")
PY
}

# run NAME CMD...: stdout -> NAME.out (JSON when --json), stderr -> NAME.err.
run() {
  local name=$1
  shift
  local t0=$(date +%s%N)
  "$@" >"$R/$name.out" 2>"$R/$name.err"
  local rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "== $name: rc=$rc ${ms}ms :: $*" | tee -a "$SUMMARY"
  local json=$R/$name.out
  [[ -f $R/$name.json ]] && json=$R/$name.json
  describe "$json" | tee -a "$SUMMARY"
}

{
  echo "== machine"
  nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,memory.total,memory.used --format=csv
  uname -r
  ls -la /usr/lib/x86_64-linux-gnu/libcudnn.so* /usr/local/cuda/lib64/libcudnn.so* "$TORCH_CUDNN"/libcudnn.so* 2>&1
  ldconfig -p | grep -E 'libcudnn.so.9 |libcublas.so.13 |libcuda.so.1 '
  command -v cuobjdump >/dev/null && cuobjdump --list-elf --list-ptx "$B/bin/libsteadyocr_cuda.so" | sort | uniq -c | head -20
} >"$R/machine.txt" 2>&1
cat "$R/machine.txt" >>"$SUMMARY"

run env "$E" "$S" doctor --env --json
# Layers 1-4 with the cuDNN the loader finds by default, and the real models' conv shapes.
run full_default "$E" "$S" doctor --level 4 --models "$M" --json-file "$R/full_default.json"
# The same with PyTorch's cuDNN folder first on the loader path.
run full_torch_cudnn "$E" sh -c "LD_LIBRARY_PATH=$TORCH_CUDNN:\$LD_LIBRARY_PATH exec $S doctor --level 4 --json-file $R/full_torch_cudnn.json"

# Injected failures: only the check concerned runs in layers 3-4 (--only), layers 1-2 always run.
for pair in no_kernel_image:kernel_image illegal_address:kernel_image cudnn_not_supported:cudnn_conv \
  numeric_mismatch:cudnn_conv stream_hang:streams memory_growth:memory budget_unavailable:budget \
  hang_child:streams; do
  fault=${pair%%:*}
  check=${pair##*:}
  run "fault_$fault" "$E" "$S" doctor --json --level 4 --only "$check" --inject "$fault" --watchdog-ms 3000 \
    --check-timeout-ms 8000
done
# The backend's numeric self-test with a perturbed output.
run fault_numeric_backend "$E" "$S" doctor --json --level 3 --only backend_ops --inject numeric_mismatch

# Failures reproduced through the environment.
run hidden_empty "$E" sh -c "CUDA_VISIBLE_DEVICES= exec $S doctor --json --level 1"
run hidden_minus1 "$E" sh -c "CUDA_VISIBLE_DEVICES=-1 exec $S doctor --json --level 2"
mkdir -p "$W/stub" && ln -sf /usr/local/cuda/lib64/stubs/libcuda.so "$W/stub/libcuda.so.1"
run stub_libcuda "$E" sh -c "LD_LIBRARY_PATH=$W/stub:\$LD_LIBRARY_PATH exec $S doctor --json --level 2"
# cuDNN missing: every libcudnn.so.9 the loader could find is hidden behind /dev/null in a private mount
# namespace (nothing changes outside this one command).
cat >"$W/hide_cudnn.sh" <<SH
for f in \$( (ldconfig -p | awk '/libcudnn.so.9 /{print \$NF}'; ls /usr/local/cuda/lib64/libcudnn.so.9 $B/lib/libcudnn.so.9 2>/dev/null) | sort -u); do
  mount --bind /dev/null "\$(readlink -f \$f)" || exit 3
done
exec "$E" "$S" doctor --json --level 2
SH
run cudnn_hidden unshare -m sh "$W/hide_cudnn.sh"

tar czf "$OUTDIR/doctor_outputs.tgz" -C "$W" doctor
cp "$SUMMARY" "$OUTDIR/summary.txt"
cp "$R/full_default.out" "$OUTDIR/full_default.txt"
echo "outputs: $OUTDIR/doctor_outputs.tgz"
