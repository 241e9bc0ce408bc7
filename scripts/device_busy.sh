#!/bin/bash
# What bounds throughput with many images in flight (issue 13), measured on the device's own timeline.
#   1. Alternating rounds, images/s of the median pass: the CUDA plugin before a change (files/base_cuda13.so, when the
#      bundle has it) against the bundle's own, with 16 images in flight on passes of synth-dev four times over (160
#      images of the same 40 shapes: a pass's ramp-up and drain are a small part of it) and one image at a time
#      (one-image p50/p99); graph replay off as a third variant.
#      SETS="synth sroie": synth-dev, sroie-dev (64-image passes four times over, and one at a time), or both.
#   2. The device timeline (bin/libso_cupti_trace.so, loaded by the driver through CUDA_INJECTION64_PATH) of the
#      bundle's plugin on the 160-image passes, the whole pipeline and detection alone (--det-only): how much of the
#      last 2 s any kernel ran, how many ran at once, kernels and runtime calls by time, each kernel's mean grid.
#   kernels: bench/depthwise_bench and bench/pointwise_bench (bin/so_KERNEL_bench), and those built before the change
#      where the bundle has files/base_KERNEL_bench, and variants of a change as files/NAME_KERNEL_bench.
#   VARIANTS may name basebin: files/base_steadyocr (the steadyocr binary before a change) with the bundle's plugin;
#   any NAME with files/NAME_steadyocr in the bundle runs that binary with the bundle's plugin.
#   plans: one image at a time with debug logs, what each new shape's plan cost (passes, prepare; PLAN_BACKENDS,
#      PLAN_VARIANTS, default "new").
#   ncu: Nsight Compute (on the device machine) on the first launches of the pointwise kernel, cuBLAS's GEMM and the
#      depthwise kernel in the benches the bundle has.
#   tests: the CUDA tests of bin/test_backends (TEST_NAMES: a regex of the tests whose lines the summary keeps).
#   lines: cold `ocr` of synth-dev and sroie-dev with the base plugin and
#      the bundle's, on cuda-fp16 and cuda-fp32, compared line by line (LINES="V1 V2": two other variants, e.g.
#      "pershape new"), with what each new input shape cost the host (scripts/new_shape_costs.py).
#   Variants: base, new, nographs, basebin, pershape (the bundle's with --per-shape-plans), NAME (files/NAME_*).
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/libso_cupti_trace.so \
#   [build/so_*_bench build/tests/test_backends] -- models ../shared/data/synth-dev [../shared/data/sroie-dev \
#   ../shared/data/golden ../shared/tools/ocr_eval.py] [/path/to/base_cuda13.so /path/to/base_*_bench]
# Device (repo root, carry [".devbundle"]): scripts/device_busy.sh   (ROUNDS=2, REPEAT=4, CONC=16, STEPS="ab trace"
#   of "kernels tests lines ab trace", SETS=synth, VARIANTS="base new nographs"; any other NAME runs the bundle's
#   files/NAME_cuda13.so)
set -u
ROUNDS=${ROUNDS:-2}
REPEAT=${REPEAT:-4}
CONC=${CONC:-16}
STEPS=${STEPS:-ab trace}
SETS=${SETS:-synth}
OUT=${OUT:-/tmp/busy_out}
W=/tmp/busy
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_busy "$W" "$OUT" "$CONC in flight"
SO="$B/env.sh $B/bin/steadyocr"
NEW=$B/bin/libsteadyocr_cuda13.so  # slim_bundle.py puts every binary it is given in bin/
four() { device_four "$@"; }
four synth-dev "$W/synth4"
echo "synth4: $(ls "$W/synth4" | wc -l) images; plugin $NEW" | tee -a "$S"
[[ " $SETS " == *" sroie "* ]] && four sroie-dev "$W/sroie4"

one() {  # tag set conc [env...] [-- flags...]
  local tag=$1 set=$2 conc=$3
  shift 3
  local envs=() flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift && flags=("$@")
  env "${envs[@]}" STEADYOCR_WORKER_CONCURRENCY="$conc" timeout -k 5 150 ${RUN_SO:-$SO} bench "$set" --models "$F/models" \
    --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json "${flags[@]}" >"$W/$tag.json" 2>"$W/$tag.log"
  device_bench_line "$W/$tag.json" "$tag"
}

