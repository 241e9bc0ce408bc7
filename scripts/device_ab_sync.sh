#!/bin/bash
# How runs wait for the GPU, side by side on the GPU machine (issue 13): the binaries before this change ("base": the
# stream synchronised by spinning, rec inputs made one group at a time) against this build with each
# STEADYOCR_CUDA_SYNC mode (auto, spin, block) and memN (auto, --gpu-mem N), in alternating rounds, with the images in
# flight the worker picks and one at a time; the host CPU time each bench used (user + system, from the kernel's
# rusage of the child), nvidia-smi's utilisation over the run, the time table's rec prep and sync; `ocr` lines of base and new compared; the PyTorch eager peer in the same run.
# Summary: $OUT/summary.txt; JSON and logs: $OUT/ab_sync.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/peers ../shared/data/golden \
#   ../shared/tools/ocr_eval.py BASE_DIR   (BASE_DIR: the base steadyocr and its libsteadyocr_cuda13.so)
# Device (repo root, carry [".devbundle"]): scripts/device_ab_sync.sh
#   (BASE=name of BASE_DIR, STEPS="tests ab ocr peer scale conc", SETS, BACKENDS, VARIANTS="base auto spin block", ROUNDS=2,
#    CONCS="default 1", REPEAT=3, ROWS="6 24 48 96", PROFILE_CHARS=400, CONC_LIST="16 24 32 48",
#    PREV=name of a folder with another libsteadyocr_cuda13.so (variant prevdw: this build's host with that plugin),
#    OCR_VARIANTS="base auto" (the first compared against the second), SCALE_VARIANTS="auto")
# "scale": the recogniser alone (run-model, 3x48x320 rows of noise) at several rows per call, with the per-op device
# profile (STEADYOCR_CUDA_PROFILE_OPS): how a call's device time grows with its rows. "conc": bench with more images
# in flight than the default.
set -u
BASE=${BASE:-base_bins}
PREV=${PREV:-plugin_prev}
OCR_VARIANTS=${OCR_VARIANTS:-base auto}
SCALE_VARIANTS=${SCALE_VARIANTS:-auto}
STEPS=${STEPS:-tests ab ocr peer scale}
ROWS=${ROWS:-6 24 48 96}
SETS=${SETS:-synth-dev sroie-dev}
BACKENDS=${BACKENDS:-cuda-fp32 cuda-fp16}
VARIANTS=${VARIANTS:-base auto spin block}
ROUNDS=${ROUNDS:-2}
CONCS=${CONCS:-default 1}
REPEAT=${REPEAT:-3}
OUT=${OUT:-/tmp/ab_sync_out}
W=/tmp/ab_sync
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_ab_sync "$W" "$OUT"

# The command line of a variant: base runs its own binary and plugin; the others this build with a sync mode.
variant_cmd() {
  case "$1" in
    base) echo "env STEADYOCR_CUDA_PLUGIN=$F/$BASE/libsteadyocr_cuda13.so $B/env.sh $F/$BASE/steadyocr" ;;
    mem*) echo "env STEADYOCR_CUDA_SYNC=auto $B/env.sh $B/bin/steadyocr" ;;
    prevdw) echo "env STEADYOCR_CUDA_PLUGIN=$F/$PREV/libsteadyocr_cuda13.so STEADYOCR_CUDA_SYNC=auto $B/env.sh $B/bin/steadyocr" ;;
    *) echo "env STEADYOCR_CUDA_SYNC=$1 $B/env.sh $B/bin/steadyocr" ;;
  esac
}
# memN: auto with a pool budget of N MiB (is the default budget what makes runs wait for arenas?).
variant_extra() {
  case "$1" in
    mem*) echo "--gpu-mem ${1#mem}" ;;
  esac
}

if want tests; then
  device_cuda_tests
fi

if want ab; then
  for round in $(seq 1 "$ROUNDS"); do
    order=$VARIANTS
    [ $((round % 2)) = 0 ] && order=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
    for set in $SETS; do
      for be in $BACKENDS; do
        for c in $CONCS; do
          for v in $order; do
            tag=r${round}.$set.$be.c$c.$v
            conc=""
            [ "$c" != default ] && conc="STEADYOCR_WORKER_CONCURRENCY=$c"
            nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 >"$W/$tag.smi" 2>/dev/null &
            smi=$!
            cpu=$(env $conc timeout 300 python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1] + ".json", "w"), stderr=open(sys.argv[1] + ".log", "w"))
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{u.ru_utime + u.ru_stime:.2f} {rc}")' "$W/$tag" $(variant_cmd "$v") --log-level debug bench "$F/$set" --models "$F/models" \
              --backend "$be" --require-gpu --warmup 1 --repeat "$REPEAT" --json $(variant_extra "$v"))
            kill $smi 2>/dev/null
            wait $smi 2>/dev/null
            python3 - "$W/$tag.json" "$tag" "$cpu" "$W/$tag.log" "$W/$tag.smi" <<'PY' | tee -a "$S"
