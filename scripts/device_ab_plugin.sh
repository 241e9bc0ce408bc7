#!/bin/bash
# A CUDA plugin against a base one in the same `device` run (issue 13 levers): the CUDA tests with the new plugin;
# `bench` with each plugin, alternating, ROUNDS rounds, with the default runs in flight and one at a time, on synth-dev
# and sroie-dev; `ocr` with each, compared line by line (text, box, score) and scored; and the per-op device profile
# (STEADYOCR_CUDA_PROFILE_OPS, graph replays) of both. Summary: $OUT/summary.txt; logs and JSON: $OUT/ab.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/ocr_eval.py ../shared/data/golden \
#   BASE_DIR   (BASE_DIR holds the base libsteadyocr_cuda13.so; its folder name is BASE below)
# Device (repo root, carry [".devbundle"]): BASE=plugin_base scripts/device_ab_plugin.sh
#   (PARTS="tests bench ocr profile", ROUNDS=2, REPEAT=3, SETS, CONCS="default 1")
set -uo pipefail
PARTS=${PARTS:-tests bench ocr profile}
ROUNDS=${ROUNDS:-2}
REPEAT=${REPEAT:-3}
SETS=${SETS:-synth-dev sroie-dev}
CONCS=${CONCS:-default 1}
BASE=${BASE:-plugin_base}
STEPS=$PARTS
export OUT=${OUT:-/tmp/ab_out}
R=/tmp/ab
W=$R
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_ab_plugin "$R" "$OUT"
cd "$B" || exit 2
# Variants: base (the base plugin), new (this build's), newhost (this build's with --host-normalize, which isolates the
# plugin from the detector's byte input).
VARIANTS=${VARIANTS:-base new newhost}
plugin_flag() {
  case $1 in
    base) echo "--cuda-plugin $F/$BASE/libsteadyocr_cuda13.so" ;;
    newhost) echo "--host-normalize" ;;
  esac
}

if want tests; then
  device_cuda_tests
fi

if want bench; then
  for round in $(seq "$ROUNDS"); do
    for set in $SETS; do
      for c in $CONCS; do
        order=$VARIANTS
        [ $((round % 2)) = 0 ] && order=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')  # the other way round
        for which in $order; do
          tag=bench_r${round}_${set}_c${c}_$which
          conc=""
          [ "$c" != default ] && conc="STEADYOCR_WORKER_CONCURRENCY=$c"
          env $conc ./env.sh bin/steadyocr bench "$F/$set" --models "$F/models" --backend cuda-fp32 --require-gpu \
            --warmup 1 --repeat "$REPEAT" --json $(plugin_flag $which) >"$R/$tag.json" 2>"$R/$tag.log"
          rc=$?
          python3 - "$R/$tag.json" "$tag" "$rc" <<'EOF' | tee -a "$S"
import json, sys
path, tag, rc = sys.argv[1:4]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{tag}: exit {rc}, no result ({e})"); sys.exit()
t = r["stage_ms"]["total"]
tt = r.get("time_table_ms", {})
dev = {m: tt.get(m, {}).get("compute", 0) for m in ("det", "rec", "cls")}
print(f"{tag}: exit {rc}, {r['images_per_s']:.1f} images/s, p50 {t['median']:.1f} / p99 {t['p99']:.1f} ms, "
      f"first pass {r['first_pass_ms']:.0f} ms, failed {r['failed']}, device compute ms/image "
      + " ".join(f"{k} {v:.2f}" for k, v in dev.items()) + "; det prep/staging/upload "
      + "/".join(f"{tt.get('det', {}).get(k, 0):.2f}" for k in ("prep", "staging", "upload")))
EOF
        done
      done
    done
  done
fi

if want ocr; then
  for set in $SETS; do
    flags=""
    [ "$set" = sroie-dev ] && flags="--ignore-case"
    for which in $VARIANTS; do
      tag=ocr_${set}_$which
      ./env.sh bin/steadyocr ocr "$F/$set" --models "$F/models" --backend cuda-fp32 --require-gpu $(plugin_flag $which) \
        --format json -o "$R/$tag.json" 2>"$R/$tag.log"
      echo "$tag: exit $?; $(python3 "$F/ocr_eval.py" "$F/$set/labels.txt" "$R/$tag.json" $flags 2>&1 | tail -3 |
        tr '\n' ' ')" | tee -a "$S"
    done
    for v in $VARIANTS; do
      [ "$v" = new ] && continue
      python3 "$REPO/scripts/compare_ocr_lines.py" "$R/ocr_${set}_$v.json" "$R/ocr_${set}_new.json" "$set" \
        "$v against new" | tee -a "$S"
    done
  done
fi

if want profile; then
  for which in base new; do  # the device's steps (new: the detector starts with ImageLut)
    STEADYOCR_WORKER_CONCURRENCY=1 STEADYOCR_CUDA_PROFILE_OPS=3 ./env.sh bin/steadyocr --log-level info bench \
      "$F/synth-dev" --models "$F/models" --backend cuda-fp32 --require-gpu --warmup 1 --repeat 2 --json \
      $(plugin_flag $which) >"$R/profile_$which.json" 2>"$R/profile_$which.log"
    echo "profile $which: exit $?" | tee -a "$S"
    for role in det rec cls; do
      grep "op profile $role " "$R/profile_$which.log" | tail -1 | sed 's/.*op profile/  op profile/' | cut -c1-1200 |
        tee -a "$S"
    done
  done
fi
tar czf "$OUT/ab.tgz" -C "$R" . 2>/dev/null
cat "$S"