# What variant $1 runs: e (environment), RUN_SO (the steadyocr command; empty: the bundle's), vflags (its flags).
variant() {
  RUN_SO= vflags=()
  case $1 in
    basebin) e=(STEADYOCR_CUDA_PLUGIN="$NEW") RUN_SO="$B/env.sh $F/base_steadyocr" ;;  # the steadyocr before
    base) e=(STEADYOCR_CUDA_PLUGIN="$F/base_cuda13.so") ;;
    new) e=(STEADYOCR_CUDA_PLUGIN="$NEW") ;;
    pershape) e=(STEADYOCR_CUDA_PLUGIN="$NEW") vflags=(--per-shape-plans) ;;  # the bundle's, a plan per input shape
    nographs) e=(STEADYOCR_CUDA_PLUGIN="$NEW" STEADYOCR_CUDA_GRAPHS=0) ;;
    *)
      if [ -e "$F/${1}_steadyocr" ]; then  # another steadyocr binary in the bundle, with the bundle's plugin
        e=(STEADYOCR_CUDA_PLUGIN="$NEW") RUN_SO="$B/env.sh $F/${1}_steadyocr"
      else  # another plugin in the bundle, files/NAME_cuda13.so
        e=(STEADYOCR_CUDA_PLUGIN="$F/${1}_cuda13.so")
      fi
      ;;
  esac
}

