#!/bin/sh
# One side-by-side run on this machine: `steadyocr ocr` on the oneDNN cpu backend, Guten OCR (ONNX Runtime)
# and Tesseract 5.3, same images, one after the other, with the load average before and after each.
#
#   bench/cpu_vs_peers.sh [IMAGES_DIR] [STEADYOCR_BIN] [OUT_DIR]
#
# Peers (see ../shared/BENCHMARKS.md): Guten under /tmp/peer (npm install --ignore-scripts @gutenye/ocr-node
# and guten_peer.mjs copied there), tesseract-ocr with eng and chi-sim from apt.
# Prints images/s of each and the ratios; writes the three prediction files and a summary into OUT_DIR.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
set_dir=$(realpath "${1:-$here/../shared/data/synth-dev}")
bin=$(realpath "${2:-$here/build/steadyocr}")
out=${3:-/tmp/cpu_vs_peers}
peers=$here/../shared/tools/peers
mkdir -p "$out"
n=$(ls "$set_dir" | grep -ciE '\.(jpg|png|jpeg)$')

{
  echo "date: $(date -Iseconds)"
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "set: $set_dir ($n images)"
  echo "steadyocr: $bin ($(cd "$here" && git rev-parse --short HEAD)) env GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-unset} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"
} | tee "$out/summary.txt"

rate() {  # images seconds
  awk -v n="$1" -v s="$2" 'BEGIN { printf "%.3f", n / s }'
}

echo "load before steadyocr: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.txt"
t0=$(date +%s.%N)
"$bin" ocr --backend cpu --quiet "$set_dir" -o "$out/steadyocr.json"
t1=$(date +%s.%N)
ours=$(rate "$n" "$(echo "$t1 - $t0" | bc)")
echo "steadyocr cpu: $(echo "$t1 - $t0" | bc) s, $ours images/s" | tee -a "$out/summary.txt"

echo "load before guten: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.txt"
t0=$(date +%s.%N)
(cd /tmp/peer && node guten_peer.mjs "$set_dir" "$out/guten.json" >/dev/null)
t1=$(date +%s.%N)
guten=$(rate "$n" "$(echo "$t1 - $t0" | bc)")
echo "guten: $(echo "$t1 - $t0" | bc) s, $guten images/s" | tee -a "$out/summary.txt"

echo "load before tesseract: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.txt"
t0=$(date +%s.%N)
/usr/bin/python3 "$peers/tess_peer.py" "$set_dir" "$out/tess.json" chi_sim+eng >/dev/null
t1=$(date +%s.%N)
tess=$(rate "$n" "$(echo "$t1 - $t0" | bc)")
echo "tesseract: $(echo "$t1 - $t0" | bc) s, $tess images/s" | tee -a "$out/summary.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/summary.txt"

awk -v a="$ours" -v g="$guten" -v t="$tess" \
  'BEGIN { printf "ratio vs guten: %.2fx, vs tesseract: %.2fx\n", a / g, a / t }' | tee -a "$out/summary.txt"
if [ -f "$set_dir/labels.txt" ]; then
  for f in steadyocr guten tess; do
    echo "== $f" >>"$out/summary.txt"
    /usr/bin/python3 "$here/../shared/tools/ocr_eval.py" "$set_dir/labels.txt" "$out/$f.json" >>"$out/summary.txt" 2>&1 || true
  done
fi
