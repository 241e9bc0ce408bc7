#!/bin/bash
# Several GPUs (issue 20) with what one GPU allows: the same device twice (`--gpus 0,GPU-<its UUID>`: two ladders, two
# pinned workers, the router between them) against one ladder, bench and ocr on SET; then a device that stays bad on
# GPU 1 only (a real illegal address in its worker, every call) with the results compared line for line with one GPU.
# STEPS=scale (the issue's benchmark; on nvidia-h200-x2): SET repeated to SCALE_N images (default 2000, symlinks),
# `bench --warmup 1 --repeat 1` with one GPU (--gpus 0) and with every GPU (--gpus all; on a one-GPU machine the
# same device twice) in the same call, the ratio, and `ocr` per-image results of both compared line for line.
# Summary: $OUT/summary.txt; JSON and logs beside it.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#   ../shared/data/synth-dev
# Device (repo root, carry [".devbundle"]): scripts/device_gpus.sh   (SET=synth-dev, REPEAT=2, STEPS="bench ocr fault")
set -uo pipefail
SET=${SET:-synth-dev}
REPEAT=${REPEAT:-2}
STEPS=${STEPS:-"bench ocr fault"}
SCALE_N=${SCALE_N:-2000}
OUT=${OUT:-/tmp/gpus_out}
mkdir -p "$OUT"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
F=$PWD/files
S=$OUT/summary.txt
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
echo "# device_gpus $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi -L | head -1); $(nproc) cores" | tee -a "$S"
COMMON=(--models "$F/models" --backend cuda-fp32 --require-gpu)

if [[ $STEPS == *bench* ]]; then
  for v in "one|" "pinned|--gpus 0" "two-ladders|--gpus 0,$UUID"; do
    name=${v%%|*}
    flags=${v#*|}
    # shellcheck disable=SC2086
    ./env.sh bin/steadyocr bench "$F/$SET" "${COMMON[@]}" --warmup 1 --repeat "$REPEAT" --json $flags \
      >"$OUT/bench-$name.json" 2>"$OUT/bench-$name.log"
    echo "rc $?" >>"$OUT/bench-$name.log"
    python3 - "$OUT/bench-$name.json" "$name" <<'PY' | tee -a "$S"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"bench {sys.argv[2]}: no JSON ({e})"); sys.exit()
g = r.get("gpu_memory") or {}
line = (f"bench {sys.argv[2]:12s} {r['images_per_s']:8.1f} img/s (best {r['images_per_s_best']:.1f}), "
        f"{r['images']} images, startup {r['startup_ms']:.0f} ms, failed {r['failed']}, fell_back {r['fell_back']}, "
        f"mapped_peak {g.get('end', {}).get('mapped_peak')}")
for x in r.get("gpus", []):
    line += f"; GPU {x['gpu']} {x['rung']} {x['images']} images"
print(line)
PY
  done
  grep -h "CUDA_VISIBLE_DEVICES\|GPU [01]" "$OUT"/bench-*.log | grep -v '"level":"debug"' | head -8 | tee -a "$S"
fi

compare() {  # one GPU's JSON, another's: per image, the lines (text and box) identical?
  python3 - "$1" "$2" "$3" <<'PY' | tee -a "$S"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
same = sum(1 for k in a if k in b and [(l["text"], l["box"]) for l in a[k]["lines"]] ==
           [(l["text"], l["box"]) for l in b[k]["lines"]])
gpus = {}
for k in b:
    gpus[b[k].get("gpu", "")] = gpus.get(b[k].get("gpu", ""), 0) + 1
ev = sorted({(e.get("gpu", ""), e["from"], e["to"], e["reason"]) for k in b for e in b[k]["fallbacks"]})
errs = sum(1 for k in b if "error" in b[k])
print(f"{sys.argv[3]}: {same} of {len(a)} images with identical lines to one GPU; {errs} errors; by GPU {gpus}; "
      f"events in results {ev}")
PY
}