if want kernels; then
  for kernel in depthwise pointwise; do
    # base (files/base_KERNEL_bench), new (the bundle's), and any other files/NAME_KERNEL_bench (variants of a change)
    others=$(cd "$F" && ls ./*_${kernel}_bench 2>/dev/null | sed "s|^./||; s|_${kernel}_bench\$||" | grep -vx base)
    for v in base new $others; do
      bin=$B/bin/so_${kernel}_bench
      [ $v != new ] && bin=$F/${v}_${kernel}_bench
      [ -x "$bin" ] || continue
      (cd "$B" && timeout 240 ./env.sh "$bin") >"$W/kernels.$kernel.$v.txt" 2>&1
      echo "== $kernel kernels, $v: exit $?" | tee -a "$S"
      cut -c1-150 "$W/kernels.$kernel.$v.txt" | tee -a "$S"
    done
  done
fi

if want ncu; then  # Nsight Compute on the benches' first launches: where a kernel's time goes (stalls, occupancy)
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  sections="--section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis
    --section LaunchStats --section SchedulerStats"
  for spec in "pointwise pointwise_async" "pointwise gemm|Kernel2|xmma" "depthwise depthwise_tiled"; do
    kernel=${spec%% *} name=${spec#* }
    [ -x "$B/bin/so_${kernel}_bench" ] && [ -x "$ncu" ] || continue
    out="$W/ncu.$kernel.$(echo "$name" | tr -c 'a-z_\n' '_').txt"
    # shellcheck disable=SC2086
    (cd "$B" && timeout 150 "$ncu" $sections -k "regex:$name" -c 2 ./env.sh "bin/so_${kernel}_bench" --iters 2) \
      >"$out" 2>&1
    echo "== ncu $kernel ($name): exit $?" | tee -a "$S"
    grep -E "^  [a-zA-Z_].*\(|Duration|Throughput|Warp Cycles Per Issued|Achieved Occupancy|Eligible Warps|L2 Hit" \
      "$out" | cut -c1-160 | tee -a "$S"
  done
fi

if want tests; then
  device_cuda_tests "${TEST_NAMES:-CudaModels\.Golden|CudaTiming|Pattern_pointwise|depthwise}"
fi

if want lines; then
  for set in synth-dev sroie-dev; do
    [ -d "$F/$set" ] || continue
    for be in ${LINE_BACKENDS:-cuda-fp16 cuda-fp32}; do
      read -r lv1 lv2 <<<"${LINES:-base new}"
      for v in $lv1 $lv2; do
        variant "$v"
        # shellcheck disable=SC2086
        env "${e[@]}" timeout 300 ${RUN_SO:-$SO} --log-level debug ocr "$F/$set" --models "$F/models" --backend "$be" \
          --require-gpu --format json -o "$W/ocr.$set.$be.$v.json" "${vflags[@]}" >/dev/null 2>"$W/ocr.$set.$be.$v.log"
        echo "== ocr $set $be $v: exit $?; $(grep -E '^ocr: [0-9]+ images' "$W/ocr.$set.$be.$v.log"); $(grep -c WARN \
          "$W/ocr.$set.$be.$v.log") warnings" | tee -a "$S"
        # every shape is new to this cold process: what each cost the host
        python3 "$REPO/scripts/new_shape_costs.py" "$W/ocr.$set.$be.$v.log" "$set $be $v" | grep -v "on reference" |
          tee -a "$S"
      done
      python3 "$REPO/scripts/compare_ocr_lines.py" "$W/ocr.$set.$be.$lv1.json" "$W/ocr.$set.$be.$lv2.json" \
        "$set $be" "$lv1 against $lv2" | tee -a "$S"
      [ -f "$F/ocr_eval.py" ] && device_ocr_eval "$set" "$W/ocr.$set.$be.$lv2.json" "$set $be $lv2"
      [ -f "$F/ocr_eval.py" ] && device_ocr_eval "$set" "$W/ocr.$set.$be.$lv1.json" "$set $be $lv1"
      echo | tee -a "$S"
    done
  done
fi

if want ab; then
  variants="new nographs"
  [ -e "$F/base_cuda13.so" ] && variants="base new nographs"
  variants=${VARIANTS:-$variants}
  for round in $(seq 1 "$ROUNDS"); do
    order=$variants
    [ $((round % 2)) = 0 ] && order=$(echo $variants | tr ' ' '\n' | tac | tr '\n' ' ')
    for v in $order; do
      variant "$v"
      if [[ " $SETS " == *" synth "* ]]; then
        one "r$round.$v.c$CONC" "$W/synth4" "$CONC" "${e[@]}" -- "${vflags[@]}"
        one "r$round.$v.c1" "$F/synth-dev" 1 "${e[@]}" -- "${vflags[@]}"
      fi
      if [ -d "$W/sroie4" ]; then
        one "r$round.$v.sroie.c$CONC" "$W/sroie4" "$CONC" "${e[@]}" -- "${vflags[@]}"
        one "r$round.$v.sroie.c1" "$F/sroie-dev" 1 "${e[@]}" -- "${vflags[@]}"
      fi
    done
  done
fi

if want plans; then  # what a new shape costs the host, one image at a time: the plans' own debug lines
  for be in ${PLAN_BACKENDS:-cuda-fp16 cuda-fp32}; do
   for pv in ${PLAN_VARIANTS:-new}; do
    variant "$pv"
    # shellcheck disable=SC2086
    env "${e[@]}" STEADYOCR_WORKER_CONCURRENCY=1 timeout 150 ${RUN_SO:-$SO} --log-level debug bench "$F/synth-dev" \
      --models "$F/models" --backend "$be" --require-gpu --warmup 0 --repeat 2 --json "${vflags[@]}" \
      >"$W/plans.$be.$pv.json" 2>"$W/plans.$be.$pv.log"
    python3 - "$W/plans.$be.$pv.json" "$be $pv" <<'PY' | tee -a "$S"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    head = f"new shape +{r.get('new_shape_ms_per_image', 0):.2f} ms/image, first pass {r.get('first_pass_ms', 0):.0f} ms"
except Exception as e:
    head = f"no result ({e})"
print(f"plans {sys.argv[2]}, one image at a time: {head}")
PY
    # each new shape's cost, the builders' parts, the graph captures
    python3 "$REPO/scripts/new_shape_costs.py" "$W/plans.$be.$pv.log" "plans $be $pv" | grep -v "on reference" |
      tee -a "$S"
    grep -E "WARN|ERROR" "$W/plans.$be.$pv.log" | sort | uniq -c | sort -rn | head -5 | cut -c1-200 | tee -a "$S"
   done
  done
fi

if want trace; then
  for part in all det; do
    d="$W/trace.$part"
    mkdir -p "$d"
    flags=()
    [ $part = det ] && flags=(--det-only)
    one "trace.$part" "$W/synth4" "$CONC" SO_CUPTI_OUT="$d" SO_CUPTI_LAST_S=2 \
      CUDA_INJECTION64_PATH="$B/bin/libso_cupti_trace.so" -- "${flags[@]}"
    for f in "$d"/cupti.*.txt; do
      [ -s "$f" ] && sed 's/^/   /' "$f" | cut -c1-190 | tee -a "$S"
    done
  done
fi
tar czf "$OUT/busy.tgz" --exclude=synth4 --exclude=sroie4 -C /tmp busy
