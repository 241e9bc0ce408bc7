#!/bin/bash
# What a new input shape costs the host, per backend, in one `device` run (bundle as for scripts/device_bench.sh:
# steadyocr, the CUDA plugin, models and the sets; carry [".devbundle"]). For each set and backend: `bench` with the
# planner's debug lines, then the plans' count and time per model, and the worker's planning totals (passes, cuDNN
# queries, plan build, fusion, placement). Output: $OUT/plan_cost.txt and the raw logs in $OUT/plan_cost.tgz.
set -u
SETS=${SETS:-synth-dev sroie-dev}
BACKENDS=${BACKENDS:-cuda-fp32 cpu}
OUTDIR=${OUT:-$PWD/plan-cost-out}
mkdir -p "$OUTDIR"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
B=/tmp/bundle
F=$B/files
W=/tmp/plancost
rm -rf $W && mkdir -p $W
P=$OUTDIR/plan_cost.txt
for set in $SETS; do
  for be in $BACKENDS; do
    tag=$set.$be
    req=""
    case $be in cuda*) req=--require-gpu ;; esac
    timeout 300 $B/env.sh $B/bin/steadyocr --log-level debug bench "$F/$set" --models "$F/models" --backend $be $req \
      --warmup 1 --repeat ${REPEAT:-2} --json >"$W/$tag.json" 2>"$W/$tag.log"
    rc=$?
    python3 - "$W/$tag.json" "$tag" "$rc" <<'PY' | tee -a "$P"
import json, sys
path, tag, rc = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"== {tag}: exit {rc}, no JSON ({e})")
    sys.exit(0)
print(f"== {tag}: exit {rc}, {r['images_per_s']} images/s, first pass {r['first_pass_ms']} ms, median pass "
      f"{r['pass_ms_median']} ms, new shape {r['new_shape_ms_per_image']} ms/image, rung {r['rung']}")
PY
    # "planned det for [1, 3, 960, 736] on cuda-fp32 in 12.3 ms (passes 1.20, prepare 11.10)"
    grep -E 'planned [^ ]+ for .*passes' "$W/$tag.log" |
      sed -E 's/.*planned ([^ ]+) for .* in ([0-9.]+) ms \(passes ([0-9.]+), prepare ([0-9.]+)\).*/\1 \2 \3 \4/' |
      sort -k1,1 -k2,2n | awk '{v[$1,++n[$1]]=$2; s[$1]+=$2; ps[$1]+=$3; pr[$1]+=$4}
        END {for (k in n) printf "   plans %s: %d, %.1f ms in all (passes %.1f, prepare %.1f), median %.2f ms, max %.2f ms\n",
             k, n[k], s[k], ps[k], pr[k], v[k,int((n[k]+1)/2)], v[k,n[k]]}' | tee -a "$P"
    grep -E 'generic passes ready|pre-optimised graph' "$W/$tag.log" | sed -E 's/^.*(runtime)/   \1/' | cut -c1-200 | tee -a "$P"
    grep -E '^  steadyocr_(model|cuda)_' "$W/$tag.log" |
      sort | uniq | sed 's/^/ /' | tee -a "$P"
  done
done
tar czf "$OUTDIR/plan_cost.tgz" -C /tmp plancost
