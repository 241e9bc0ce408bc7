#!/bin/bash
# Which lever of issue 13 comes next, in one `device` run: the self-test of both CUDA rungs (`ocr --require-gpu` on
# synth-dev, the SELF_TEST line and the metrics); the device time of every plan by op kind, one image at a time
# (STEADYOCR_CUDA_PROFILE_OPS=3, summed over every plan of a model: where rec's and det's device milliseconds go);
# and recognition batch geometry (--rec-batch, --rec-width-bucket) against throughput and accuracy on synth-dev and
# sroie-dev. Summary: $OUT/summary.txt; logs and JSON: $OUT/levers.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so -- models \
#   ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): scripts/device_levers.sh   (PARTS="verify profile sweep",
#   SWEEP="6:0 12:0 24:0 24:64", REPEAT=3)
set -uo pipefail
PARTS=${PARTS:-verify profile sweep}
SWEEP=${SWEEP:-6:0 12:0 24:0 24:64}
REPEAT=${REPEAT:-3}
want() { [[ " $PARTS " == *" $1 "* ]]; }
export OUT=${OUT:-/tmp/levers_out}
R=/tmp/lv
rm -rf "$R" /tmp/bundle && mkdir -p "$OUT" "$R"
tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
cd /tmp/bundle || exit 2
F=$PWD/files
S=$OUT/summary.txt
echo "# device_levers $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" |
  tee -a "$S"

score() {  # labels json [flags] -> one line of metrics
  python3 "$F/ocr_eval.py" "$F/$1/labels.txt" "$2" ${3:-} 2>&1 | tail -3 | tr '\n' ' '
}

if want verify; then
  for be in cuda-fp32 cuda-fp16; do
    ./env.sh bin/steadyocr --log-level info ocr "$F/synth-dev" --models "$F/models" --backend $be --require-gpu \
      --format json -o "$R/verify_$be.json" 2>"$R/verify_$be.log"
    echo "verify $be: exit $?; $(grep -ci 'self-test' "$R/verify_$be.log") self-test lines: $(grep -i 'self-test' \
      "$R/verify_$be.log" | head -1 | cut -c1-200); $(score synth-dev "$R/verify_$be.json")" | tee -a "$S"
  done
fi

if want profile; then
  for set in synth-dev sroie-dev; do
    STEADYOCR_WORKER_CONCURRENCY=1 STEADYOCR_CUDA_PROFILE_OPS=3 ./env.sh bin/steadyocr --log-level info bench \
      "$F/$set" --models "$F/models" --backend cuda-fp32 --require-gpu --warmup 1 --repeat 2 --json \
      >"$R/profile_$set.json" 2>"$R/profile_$set.log"
    echo "profile $set: exit $?" | tee -a "$S"
    python3 - "$R/profile_$set.log" "$R/profile_$set.json" <<'EOF' | tee -a "$S"
import json, re, sys
last = {}
for l in open(sys.argv[1]):
    m = re.search(r"op profile (\S+) (.*?) \((\d+) steps, (\d+) runs\): ([\d.]+) ms per run on the device; "
                  r"by op kind: (.*?); slowest: (.*)$", l)
    if m:
        last[(m[1], m[2])] = m
by_role = {}
for (role, sig), m in last.items():
    runs = int(m[4])
    d = by_role.setdefault(role, {"plans": 0, "runs": 0, "ms": 0.0, "kinds": {}, "slow": []})
    d["plans"] += 1
    d["runs"] += runs
    d["ms"] += float(m[5]) * runs
    for part in m[6].split(", "):
        k = re.match(r"(\S+) x(\d+) ([\d.]+)", part)
        if k:
            e = d["kinds"].setdefault(k[1], [0, 0.0])
            e[0] = int(k[2])
            e[1] += float(k[3]) * runs
    d["slow"].append((float(m[5]), sig, m[7][:300]))
try:
    images = json.load(open(sys.argv[2])).get("images", 0)
except Exception:
    images = 0
for role, d in sorted(by_role.items()):
    tot = d["ms"]
    print(f"  {role}: {d['plans']} plans profiled, {d['runs']} runs, {tot:.1f} ms on the device in all "
          f"({tot / max(d['runs'], 1):.3f} ms per run)")
    for name, (steps, ms) in sorted(d["kinds"].items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"    {name:<22} {steps:>4} steps/plan  {ms:9.1f} ms  {100 * ms / max(tot, 1e-9):5.1f} %")
    top = max(d["slow"])
    print(f"    slowest plan {top[1]} ({top[0]:.3f} ms/run): {top[2]}")
EOF
  done
fi

if want sweep; then
  for set in synth-dev sroie-dev; do
    flags=""
    [ "$set" = sroie-dev ] && flags="--ignore-case"
    for g in $SWEEP; do
      b=${g%%:*}
      w=${g##*:}
      tag=sweep_${set}_b${b}_w$w
      ./env.sh bin/steadyocr bench "$F/$set" --models "$F/models" --backend cuda-fp32 --require-gpu --warmup 1 \
        --repeat "$REPEAT" --json --rec-batch "$b" --rec-width-bucket "$w" >"$R/$tag.json" 2>"$R/$tag.log"
      rc=$?
      ./env.sh bin/steadyocr ocr "$F/$set" --models "$F/models" --backend cuda-fp32 --require-gpu --rec-batch "$b" \
        --rec-width-bucket "$w" --format json -o "$R/${tag}_ocr.json" 2>"$R/${tag}_ocr.log"
      python3 - "$R/$tag.json" "$tag" "$rc" <<'EOF' | tr '\n' ' ' | tee -a "$S"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(f"{sys.argv[2]}: exit {sys.argv[3]}, {r['images_per_s']:.1f} images/s, first pass {r['first_pass_ms']:.0f} ms;")
except Exception as e:
    print(f"{sys.argv[2]}: exit {sys.argv[3]}, no result ({e});")
EOF
      echo "$(score $set "$R/${tag}_ocr.json" $flags)" | tee -a "$S"
    done
  done
fi
tar czf "$OUT/levers.tgz" -C "$R" . 2>/dev/null
cat "$S"