import json, re, sys
path, tag, cpu, log, smi = sys.argv[1:6]
util = [int(l) for l in open(smi) if l.strip().isdigit()]
busy = [u for u in util if u > 0]
cpu_s, rc = cpu.split()
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{tag}: exit {rc}, no result ({e})"); sys.exit()
st = r["stage_ms"]["total"]
t = r.get("time_table_ms", {})
imgs = r["images"] * (r["passes"] + r["warmup"])
rec, det = t.get("rec", {}), t.get("det", {})
waits = {m: 0 for m in ("spin", "block")}
for l in open(log):
    m = re.search(r'steadyocr_cuda_stream_waits_total\{mode="(\w+)"\} ([0-9.e+]+)', l)
    if m: waits[m.group(1)] = float(m.group(2))
print(f"{tag}: {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}), p50 {st['median']:.1f} "
      f"p99 {st['p99']:.1f} ms, host CPU {cpu_s} s = {1000 * float(cpu_s) / imgs:.1f} ms per image, "
      f"rec prep {rec.get('prep', 0):.2f} sync {rec.get('sync', 0):.2f} acquire {rec.get('acquire', 0):.2f} "
      f"compute {rec.get('compute', 0):.2f}, det prep {det.get('prep', 0):.2f} sync {det.get('sync', 0):.2f}, "
      f"GPU util {sum(busy) / max(len(busy), 1):.0f}% ({len(busy)}/{len(util)} samples busy), "
      f"waits spin/block {waits['spin']:.0f}/{waits['block']:.0f}, failed {r['failed']}")
PY
          done
        done
      done
    done
  done
fi

if want ocr; then
  for set in $SETS; do
    for be in $BACKENDS; do
      for v in $OCR_VARIANTS; do
        $(variant_cmd "$v") ocr "$F/$set" --models "$F/models" --backend "$be" --require-gpu --format json \
          -o "$W/ocr.$set.$be.$v.json" >/dev/null 2>"$W/ocr.$set.$be.$v.log"
      done
      read -r va vb <<<"$OCR_VARIANTS"
      python3 "$REPO/scripts/compare_ocr_lines.py" "$W/ocr.$set.$be.$va.json" "$W/ocr.$set.$be.$vb.json" \
        "$set $be" "$va against $vb" | tee -a "$S"
      device_ocr_eval "$set" "$W/ocr.$set.$be.$vb.json" "$set $be $vb"
      echo | tee -a "$S"
    done
  done
fi

if want peer; then
  for set in $SETS; do device_torch_peer "$set"; done
fi
if want scale; then
  for be in $BACKENDS; do
    for v in $SCALE_VARIANTS; do
    for rows in $ROWS; do
      python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(1).uniform(-1, 1, (int(sys.argv[2]), 3, 48, 320)).astype(np.float32))" \
        "$W/rec_$rows.npy" "$rows"
      STEADYOCR_CUDA_PROFILE_OPS=20 timeout 120 $(variant_cmd "$v") --log-level info run-model \
        "$F/models/ch_PP-OCRv4_rec_infer.onnx" "$W/rec_$rows.npy" "$W/rec_out.$v.npy" --backend "$be" --repeat 41 \
        >"$W/scale.$be.$v.$rows.log" 2>&1
      echo "== scale $be $v rows $rows: $(grep -E 'run [0-9.]+ ms' "$W/scale.$be.$v.$rows.log" | sed -E 's/.*(run [0-9.]+ ms).*/\1/')" \
        "(host, with the full probabilities' download); $(grep -E 'op profile' "$W/scale.$be.$v.$rows.log" | tail -1 | cut -c1-${PROFILE_CHARS:-400})" |
        tee -a "$S"
    done
    done
    # The outputs of the variants, bit for bit (the same plan on the same input).
    set -- $SCALE_VARIANTS
    if [ $# -ge 2 ]; then
      for rows in $ROWS; do :; done
      cmp -s "$W/rec_out.$1.npy" "$W/rec_out.$2.npy" && same=identical || same=DIFFERENT
      echo "   scale $be rows $rows: the outputs of $1 and $2 are $same" | tee -a "$S"
    fi
  done
fi
if want conc; then
  # Images in flight per worker (STEADYOCR_WORKER_CONCURRENCY; the default is one per core): with waits that sleep,
  # do more than the cores keep the device busier?
  for set in $SETS; do
    for be in $BACKENDS; do
      for c in ${CONC_LIST:-16 24 32 48}; do
        tag=conc.$set.$be.$c
        STEADYOCR_WORKER_CONCURRENCY=$c timeout 300 $B/env.sh $B/bin/steadyocr bench "$F/$set" --models "$F/models" \
          --backend "$be" --require-gpu --warmup 1 --repeat "$REPEAT" --json >"$W/$tag.json" 2>"$W/$tag.log"
        python3 - "$W/$tag.json" "$tag" <<'PY' | tee -a "$S"
import json, sys
path, tag = sys.argv[1:3]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{tag}: no result ({e})"); sys.exit()
st, t = r["stage_ms"]["total"], r.get("time_table_ms", {}).get("rec", {})
print(f"{tag}: {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}), p50 {st['median']:.1f} "
      f"p99 {st['p99']:.1f} ms, rec acquire {t.get('acquire', 0):.2f} compute {t.get('compute', 0):.2f}, "
      f"mapped peak {(r.get('gpu_memory') or {}).get('end', {}).get('mapped_peak')}, failed {r['failed']}")
PY
      done
    done
  done
fi
tar czf "$OUT/ab_sync.tgz" -C /tmp ab_sync
