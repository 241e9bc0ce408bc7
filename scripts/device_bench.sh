#!/bin/bash
# End-to-end benchmark on the GPU machine, in one `device` run: steadyocr on cuda-fp16 and cuda-fp32 (and cpu for
# reference) over synth-dev and sroie-dev, scored with ocr_eval.py, and the PyTorch/ONNX Runtime peers on the same
# images in the same run. Everything lands in $OUT (summary.txt plus bench.tgz with every JSON and log).
#
# Build the bundle here first (the working tree travels; ../shared does not). scripts/slim_bundle.py stubs out the
# GIS/DICOM readers OpenCV drags in, which device-bundle.sh would carry (its bundle is over 100 MiB; this one ~51):
#   scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#       ../shared/tools/peers ../shared/tools/ocr_eval.py ../shared/data/synth-dev ../shared/data/sroie-dev
# then with carry [".devbundle"]:   scripts/device_bench.sh            (options: BACKENDS="cuda-fp16 cuda-fp32"
#   SETS="synth-dev sroie-dev" PEERS=0 to skip the peers, REPEAT=2 to run each set twice and keep the last)
set -uo pipefail
BUNDLE=${1:-.devbundle/bundle.tgz}
BACKENDS=${BACKENDS:-"cuda-fp16 cuda-fp32"}
SETS=${SETS:-"synth-dev sroie-dev"}
PEERS=${PEERS:-1}
REPEAT=${REPEAT:-1}
OUT=${OUT:-/tmp/device_bench_out}
mkdir -p "$OUT"
R=/tmp/bench_res
rm -rf "$R" /tmp/bundle && mkdir -p "$R"
tar xzf "$BUNDLE" -C /tmp || { echo "cannot unpack $BUNDLE" | tee "$OUT/summary.txt"; exit 1; }
B=/tmp/bundle
F=$B/files
S=$OUT/summary.txt
{
  echo "# steadyocr device bench $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  $B/env.sh $B/bin/steadyocr --version 2>&1 | sed 's/^/steadyocr: /'
} | tee "$S"

$B/env.sh $B/bin/steadyocr doctor --level 2 >"$R/doctor.txt" 2>&1
echo "doctor --level 2 exit $?" | tee -a "$S"

for set in $SETS; do
  [ -d "$F/$set" ] || { echo "$set: missing from the bundle" | tee -a "$S"; continue; }
  eval_flags=""
  [ "$set" = "sroie-dev" ] && eval_flags="--ignore-case"
  for be in $BACKENDS; do
    tag=${set}_${be}
    for ((i = 1; i <= REPEAT; i++)); do
      start=$(date +%s.%N)
      $B/env.sh $B/bin/steadyocr --log-level info ocr "$F/$set" --models "$F/models" --backend "$be" \
        --format json -o "$R/$tag.json" 2>"$R/$tag.log"
      rc=$?
      end=$(date +%s.%N)
    done
    line=$(tr '\r' '\n' <"$R/$tag.log" | grep -E '^ocr: ' | tail -1)
    wall=$(python3 -c "print(f'{$end - $start:.2f}')")
    echo "$tag: exit $rc, wall ${wall}s (process start, plugin load and planning included); $line" | tee -a "$S"
    if [ $rc -eq 0 ] && [ -f "$F/ocr_eval.py" ]; then
      python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$R/$tag.json" $eval_flags >"$R/${tag}_eval.txt" 2>&1
      sed 's/^/    /' "$R/${tag}_eval.txt" | tail -8 | tee -a "$S"
    fi
  done
done

if [ "$PEERS" = "1" ] && [ -x "$F/peers/device_peers.sh" ]; then
  echo "--- peers (ONNX Runtime CPU, PyTorch eager fp32/fp16 on the GPU) ---" | tee -a "$S"
  mkdir -p /tmp/peer_out
  (cd "$F" && OUT=/tmp/peer_out timeout 1500 bash peers/device_peers.sh models $SETS >"$R/peers.log" 2>&1)
  echo "peers exit $?" | tee -a "$S"
  if [ -f /tmp/peer_out/results.tgz ]; then
    tar xzf /tmp/peer_out/results.tgz -C "$R" && cat "$R/res/summary.txt" 2>/dev/null | tee -a "$S"
  fi
fi

cp "$S" "$R/summary.txt"
tar czf "$OUT/bench.tgz" -C /tmp bench_res
echo "results: $OUT/summary.txt, $OUT/bench.tgz"
