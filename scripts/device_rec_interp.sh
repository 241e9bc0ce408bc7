#!/bin/bash
# The recognition resize (--rec-interp) on the GPU machine, in one `device` run: every mode on synth-dev and sroie-dev
# on each rung, scored with ocr_eval.py; each line at its own width (--rec-batch 1 --rec-min-width 16
# --rec-width-bucket 0) against the default's accuracy and images/s; the modes on PaddleOCR's scene and word
# samples (no ground truth: the lines are kept for reading side by side). Also the bindings on the GPU (the C
# example, the worker rungs through its compiled-in binary path overridden) and the doctor's JSON report with each
# cuDNN the machine has (rows of docs/COMPATIBILITY.md). Everything lands in $OUT (summary.txt, rec_interp.tgz).
#
# Bundle first, here:
#   scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/examples/ocr_example -- \
#       models ../shared/tools/ocr_eval.py ../shared/data/synth-dev ../shared/data/sroie-dev \
#       ../shared/data/paddleocr-samples examples/sample_doc.jpg
# then with carry [".devbundle"]:  scripts/device_rec_interp.sh
#   env: RUNGS="cuda-fp16 cuda-fp32 cpu" MODES="linear cubic lanczos lanczos-own" SETS="synth-dev sroie-dev"
#        BENCH_RUNGS="cuda-fp16 cpu" (images/s, default vs own width) EXTRAS=1 (samples, C API, doctor reports)
set -uo pipefail
BUNDLE=${1:-.devbundle/bundle.tgz}
RUNGS=${RUNGS:-"cuda-fp16 cuda-fp32 cpu"}
MODES=${MODES:-"linear cubic lanczos lanczos-own"}
SETS=${SETS:-"synth-dev sroie-dev"}
BENCH_RUNGS=${BENCH_RUNGS:-"cuda-fp16 cpu"}
EXTRAS=${EXTRAS:-1}
OUT=${OUT:-/tmp/rec_interp_out}
mkdir -p "$OUT"
R=/tmp/rec_interp
rm -rf "$R" /tmp/bundle && mkdir -p "$R"
tar xzf "$BUNDLE" -C /tmp || { echo "cannot unpack $BUNDLE" | tee "$OUT/summary.txt"; exit 1; }
B=/tmp/bundle
F=$B/files
S=$R/summary.txt
SO="$B/env.sh $B/bin/steadyocr"
flags_of() {
  case "$1" in
    *-own) echo "--rec-interp ${1%-own} --rec-batch 1 --rec-min-width 16 --rec-width-bucket 0" ;;
    *) echo "--rec-interp $1" ;;
  esac
}
{
  echo "# steadyocr --rec-interp on the device $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  $SO --version 2>&1 | sed 's/^/steadyocr: /'
} | tee "$S"

echo "--- accuracy: set rung mode | det_hmean e2e_char_accuracy line_exact token_f1 | wall s" | tee -a "$S"
for set in $SETS; do
  eval_flags=""
  [ "$set" = "sroie-dev" ] && eval_flags="--ignore-case"
  for rung in $RUNGS; do
    for mode in $MODES; do
      tag=$set.$rung.$mode
      start=$(date +%s.%N)
      req=""
      [[ $rung == cuda* ]] && req="--require-gpu"
      # shellcheck disable=SC2046,SC2086
      $SO ocr "$F/$set" --models "$F/models" --backend "$rung" $req $(flags_of "$mode") -q \
        --format json -o "$R/$tag.json" 2>"$R/$tag.log"
      rc=$?
      end=$(date +%s.%N)
      if [ $rc -ne 0 ]; then
        echo "$tag: exit $rc: $(tail -2 "$R/$tag.log" | tr '\n' ' ')" | tee -a "$S"
        continue
      fi
      python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$R/$tag.json" $eval_flags --json >"$R/$tag.eval.json" 2>&1
      python3 - "$R/$tag.eval.json" "$tag" "$start" "$end" <<'PY' | tee -a "$S"
