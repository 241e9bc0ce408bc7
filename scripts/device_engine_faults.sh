#!/bin/bash
# Issue 7 on the GPU machine: real CUDA faults injected into `steadyocr ocr` over a directory, each run compared
# with a clean run of the same images (texts and boxes must be identical; timings differ). One `device` run:
#   scripts/device_engine_faults.sh [SET]     (bundle as for scripts/device_bench.sh, carry [".devbundle"])
# Results: $OUT/engine_faults.txt (summary lines, ladder events, comparisons) and $OUT/engine_faults.tgz (JSON, logs).
set -u
SET=${1:-synth-dev}
OUTDIR=${OUT:-$PWD/engine-faults-out}
mkdir -p "$OUTDIR"
W=/tmp/ef
rm -rf "$W" && mkdir -p "$W"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
B=/tmp/bundle
F=$B/files
S=$OUTDIR/engine_faults.txt
: >"$S"
run() {  # tag fault extra-args...
  local tag=$1 fault=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  STEADYOCR_FAULT="$fault" timeout 300 $B/env.sh $B/bin/steadyocr --log-level info ocr "$F/$SET" --models "$F/models" \
    --format json -o "$W/$tag.json" "$@" >"$W/$tag.out" 2>"$W/$tag.log"
  local rc=$?
  t1=$(date +%s.%N)
  {
    echo "== $tag: STEADYOCR_FAULT='$fault' $* -> exit $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
    tr '\r' '\n' <"$W/$tag.log" | grep -E '^ocr: |WARN|worker|fault|->' | head -25
  } | tee -a "$S"
}
compare() {  # tag
  python3 - "$W/clean.json" "$W/$1.json" "$1" <<'PY' | tee -a "$S"
import json, sys
a, b, tag = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
lines = lambda r: [(l["text"], [[round(p, 1) for p in q] for q in l["box"]]) for l in r.get("lines", [])]
same = sum(1 for k in a if k in b and lines(a[k]) == lines(b[k]))
backends = {}
for k, v in b.items():
    r = v.get("rung", v.get("backend"))
    backends[r] = backends.get(r, 0) + 1
fb = sum(1 for v in b.values() if v.get("fallbacks"))
print(f"   {tag}: {len(b)}/{len(a)} images, {same} identical to the clean run; backends {backends}; "
      f"{fb} results carry fallback events")
ex = next((v["fallbacks"] for v in b.values() if v.get("fallbacks")), None)
if ex: print("   example fallbacks:", json.dumps(ex, ensure_ascii=False)[:400])
PY
}
run clean ""
run illegal_once 'illegal_address@det:5'
compare illegal_once
run illegal_persistent 'illegal_address@det:2!'
compare illegal_persistent
run hang 'hang@rec:3' --watchdog 10
compare hang
run oom 'oom@rec:2'
compare oom
export CUDA_VISIBLE_DEVICES=
run hidden_device ""
compare hidden_device
run hidden_device_require_gpu "" --require-gpu
unset CUDA_VISIBLE_DEVICES
tar czf "$OUTDIR/engine_faults.tgz" -C /tmp ef