if [[ $STEPS == *ocr* || $STEPS == *fault* ]]; then
  ./env.sh bin/steadyocr ocr "$F/$SET" "${COMMON[@]}" --format json --quiet >"$OUT/ocr-one.json" 2>"$OUT/ocr-one.log"
  echo "ocr one: rc $?" | tee -a "$S"
fi
if [[ $STEPS == *ocr* ]]; then
  ./env.sh bin/steadyocr ocr "$F/$SET" "${COMMON[@]}" --gpus "0,$UUID" --format json >"$OUT/ocr-two.json" \
    2>"$OUT/ocr-two.log"
  echo "ocr two ladders: rc $?" | tee -a "$S"
  compare "$OUT/ocr-one.json" "$OUT/ocr-two.json" "ocr two ladders"
  grep -h "^ocr:" "$OUT/ocr-two.log" | tee -a "$S"
fi
if [[ $STEPS == *fault* ]]; then
  STEADYOCR_FAULT="gpu1/illegal_address@det:1!" ./env.sh bin/steadyocr ocr "$F/$SET" "${COMMON[@]}" \
    --gpus "0,$UUID" --format json >"$OUT/ocr-fault.json" 2>"$OUT/ocr-fault.log"
  echo "ocr GPU 1 bad: rc $?" | tee -a "$S"
  compare "$OUT/ocr-one.json" "$OUT/ocr-fault.json" "ocr GPU 1 bad"
  grep -h "^ocr:" "$OUT/ocr-fault.log" | tee -a "$S"
  grep -c "illegal\|DEVICE_FAULT" "$OUT/ocr-fault.log" | sed 's/^/fault log lines naming the fault: /' | tee -a "$S"
fi

if [[ $STEPS == *scale* ]]; then
  big=/tmp/gpus_scale
  rm -rf "$big" && mkdir -p "$big"
  mapfile -t imgs < <(find "$F/$SET" -maxdepth 1 -type f \( -name '*.jpg' -o -name '*.png' \) | sort)
  for ((i = 0; i < SCALE_N; ++i)); do
    src=${imgs[i % ${#imgs[@]}]}
    ln -s "$src" "$big/$(printf '%05d' "$i")_$(basename "$src")"
  done
  count=$(nvidia-smi -L | wc -l)
  many="all"
  [ "$count" -lt 2 ] && many="0,$UUID"  # one GPU here: the same device twice
  echo "scale: $SCALE_N images of $SET; $count GPU(s); many = --gpus $many" | tee -a "$S"
  for v in "one|0" "many|$many"; do
    name=${v%%|*}
    ./env.sh bin/steadyocr bench "$big" "${COMMON[@]}" --gpus "${v#*|}" --warmup 1 --repeat 1 --json \
      >"$OUT/scale-$name.json" 2>"$OUT/scale-$name.log"
    ./env.sh bin/steadyocr ocr "$big" "${COMMON[@]}" --gpus "${v#*|}" --format json \
      >"$OUT/scale-ocr-$name.json" 2>"$OUT/scale-ocr-$name.log"
  done
  python3 - "$OUT" <<'PY' | tee -a "$S"
import json, sys
o = sys.argv[1]
r = {n: json.load(open(f"{o}/scale-{n}.json")) for n in ("one", "many")}
for n, x in r.items():
    per = "; ".join(f"GPU {g['gpu']} {g['images']}" for g in x.get("gpus", []))
    print(f"scale bench {n:4s}: {x['images_per_s']:8.1f} img/s, {x['images']} images, failed {x['failed']}, "
          f"fell_back {x['fell_back']} {per}")
print(f"scale ratio many / one: {r['many']['images_per_s'] / r['one']['images_per_s']:.2f}x")
PY
  compare "$OUT/scale-ocr-one.json" "$OUT/scale-ocr-many.json" "scale ocr many vs one"
  grep -h "^ocr:" "$OUT"/scale-ocr-*.log | tee -a "$S"
fi
