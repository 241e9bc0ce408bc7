#!/bin/bash
# Sourced by the device scripts (device_shapes.sh, device_ab_sync.sh, device_checks.sh, device_stream.sh,
# device_top1.sh, device_ab_plugin.sh, device_arenas.sh; the last three name their steps PARTS): the bundle unpacked,
# the summary file, the STEPS test and the header line, and the steps they share (the CUDA tests, the PyTorch peer,
# a bench result's line, ocr_eval's line), in one place.
#   device_begin NAME WORKDIR OUTDIR [EXTRA HEADER TEXT]
# (the bundle: BUNDLE/bundle.tgz, BUNDLE defaulting to .devbundle) leaves REPO (the repository root, the caller's working directory), B (the unpacked bundle), F (its data files) and
# S (OUTDIR/summary.txt); exits 2 when the bundle cannot be unpacked.
device_begin() {
  local name=$1 work=$2 out=$3 extra=${4:-}
  REPO=$PWD
  rm -rf "$work" /tmp/bundle && mkdir -p "$work" "$out"
  tar xzf "${BUNDLE:-.devbundle}/bundle.tgz" -C /tmp || exit 2
  B=/tmp/bundle
  F=$B/files
  S=$out/summary.txt
  echo "# $name $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi --query-gpu=name,driver_version \
    --format=csv,noheader 2>/dev/null); $(nproc) cores${extra:+; $extra}" | tee -a "$S"
}

# Whether STEPS (space-separated) names step $1.
want() { [[ " $STEPS " == *" $1 "* ]]; }

# The CUDA tests of test_backends (Cuda*, *Cuda*, *cuda*, *Top1*) into $W/tests.log: a summary line, the failures,
# and the lines of the tests whose names match $1 (an extended regex; optional).
device_cuda_tests() {
  local names=${1:-}
  (cd "$B" && STEADYOCR_MODELS=$F/models STEADYOCR_SHARED_DATA=$F STEADYOCR_TEST_DATA=$REPO/tests/data \
    timeout 420 ./env.sh bin/test_backends --gtest_filter='Cuda*:*Cuda*:*cuda*:*Top1*') >"$W/tests.log" 2>&1
  echo "CUDA tests (test_backends Cuda*:*Cuda*:*cuda*:*Top1*): exit $?; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?|tests? from .* ran|^auto: ' \
    "$W/tests.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E '^\[  FAILED  \]' "$W/tests.log" | head -20 | tee -a "$S"
  if [ -n "$names" ]; then
    grep -E '^\[ +(OK|FAILED|SKIPPED) +\] .*\([0-9]+ ms\)$' "$W/tests.log" | grep -E "$names" | tee -a "$S"
  fi
  return 0
}

# The PyTorch eager peer (ref_ppocr.py --runner torch) on set $1: $W/peer_torch_SET.{json,log} and its last line.
device_torch_peer() {
  local set=$1
  timeout 300 python3 "$F/peers/ref_ppocr.py" "$F/models" "$F/$set" "$W/peer_torch_$set.json" --runner torch \
    --repeat 1 >"$W/peer_torch_$set.log" 2>&1
  echo "== peer PyTorch eager $set: exit $?; $(tail -1 "$W/peer_torch_$set.log")" | tee -a "$S"
}

# A set four times over, under other names (the engine sees four times the images, of the same shapes): SET DIR.
device_four() {
  mkdir -p "$2"
  for i in 1 2 3 4; do
    for f in "$F/$1"/*.jpg "$F/$1"/*.png; do
      [ -e "$f" ] && ln -sf "$f" "$2/$i.$(basename "$f")"
    done
  done
}

# One line of a `bench --json` result $1 tagged $2 (images/s, host cores, p50/p99, the first pass's extra cost) and
# its stage medians, into the summary.
device_bench_line() {
  python3 - "$1" "$2" <<'PY' | tee -a "$S"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}: no result ({e})"); sys.exit()
st = r["stage_ms"]["total"]
print(f"{sys.argv[2]}: {r['images']} images, {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}), "
      f"host CPU {r.get('host_cpu_cores', 0):.1f} cores, p50 {st['median']:.1f} p99 {st['p99']:.1f} ms, "
      f"first pass +{r.get('new_shape_ms_per_image', 0):.1f} ms/image")
med = {k: v["median"] for k, v in r["stage_ms"].items() if isinstance(v, dict) and "median" in v and k != "total"}
print("  stage medians, ms: " + ", ".join(f"{k} {v:.2f}" for k, v in med.items()))
PY
}

# ocr_eval.py's figures for `ocr` JSON $2 on set $1 (sroie-dev's labels compared without case), on one line tagged $3.
device_ocr_eval() {
  local set=$1 json=$2 tag=$3 flags=""
  [ "$set" = sroie-dev ] && flags=--ignore-case
  python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$json" $flags 2>&1 | tail -6 | tr '\n' ' ' | sed "s/^/   $tag: /" |
    tee -a "$S"
}