import json, sys
e = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<36} | {e['det_hmean']:.4f} {e['e2e_char_accuracy']:.4f} {e['line_exact']:.4f} "
      f"{e['token_f1']:.4f} | {float(sys.argv[4]) - float(sys.argv[3]):.1f}")
PY
    done
  done
done

echo "--- images/s (bench, median of 3 passes after a warm-up): default vs each line at its own width" | tee -a "$S"
$SO bench "$F/synth-dev" --models "$F/models" --warmup 1 --repeat 1 >/dev/null 2>&1  # the first process runs slower
for rung in $BENCH_RUNGS; do
  for mode in lanczos lanczos-own; do
    # shellcheck disable=SC2046
    $SO bench "$F/synth-dev" --models "$F/models" --backend "$rung" $(flags_of "$mode") --warmup 1 --repeat 3 \
      --json >"$R/bench.$rung.$mode.json" 2>"$R/bench.$rung.$mode.log"
    python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(f'bench synth-dev {sys.argv[2]:<10} {sys.argv[3]:<12} {b[\"images_per_s\"]:.2f} images/s (rec {b[\"stage_ms\"][\"rec\"][\"mean\"]:.1f} ms/image)')" \
      "$R/bench.$rung.$mode.json" "$rung" "$mode" 2>&1 | tee -a "$S"
  done
done

if [ "$EXTRAS" = 1 ]; then
echo "--- PaddleOCR's samples (no ground truth): lines per mode, cuda-fp16" | tee -a "$S"
P=$F/paddleocr-samples/doc
for mode in linear cubic lanczos; do
  $SO ocr "$P/imgs_en" "$P/imgs" --models "$F/models" --backend cuda-fp16 --rec-interp "$mode" -q --format json \
    -o "$R/samples.$mode.json" 2>"$R/samples.$mode.log"
  $SO ocr "$P/imgs_words_en" "$P/imgs_words/en" "$P/imgs_words/ch" --models "$F/models" --backend cuda-fp16 \
    --rec-only --rec-interp "$mode" -q --format json -o "$R/words.$mode.json" 2>"$R/words.$mode.log"
  echo "samples $mode: exit codes in $R/samples.$mode.log / words.$mode.log" >>"$S"
done

echo "--- the C API on the GPU (examples/c/ocr_example)" | tee -a "$S"
STEADYOCR_EXE=$B/bin/steadyocr STEADYOCR_CUDA_PLUGIN=$B/bin/libsteadyocr_cuda13.so \
  $B/env.sh $B/bin/ocr_example --models "$F/models" "$F/sample_doc.jpg" >"$R/capi.txt" 2>&1
echo "ocr_example exit $?" | tee -a "$S"
head -4 "$R/capi.txt" | tee -a "$S"

echo "--- doctor --json --level 4 with each cuDNN (docs/COMPATIBILITY.md)" | tee -a "$S"
$SO doctor --json --level 4 >"$R/doctor.cudnn-system.json" 2>"$R/doctor.cudnn-system.log"
echo "doctor (system cuDNN) exit $?" | tee -a "$S"
TORCH_CUDNN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib
if [ -d "$TORCH_CUDNN" ]; then
  LD_LIBRARY_PATH=$TORCH_CUDNN $SO doctor --json --level 4 >"$R/doctor.cudnn-torch.json" 2>"$R/doctor.cudnn-torch.log"
  echo "doctor (cuDNN of $TORCH_CUDNN) exit $?" | tee -a "$S"
fi
echo "--- for the Python module: $(python3 --version 2>&1); headers: $(ls -d /usr/include/python3* 2>/dev/null | tr '\n' ' '); cc: $(command -v gcc cc | tr '\n' ' ')" | tee -a "$S"

fi

cp "$S" "$OUT/summary.txt"
cp "$R"/doctor.*.json "$OUT/" 2>/dev/null
tar czf "$OUT/rec_interp.tgz" -C /tmp rec_interp
echo "results: $OUT/summary.txt, $OUT/rec_interp.tgz"
