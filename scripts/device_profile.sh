#!/bin/bash
# Where a GPU run's time goes, in one `device` run (bundle as for scripts/device_bench.sh, carry [".devbundle"]):
# the set once with the planner's debug lines, the set twice in one process (the second pass meets only shapes
# planned already: steady state), and a few in-flight widths. Output: $OUT/profile.txt, $OUT/profile.tgz.
set -u
SET=${SET:-synth-dev}
BE=${BE:-cuda-fp32}
OUTDIR=${OUT:-$PWD/profile-out}
mkdir -p "$OUTDIR"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
B=/tmp/bundle
F=$B/files
W=/tmp/prof
rm -rf $W && mkdir -p $W/again && cp -r "$F/$SET" "$W/again/$SET"
P=$OUTDIR/profile.txt
ocr() {  # tag args...
  local tag=$1
  shift
  timeout 120 $B/env.sh $B/bin/steadyocr --log-level debug ocr --models "$F/models" --format json -o "$W/$tag.json" "$@" \
    >"$W/$tag.out" 2>"$W/$tag.log"
  echo "== $tag ($*): exit $? $(tr '\r' '\n' <"$W/$tag.log" | grep -E '^ocr: ' | tail -1)" | tee -a "$P"
}
ocr once --backend $BE "$F/$SET"
grep -E 'planned' $W/once.log | sed -E 's/.*planned ([^ ]+) for .* in ([0-9.]+) ms/\1 \2/' |
  awk '{n[$1]++; s[$1]+=$2} END {for (k in n) printf "   plans %s: %d, %.0f ms in all\n", k, n[k], s[k]}' | tee -a "$P"
ocr twice --backend $BE "$F/$SET" "$W/again/$SET"
for c in ${CONCS:-4 8 16 64}; do STEADYOCR_WORKER_CONCURRENCY=$c ocr conc$c --backend $BE "$F/$SET"; done
ocr fp16 --backend cuda-fp16 "$F/$SET"
grep -E 'self-test|precision for' $W/fp16.log | cut -c1-300 | tee -a "$P"
ocr auto "$F/$SET"
grep -E 'WARN|ready' $W/auto.log | cut -c1-300 | head -5 | tee -a "$P"
tar czf "$OUTDIR/profile.tgz" -C /tmp prof
