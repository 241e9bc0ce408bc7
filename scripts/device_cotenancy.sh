#!/bin/bash
# The cpu backend beside busy processes on the GPU machine's host (16 cores), in one `device` run: `steadyocr bench
# --backend cpu` on synth-dev idle and with BUSY shell loops running (default: half the cores), with parallel regions
# sized to the free cores (the default: core/cpu_share.h) and without (STEADYOCR_SHARE_CORES=off). Also checks what `--backend auto`
# serves from and the doctor's GPU-sharing checks. Bundle: scripts/slim_bundle.py .devbundle build/steadyocr
# build/libsteadyocr_cuda13.so -- models ../shared/data/synth-dev examples/sample_doc.jpg
set -uo pipefail
BUNDLE=${1:-.devbundle/bundle.tgz}
IMAGES=${IMAGES:-20}
BUSY=${BUSY:-$(($(nproc) / 2))}
rm -rf /tmp/bundle && tar xzf "$BUNDLE" -C /tmp || exit 1
B=/tmp/bundle
F=$B/files
SO="$B/env.sh $B/bin/steadyocr"
D=/tmp/cot_images && rm -rf $D && mkdir -p $D
ls "$F/synth-dev"/*.jpg | sort | head -n "$IMAGES" | xargs -I{} cp {} $D/
echo "# $(date -u +%H:%M:%SZ) $(nproc) cores; $IMAGES synth-dev images; busy loops: $BUSY"
$SO ocr "$F/sample_doc.jpg" --models "$F/models" --format json 2>/tmp/auto.log | python3 -c \
  "import json,sys; d=json.load(sys.stdin); r=next(iter(d.values())); print('auto serves from', r['rung'], r['backend'], 'fallbacks', len(r['fallbacks']))"
$SO doctor --level 1 --json 2>/dev/null | python3 -c "
import json,sys
r=json.load(sys.stdin)
for l in r['layers']:
    for c in l['checks']:
        if c['check'] in ('mig','mps','nvml'): print('doctor', c['check'], c['status'], c.get('code') or '-', c['summary'][:120])"
bench() {  # label, env, threads
  env $2 $B/env.sh $B/bin/steadyocr bench $D --models "$F/models" --backend cpu --threads "$3" --warmup 1 --repeat 2 \
    --json 2>/dev/null | python3 -c "import json,sys; b=json.load(sys.stdin); print(f'{sys.argv[1]:<44} {b[\"images_per_s\"]:6.2f} images/s')" "$1"
}
for load in idle busy; do
  pids=()
  if [ $load = busy ]; then
    for ((i = 0; i < BUSY; i++)); do sh -c 'while :; do :; done' & pids+=($!); done
  fi
  bench "$load: --threads $(nproc), cores shared" "STEADYOCR_X=1" "$(nproc)"
  bench "$load: --threads $(nproc), cores not shared" "STEADYOCR_SHARE_CORES=off" "$(nproc)"
  bench "$load: --threads $(($(nproc) / 2)), cores shared" "STEADYOCR_X=1" $(($(nproc) / 2))
  bench "$load: --threads $(($(nproc) / 2)), cores not shared" "STEADYOCR_SHARE_CORES=off" $(($(nproc) / 2))
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}"
done
