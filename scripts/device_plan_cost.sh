#!/bin/bash
# What a new input shape costs the host, in one `device` run, for this build and optionally a base build side by side
# (issue 13). For each set, backend and variant: `bench` with the planner's debug lines, then the plans' count and
# time per model (passes / prepare) and the worker's planning totals (cuDNN queries, plan build, weights, fusion,
# placement, graph captures); with PARTS including "ocr", `ocr` of each set with each variant, compared line by line.
# Output: $OUT/plan_cost.txt and the raw logs in $OUT/plan_cost.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#   ../shared/data/synth-dev ../shared/data/sroie-dev scripts/compare_ocr_lines.py [BASE_DIR]
#   (BASE_DIR: a folder holding a base build's steadyocr and libsteadyocr_cuda13.so; its name is BASE below)
# Device (repo root, carry [".devbundle"]): [BASE=base VARIANTS="base new"] scripts/device_plan_cost.sh
set -u
SETS=${SETS:-synth-dev sroie-dev}
BACKENDS=${BACKENDS:-cuda-fp32}
VARIANTS=${VARIANTS:-new}
PARTS=${PARTS:-bench ocr}
BASE=${BASE:-base}
OUTDIR=${OUT:-$PWD/plan-cost-out}
mkdir -p "$OUTDIR"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
B=/tmp/bundle
F=$B/files
W=/tmp/plancost
rm -rf $W && mkdir -p $W
P=$OUTDIR/plan_cost.txt
echo "# device_plan_cost $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi --query-gpu=name,driver_version \
  --format=csv,noheader 2>/dev/null); $(nproc) cores" | tee -a "$P"
binary() {  # variant -> the command line prefix
  case $1 in
    base) echo "$B/env.sh $F/$BASE/steadyocr" ;;
    *) echo "$B/env.sh $B/bin/steadyocr" ;;
  esac
}
plugin() {  # variant backend -> flags
  case $2 in cuda*) ;; *) return ;; esac
  case $1 in
    base) echo "--require-gpu --cuda-plugin $F/$BASE/libsteadyocr_cuda13.so" ;;
    *) echo "--require-gpu" ;;
  esac
}
want() { [[ " $PARTS " == *" $1 "* ]]; }
for set in $SETS; do
  for be in $BACKENDS; do
    for v in $VARIANTS; do
      tag=$set.$be.$v
      if want bench; then
        timeout 300 $(binary $v) --log-level debug bench "$F/$set" --models "$F/models" --backend $be $(plugin $v $be) \
          --warmup 1 --repeat ${REPEAT:-3} --json >"$W/$tag.json" 2>"$W/$tag.log"
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
      f"{r['pass_ms_median']} ms, new shape {r['new_shape_ms_per_image']} ms/image, startup {r['startup_ms']} ms, "
      f"rung {r['rung']}")
PY
        # "planned det for [1, 3, 960, 736] on cuda-fp32 in 12.3 ms (passes 1.20, prepare 11.10)" (this build's line)
        grep -E 'planned [^ ]+ for .*passes' "$W/$tag.log" |
          sed -E 's/.*planned ([^ ]+) for .* in ([0-9.]+) ms \(passes ([0-9.]+), prepare ([0-9.]+)\).*/\1 \2 \3 \4/' |
          sort -k1,1 -k2,2n | awk '{v[$1,++n[$1]]=$2; s[$1]+=$2; ps[$1]+=$3; pr[$1]+=$4}
            END {for (k in n) printf "   plans %s: %d, %.1f ms in all (passes %.1f, prepare %.1f), median %.2f ms, max %.2f ms\n",
                 k, n[k], s[k], ps[k], pr[k], v[k,int((n[k]+1)/2)], v[k,n[k]]}' | tee -a "$P"
        grep -E 'generic passes ready|pre-optimised graph' "$W/$tag.log" | sed -E 's/^.*(runtime)/   \1/' | cut -c1-200 |
          tee -a "$P"
        grep -E '^  steadyocr_(model|cuda)_' "$W/$tag.log" | grep -vE 'stage_ms|runs_total|arena' | sort | uniq |
          sed 's/^/ /' | tee -a "$P"
      fi
      if want ocr; then
        timeout 300 $(binary $v) ocr "$F/$set" --models "$F/models" --backend $be $(plugin $v $be) --format json \
          -o "$W/$tag.ocr.json" >/dev/null 2>"$W/$tag.ocr.log"
        echo "== ocr $tag: exit $? $(tr '\r' '\n' <"$W/$tag.ocr.log" | grep -E '^ocr: ' | tail -1)" | tee -a "$P"
      fi
    done
    if want ocr; then
      set -- $VARIANTS
      if [ $# -ge 2 ]; then
        python3 "$F/compare_ocr_lines.py" "$W/$set.$be.$1.ocr.json" "$W/$set.$be.$2.ocr.json" "$set" "$1 vs $2" |
          tee -a "$P"
      fi
    fi
  done
done
tar czf "$OUTDIR/plan_cost.tgz" -C /tmp plancost
