#!/bin/bash
# Issue 13 on the GPU machine in one `device` run: the CUDA tests; per set and backend a cold `ocr` (every shape
# new) scored by ocr_eval.py, and `bench` (first pass beside the steady ones, what each new shape's plan cost, the
# planner's totals per phase), the same one image at a time; the PyTorch eager peer on the same images in the same
# run. Output: $OUT/summary.txt and $OUT/shapes.tgz (every JSON and log).
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/peers ../shared/tools/ocr_eval.py \
#   ../shared/data/golden
# Device (repo root, carry [".devbundle"]): scripts/device_shapes.sh
#   STEPS="tests bench one ocr peer" (default all), SETS, BACKENDS="cuda-fp32 cuda-fp16", REPEAT=3, EXTRA (flags).
set -u
STEPS=${STEPS:-tests bench one ocr peer}
SETS=${SETS:-synth-dev sroie-dev}
BACKENDS=${BACKENDS:-cuda-fp32 cuda-fp16}
REPEAT=${REPEAT:-3}
EXTRA=${EXTRA:-}
OUTDIR=${OUT:-/tmp/shapes_out}
W=/tmp/shapes
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_shapes "$W" "$OUTDIR" "EXTRA='$EXTRA'"

if want tests; then
  device_cuda_tests
fi

bench_line() {  # json tag
  python3 - "$1" "$2" <<'PY' | tee -a "$S"
import json, sys
path, tag = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"== bench {tag}: no JSON ({e})"); sys.exit()
st = r["stage_ms"]["total"]
g = (r.get("gpu_memory") or {}).get("end", {})
print(f"== bench {tag}: {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}), first pass "
      f"{r['first_pass_ms']:.0f} ms, median pass {r['pass_ms_median']:.0f} ms, new shape "
      f"{r['new_shape_ms_per_image']:.2f} ms/image, per image p50 {st['median']:.1f} p99 {st['p99']:.1f} ms, "
      f"startup {r['startup_ms']:.0f} ms, rung {r['rung']}, failed {r['failed']}, mapped peak {g.get('mapped_peak')}")
t = r.get("time_table_ms", {})
for m in ("det", "rec"):
    if m in t:
        print(f"   {m}: " + ", ".join(f"{k} {v:.2f}" for k, v in t[m].items()))
PY
}

plan_lines() {  # log: each new shape's plan (passes / prepare) per model, and the planner's totals
  grep -E 'planned [^ ]+ for .*passes' "$1" |
    sed -E 's/.*planned ([^ ]+) for .* in ([0-9.]+) ms \(passes ([0-9.]+), prepare ([0-9.]+)\).*/\1 \2 \3 \4/' |
    sort -k1,1 -k2,2n | awk '{v[$1,++n[$1]]=$2; s[$1]+=$2; ps[$1]+=$3; pr[$1]+=$4}
      END {for (k in n) printf "   plans %s: %d, %.1f ms in all (passes %.1f, prepare %.1f), median %.2f ms, max %.2f ms\n",
           k, n[k], s[k], ps[k], pr[k], v[k,int((n[k]+1)/2)], v[k,n[k]]}' | tee -a "$S"
  grep -E '^  steadyocr_cuda_(prepare|algo|graph|cudnn_lease|cudnn_handle_waits|precision_calib)' "$1" | sort | uniq | sed 's/^/ /' | tee -a "$S"
}

for set in $SETS; do
  for be in $BACKENDS; do
    tag=$set.$be
    if want ocr; then
      start=$(date +%s.%N)
      timeout 300 $B/env.sh $B/bin/steadyocr ocr "$F/$set" --models "$F/models" --backend $be --require-gpu $EXTRA \
        --format json -o "$W/$tag.ocr.json" >/dev/null 2>"$W/$tag.ocr.log"
      rc=$?
      end=$(date +%s.%N)
      echo "== ocr $tag (cold process): exit $rc, wall $(python3 -c "print(f'{$end - $start:.2f}')") s;" \
        "$(tr '\r' '\n' <"$W/$tag.ocr.log" | grep -E '^ocr: ' | tail -1)" | tee -a "$S"
      flags=""
      [ "$set" = sroie-dev ] && flags=--ignore-case
      python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$W/$tag.ocr.json" $flags 2>&1 | tail -6 | sed 's/^/   /' |
        tee -a "$S"
    fi
    if want bench; then
      timeout 300 $B/env.sh $B/bin/steadyocr --log-level debug bench "$F/$set" --models "$F/models" --backend $be \
        --require-gpu $EXTRA --warmup 1 --repeat $REPEAT --json >"$W/$tag.bench.json" 2>"$W/$tag.bench.log"
      bench_line "$W/$tag.bench.json" "$tag"
      plan_lines "$W/$tag.bench.log"
    fi
    if want one; then
      STEADYOCR_WORKER_CONCURRENCY=1 timeout 300 $B/env.sh $B/bin/steadyocr bench "$F/$set" --models "$F/models" \
        --backend $be --require-gpu $EXTRA --warmup 1 --repeat $REPEAT --json >"$W/$tag.one.json" 2>"$W/$tag.one.log"
      bench_line "$W/$tag.one.json" "$tag, one image at a time"
    fi
  done
  if want peer; then
    start=$(date +%s.%N)
    timeout 300 python3 "$F/peers/ref_ppocr.py" "$F/models" "$F/$set" "$W/peer_torch_$set.json" --runner torch \
      --repeat 1 >"$W/peer_torch_$set.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    echo "== peer PyTorch eager $set: exit $rc, wall $(python3 -c "print(f'{$end - $start:.2f}')") s;" \
      "$(tail -1 "$W/peer_torch_$set.log")" | tee -a "$S"
  fi
done
tar czf "$OUTDIR/shapes.tgz" -C /tmp shapes
