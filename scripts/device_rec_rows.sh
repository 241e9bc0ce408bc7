#!/bin/bash
# Recognition rows padded or not (issue 13, docs/BENCHMARKS.md "Recognition rows without padding"): cuda-fp16 bench
# with 16 images in flight on synth-dev and sroie-dev four times over, one image at a time, and cold `ocr` processes,
# for four variants in alternating order: base6 (files/base_cuda13.so, rows padded to 6), new6 / new0 / new2 (the
# bundle's plugin, rows padded to 6, not padded, padded to 2); then whether the texts of the cold runs are identical.
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#   ../shared/data/synth-dev ../shared/data/sroie-dev /path/to/base_cuda13.so
# Device (repo root, carry [".devbundle"]): scripts/device_rec_rows.sh
# $(variant v) is a plugin and its flags, split on purpose:
# shellcheck disable=SC2046
set -u
OUT=${OUT:-/tmp/rows_out}; W=/tmp/rows
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_rec_rows "$W" "$OUT"
SO="$B/env.sh $B/bin/steadyocr"
NEW=$B/bin/libsteadyocr_cuda13.so; BASE=$F/base_cuda13.so
mk4() { mkdir -p "$W/$1x4"; for i in 1 2 3 4; do for f in "$F/$1"/*.jpg "$F/$1"/*.png; do [ -e "$f" ] && ln -sf "$f" "$W/$1x4/$i.$(basename "$f")"; done; done; }
mk4 synth-dev; mk4 sroie-dev
one() { local tag=$1 set=$2 conc=$3 plug=$4; shift 4
  env STEADYOCR_CUDA_PLUGIN=$plug STEADYOCR_WORKER_CONCURRENCY=$conc timeout -k 5 150 $SO bench "$set" --models "$F/models" --backend cuda-fp16 --require-gpu --warmup 1 --repeat ${REPEAT:-3} --json "$@" >"$W/$tag.json" 2>"$W/$tag.log"
  python3 - "$W/$tag.json" "$tag" <<'PY' | tee -a "$S"
import json, sys
try: r = json.load(open(sys.argv[1]))
except Exception as e: print(f"{sys.argv[2]}: no result ({e})"); sys.exit()
st = r["stage_ms"]["total"]; t = r.get("time_table_ms", {}).get("rec", {})
print(f"{sys.argv[2]}: {r['images_per_s']:.1f} img/s (best {r['images_per_s_best']:.1f}) p50 {st['median']:.1f} p99 {st['p99']:.1f} first pass +{r.get('new_shape_ms_per_image',0):.2f} ms/img startup {r.get('startup_ms',0):.0f} ms | rec compute {t.get('compute',0):.2f} plan {t.get('plan',0):.2f}")
PY
}
variant() {  # name -> plugin and flags
  case $1 in base6) echo "$BASE --rec-pad-rows 6" ;; new6) echo "$NEW --rec-pad-rows 6" ;; new0) echo "$NEW --rec-pad-rows 0" ;; new2) echo "$NEW --rec-pad-rows 2" ;; esac
}
for round in 1 2; do
  vs="base6 new6 new0 new2"; [ $round = 2 ] && vs="new2 new0 new6 base6"
  for set in synth-devx4 sroie-devx4; do for v in $vs; do one "$round.$set.$v" "$W/$set" 16 $(variant $v); done; done
done
for v in new6 new0 new6 new0; do one "c1.synth.$v" "$F/synth-dev" 1 $(variant $v); one "c1.sroie.$v" "$F/sroie-dev" 1 $(variant $v); done
for round in 1 2; do for v in base6 new6 new0; do for set in synth-dev sroie-dev; do
  read plug flags <<<"$(variant $v)"
  s0=$(date +%s.%N)
  STEADYOCR_CUDA_PLUGIN=$plug timeout 120 $SO ocr "$F/$set" --models "$F/models" --backend cuda-fp16 --require-gpu $flags --format json >"$W/ocr.$set.$v.json" 2>"$W/ocr.$set.$v.log"
  echo "cold ocr $round $set $v: $(python3 -c "print(round($(date +%s.%N)-$s0,2))") s; $(grep -E '^ocr:' "$W/ocr.$set.$v.log" | tail -1); warnings $(grep -c WARN "$W/ocr.$set.$v.log")" | tee -a "$S"
done; done; done
for set in synth-dev sroie-dev; do for pair in "base6 new6" "new6 new0" "new6 new2"; do read a b <<<"$pair"; [ -e "$W/ocr.$set.$b.json" ] || continue
python3 - "$W/ocr.$set.$a.json" "$W/ocr.$set.$b.json" "$set $a/$b" <<'PY' | tee -a "$S"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
n = same = 0; diffs = []
for k, v in a.items():
    if not isinstance(v, dict) or "lines" not in v: continue
    ta = [l["text"] for l in v["lines"]]; tb = [l["text"] for l in b[k]["lines"]]
    n += len(ta)
    for x, y in zip(ta, tb):
        same += x == y
        if x != y and len(diffs) < 3: diffs.append((x, y))
print(f"{sys.argv[3]}: lines {n}, identical {same} {diffs}")
PY
done; done
tar czf "$OUT/rows.tgz" --exclude="*x4" -C /tmp rows
