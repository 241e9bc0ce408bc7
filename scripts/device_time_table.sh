#!/bin/bash
# Where an image's time goes on the GPU machine (issue 13): `bench` with its time table (time_table_ms: prep, waits,
# planning, staging, the device's upload/compute/download events, sync, finish, per model stage) on synth-dev and
# sroie-dev, with the default runs in flight and one image at a time (STEADYOCR_WORKER_CONCURRENCY=1, the p50/p99
# latency), and the GPU's utilisation sampled by nvidia-smi over each run. Summary: $OUT/summary.txt; JSON and logs:
# $OUT/time_table.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#   ../shared/data/synth-dev ../shared/data/sroie-dev
# Device (repo root, carry [".devbundle"]): scripts/device_time_table.sh   (SETS, CONCS="default 1", REPEAT=3,
#   BACKEND=cuda-fp32, EXTRA="flags", TAG=name)
set -uo pipefail
SETS=${SETS:-synth-dev sroie-dev}
CONCS=${CONCS:-default 1}
REPEAT=${REPEAT:-3}
BACKEND=${BACKEND:-cuda-fp32}
EXTRA=${EXTRA:-}
TAG=${TAG:-run}
REPO=$PWD
OUT=${OUT:-/tmp/time_table_out}
R=/tmp/tt
mkdir -p "$OUT" "$R"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
F=$PWD/files
S=$OUT/summary.txt
{
  echo "# device_time_table $TAG $(date -u +%Y-%m-%dT%H:%M:%SZ) backend $BACKEND extra '$EXTRA'"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cpu: $(nproc) cores"
} | tee -a "$S"

for set in $SETS; do
  for c in $CONCS; do
    tag=${TAG}_${set}_c$c
    conc=""
    [ "$c" != default ] && conc="STEADYOCR_WORKER_CONCURRENCY=$c"
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 100 >"$R/$tag.smi" 2>/dev/null &
    smi=$!
    env $conc ./env.sh bin/steadyocr bench "$F/$set" --models "$F/models" --backend "$BACKEND" --require-gpu \
      --warmup 1 --repeat "$REPEAT" --json $EXTRA >"$R/$tag.json" 2>"$R/$tag.log"
    rc=$?
    kill $smi 2>/dev/null
    wait $smi 2>/dev/null
    python3 - "$R/$tag.json" "$R/$tag.smi" "$tag" "$rc" <<'EOF' | tee -a "$S"
import json, sys
path, smi, tag, rc = sys.argv[1:5]
util, mem = [], []
for l in open(smi):
    p = [x.strip() for x in l.split(",")]
    if len(p) == 2 and p[0].isdigit():
        util.append(int(p[0])); mem.append(int(p[1]))
busy = [u for u in util if u > 0]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{tag}: exit {rc}, no result ({e})"); sys.exit()
st = r["stage_ms"]
print(f"{tag}: exit {rc}, {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}), pass "
      f"{r['pass_ms_median']:.1f} ms, first pass {r['first_pass_ms']:.1f} ms, failed {r['failed']}, "
      f"GPU util mean {sum(busy)/max(len(busy),1):.0f}% over busy samples ({len(busy)}/{len(util)}), "
      f"memory peak {max(mem) if mem else '?'} MiB")
print("  per image ms (mean/median/p90/p99): " + ", ".join(
    f"{k} {st[k]['mean']:.2f}/{st[k]['median']:.2f}/{st[k]['p90']:.2f}/{st[k]['p99']:.2f}"
    for k in ["decode", "det", "post", "cls", "rec", "total"]))
fields = ["calls", "prep", "wait", "plan", "acquire", "staging", "upload", "compute", "download", "sync", "run", "finish"]
print("  " + "model".ljust(6) + "".join(f.rjust(9) for f in fields))
for m in ["det", "cls", "rec"]:
    t = r.get("time_table_ms", {}).get(m)
    if t and t.get("calls", 0) > 0:
        print("  " + m.ljust(6) + "".join(f"{t.get(f, 0):9.2f}" for f in fields))
EOF
  done
done
tar czf "$OUT/time_table.tgz" -C "$R" . 2>/dev/null
