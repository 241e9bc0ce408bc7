#!/bin/bash
# The cpu backend under co-tenancy, side by side with the peers, on this machine: cold processes (start-up included)
# over the first N synth-dev images, timed by hyperfine, idle and with one competing busy process (a shell loop).
# steadyocr --threads 1 and --threads 2 (parallel regions sized to the free cores: core/cpu_share.h), --threads 2
# with that off (STEADYOCR_SHARE_CORES=off) and with OpenMP's spin-wait bounded (STEADYOCR_OMP_SPIN=bound), with
# oneDNN's plans per input shape (--per-shape-plans), Guten OCR (onnxruntime-node) and Tesseract 5 (one process per
# image).
#   scripts/cotenancy_bench.sh [N...]    (default: 12 40; env RUNS=3, GUTEN_DIR=/tmp/peer with @gutenye/ocr-node
#                                         installed, OUT=build/cotenancy)
# Needs hyperfine, tesseract-ocr (+ -eng) and node; a peer that is missing is left out, saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
SO=$PWD/build/steadyocr
MODELS=$PWD/models
DATA=$PWD/../shared/data/synth-dev
PEERS=$PWD/../shared/tools/peers
RUNS=${RUNS:-3}
GUTEN_DIR=${GUTEN_DIR:-/tmp/peer}
OUT=${OUT:-build/cotenancy}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
command -v hyperfine >/dev/null || { echo "hyperfine not found (apt-get install hyperfine)"; exit 2; }
SIZES=("${@:-12 40}")
# shellcheck disable=SC2206
SIZES=(${SIZES[*]})
busy_pid=""
stop_busy() { [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; busy_pid=""; }
trap stop_busy EXIT
{
  echo "# co-tenancy bench $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo "# steadyocr $("$SO" --version), $(tesseract --version 2>&1 | head -1), node $(node --version 2>/dev/null)"
} | tee "$OUT/summary.txt"
for n in "${SIZES[@]}"; do
  dir=$OUT/images_$n
  rm -rf "$dir" && mkdir -p "$dir"
  find "$DATA" -maxdepth 1 -name '*.jpg' | sort | head -n "$n" | xargs -I{} cp {} "$dir/"
  cmds=(-n "steadyocr --threads 1" "$SO ocr --backend cpu --threads 1 --quiet --models $MODELS -o $OUT/so1.json $dir"
        -n "steadyocr --threads 2" "$SO ocr --backend cpu --threads 2 --quiet --models $MODELS -o $OUT/so2.json $dir"
        -n "steadyocr --threads 2, cores not shared" "STEADYOCR_SHARE_CORES=off $SO ocr --backend cpu --threads 2 --quiet --models $MODELS -o $OUT/so2k.json $dir"
        -n "steadyocr --threads 2, spin bounded" "STEADYOCR_OMP_SPIN=bound $SO ocr --backend cpu --threads 2 --quiet --models $MODELS -o $OUT/so2b.json $dir"
        -n "steadyocr --threads 2, per-shape plans" "$SO ocr --backend cpu --threads 2 --per-shape-plans --quiet --models $MODELS -o $OUT/so2p.json $dir")
  if [ -d "$GUTEN_DIR/node_modules/@gutenye/ocr-node" ]; then
    cp "$PEERS/guten_peer.mjs" "$GUTEN_DIR/"
    cmds+=(-n "Guten OCR" "cd $GUTEN_DIR && node guten_peer.mjs $dir $OUT/guten.json")
  else
    echo "Guten OCR left out: $GUTEN_DIR/node_modules/@gutenye/ocr-node missing (npm install @gutenye/ocr-node there)" | tee -a "$OUT/summary.txt"
  fi
  if command -v tesseract >/dev/null; then
    langs=eng; tesseract --list-langs 2>/dev/null | grep -qx chi_sim && langs=chi_sim+eng  # as bench/cpu_vs_peers.sh
    cmds+=(-n "Tesseract 5 ($langs)" "/usr/bin/python3 $PEERS/tess_peer.py $dir $OUT/tess.json $langs")
  else
    echo "Tesseract left out: not installed (apt-get install tesseract-ocr tesseract-ocr-eng)" | tee -a "$OUT/summary.txt"
  fi
  for load in idle busy; do
    stop_busy
    if [ "$load" = busy ]; then
      sh -c 'while :; do :; done' &
      busy_pid=$!
    fi
    hyperfine --style basic --runs "$RUNS" --warmup 1 --export-json "$OUT/hf_${n}_$load.json" "${cmds[@]}" \
      >"$OUT/hf_${n}_$load.txt" 2>&1
    /usr/bin/python3 - "$OUT/hf_${n}_$load.json" "$n" "$load" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))["results"]
base = {x["command"]: x["mean"] for x in r}
so = min(base[k] for k in base if k.startswith("steadyocr"))
print(f"{sys.argv[2]} images, {sys.argv[3]}:")
for x in r:
    print(f"  {x['command']:<38} {x['mean']:7.2f} s ± {x['stddev']:.2f}  {int(sys.argv[2]) / x['mean']:6.2f} images/s"
          f"  (best steadyocr is {x['mean'] / so:.2f}x faster)")
PY
  done
  stop_busy
done
echo "results: $OUT/summary.txt and hf_*.json"
