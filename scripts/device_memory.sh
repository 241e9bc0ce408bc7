#!/bin/bash
# Where the device memory of `bench` goes on the GPU machine (issue 13, the 1.5 GB footprint): per variant (VARIANTS,
# each "name|env|flags"), nvidia-smi samples every 100 ms both the whole device and each process (the engine's own
# process and its workers apart), and the bench JSON's gpu_memory figures (the worker's pool) are printed beside them;
# the largest activation arena and cuDNN workspace planned come from the debug log. Summary: $OUT/summary.txt; logs:
# $OUT/memory.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#   ../shared/data/synth-dev
# Device (repo root, carry [".devbundle"]): scripts/device_memory.sh   (SET=synth-dev, REPEAT=2, VARIANTS)
set -uo pipefail
SET=${SET:-synth-dev}
REPEAT=${REPEAT:-2}
VARIANTS=${VARIANTS:-"default||
one-at-a-time|STEADYOCR_WORKER_CONCURRENCY=1|
budget-1024||--gpu-mem 1024"}
OUT=${OUT:-/tmp/memory_out}
R=/tmp/mem
rm -rf "$R" && mkdir -p "$OUT" "$R"
[ -d /tmp/bundle ] || tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
F=$PWD/files
S=$OUT/summary.txt
echo "# device_memory $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi --query-gpu=name,driver_version,memory.used \
  --format=csv,noheader) before; $(nproc) cores" | tee -a "$S"

while IFS='|' read -r name envs flags; do
  [ -z "$name" ] && continue
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$R/$name.total" 2>/dev/null &
  smi1=$!
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 100 >"$R/$name.apps" \
    2>/dev/null &
  smi2=$!
  # shellcheck disable=SC2086
  env $envs ./env.sh bin/steadyocr --log-level debug bench "$F/$SET" --models "$F/models" --backend cuda-fp32 \
    --require-gpu --warmup 1 --repeat "$REPEAT" --json $flags >"$R/$name.json" 2>"$R/$name.log" &
  bench=$!
  # The processes of this run: the bench itself and its children (workers, probes).
  : >"$R/$name.pids"
  while kill -0 $bench 2>/dev/null; do
    { echo $bench; pgrep -P $bench; for c in $(pgrep -P $bench); do pgrep -P "$c"; done; } 2>/dev/null |
      while read -r p; do echo "$p $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | cut -c1-80)"; done \
      >>"$R/$name.pids"
    sleep 0.5
  done
  wait $bench
  rc=$?
  kill $smi1 $smi2 2>/dev/null
  wait $smi1 $smi2 2>/dev/null
  python3 - "$R" "$name" "$rc" <<'EOF' | tee -a "$S"
import json, re, sys, collections
R, name, rc = sys.argv[1:4]
tot = [int(l) for l in open(f"{R}/{name}.total") if l.strip().isdigit()]
apps = collections.defaultdict(int)
for l in open(f"{R}/{name}.apps"):
    p = [x.strip() for x in l.split(",")]
    if len(p) == 2 and p[0].isdigit() and p[1].isdigit():
        apps[int(p[0])] = max(apps[int(p[0])], int(p[1]))
cmd = {}
for l in open(f"{R}/{name}.pids"):
    p = l.split(" ", 1)
    if p[0].isdigit():
        cmd[int(p[0])] = p[1].strip() if len(p) > 1 else ""
try:
    r = json.load(open(f"{R}/{name}.json"))
    ips = f"{r['images_per_s']:.1f} images/s"
    gm = r.get("gpu_memory")
except Exception as e:
    ips, gm = f"no result ({e})", None
print(f"{name}: exit {rc}, {ips}, device peak {max(tot) if tot else '?'} MiB "
      f"(first sample {tot[0] if tot else '?'})")
for pid, mb in sorted(apps.items()):
    print(f"  pid {pid} peak {mb} MiB: {cmd.get(pid, '?')}")
if gm:
    print("  bench gpu_memory: " + json.dumps(gm))
arena = ws = 0
for l in open(f"{R}/{name}.log"):
    m = re.search(r"planned (\w+) for (\S+) in [\d.]+ ms \((\d+) KiB arena\)", l)
    if m:
        ws = max(ws, int(m.group(3)))
print(f"  largest plan figure in the log: {ws / 1024:.1f} MiB")
EOF
done <<<"$VARIANTS"
tar czf "$OUT/memory.tgz" -C "$R" . 2>/dev/null
