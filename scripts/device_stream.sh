#!/bin/bash
# Images kept in flight from a pass's first image to its last (issue 13): `bench` sends a whole pass in one engine
# call (default) against the calls of 32 images it sent before (`--chunk 32`, each waiting for its slowest image),
# OpenCV's loops in the worker on every core (as before: variants ending in "cv") or off (the default now),
# and with fewer call slots per shape (`--batch-slots 4`, more stacking across images); one image at a time with
# its recognition calls at once or one after another (--rec-serial-calls); a cold `ocr` with two chunks
# in flight against the binary before (BASE_DIR); one image at a time; fp16's static precision rules worked out once
# per model (the worker's totals); the CUDA tests; the PyTorch eager peer in the same run.
# Summary: $OUT/summary.txt; JSON and logs: $OUT/stream.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so build/tests/test_backends \
#   [build/so_pointwise_bench for the step kernels] \
#   -- models ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/peers ../shared/tools/ocr_eval.py \
#   ../shared/data/golden BASE_DIR   (BASE_DIR, optional: the steadyocr binary before the change)
# Device (repo root, carry [".devbundle"]): scripts/device_stream.sh
#   (STEPS="kernels tests rules ab one ocr modes profile trace perf peer", SETS, BACKENDS, VARIANTS="chunk32cv streamcv stream slots4", ROUNDS=2, REPEAT=3,
#    BASE=name of BASE_DIR, ONE_BACKENDS=cuda-fp16)
set -u
STEPS=${STEPS:-tests rules ab one ocr peer}
SETS=${SETS:-synth-dev sroie-dev}
BACKENDS=${BACKENDS:-cuda-fp32 cuda-fp16}
VARIANTS=${VARIANTS:-chunk32cv streamcv stream slots4}
ROUNDS=${ROUNDS:-2}
REPEAT=${REPEAT:-3}
BASE=${BASE:-base_bin}
OUT=${OUT:-/tmp/stream_out}
W=/tmp/stream
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_stream "$W" "$OUT"
SO="$B/env.sh $B/bin/steadyocr"

# ...cv: OpenCV's own parallel loops (TBB) on every core in the worker, as before (the worker now turns them off when
# it reads its images one per thread).
# tun...: glibc keeping freed blocks mapped (trim and mmap thresholds at 256 MiB, inherited by the worker), to see what
# the pages faulted in afresh (and unmapped again) for every image cost with many images in flight.
TUNABLES="GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=268435456"
variant_env() {
  case "$1" in
    *cv) echo "OPENCV_FOR_THREADS_NUM=$(nproc)" ;;
    tun*) echo "$TUNABLES" ;;
    nocudnn) echo "STEADYOCR_CUDA_CUDNN=0" ;;    # regular convolutions as im2col + cuBLAS GEMM, no cuDNN call
    nographs) echo "STEADYOCR_CUDA_GRAPHS=0" ;;  # every run enqueued step by step
    handles*) echo "STEADYOCR_CUDA_CUDNN_HANDLES=${1#handles}" ;;
    perplan) echo "STEADYOCR_CUDA_ARENAS=per-plan" ;;  # each plan instance keeps its arena (its graph always replays)
  esac
}
variant_flags() {
  case "$1" in
    chunk*) v=${1#chunk}; echo "--chunk ${v%cv}" ;;
    slots* | tunslots*) echo "--batch-slots ${1##*slots}" ;;
    mem*) echo "--gpu-mem ${1#mem}" ;;
    bucket*) echo "--rec-width-bucket ${1#bucket}" ;;
  esac
}

# One bench JSON as one line: images/s, the per-image p50/p99, host CPU, the rec stage's device and waits.
bench_line() {  # json tag smi-file
  python3 - "$1" "$2" "${3:-}" <<'PY' | tee -a "$S"
import json, sys
path, tag, smi = sys.argv[1:4]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{tag}: no result ({e})"); sys.exit()
st = r["stage_ms"]["total"]
t = r.get("time_table_ms", {})
rec, det = t.get("rec", {}), t.get("det", {})
util = ""
if smi:
    u = [int(l) for l in open(smi) if l.strip().isdigit()]
    busy = [x for x in u if x > 0]
    util = f", GPU util {sum(busy) / max(len(busy), 1):.0f}% ({len(busy)}/{len(u)} samples busy)"
print(f"{tag}: {r['images_per_s']:.1f} images/s (best {r['images_per_s_best']:.1f}, chunk {r.get('chunk_images')}), "
      f"p50 {st['median']:.1f} p99 {st['p99']:.1f} mean {st['mean']:.1f} ms, host CPU {r.get('host_cpu_ms_per_image', 0):.1f} "
      f"ms/image ({r.get('host_cpu_cores', 0):.1f} cores), rec prep {rec.get('prep', 0):.2f} acquire "
      f"{rec.get('acquire', 0):.2f} compute {rec.get('compute', 0):.2f} sync {rec.get('sync', 0):.2f} calls "
      f"{rec.get('calls', 0):.2f}, det compute {det.get('compute', 0):.2f} sync {det.get('sync', 0):.2f}{util}, "
      f"failed {r['failed']}")
PY
}

if want kernels; then
  # The fused pointwise kernel in each step/stage configuration against cuBLAS (bench/pointwise_bench; the bundle's
  # bin/so_pointwise_bench).
  (cd "$B" && timeout 300 ./env.sh bin/so_pointwise_bench) >"$W/kernels.txt" 2>&1
  echo "== pointwise kernels: exit $?" | tee -a "$S"
  cut -c1-150 "$W/kernels.txt" | tee -a "$S"
fi

if want tests; then
  device_cuda_tests 'Fp16StaticRulesAreWorkedOutOncePerModel|CudaModels\.Golden'
fi

if want rules; then
  # fp16's static precision rules: one scan per model the worker loads; the scans' own time and the others' waits;
  # and where planning's time goes (every prepare phase's total, the plans made).
  timeout 300 $SO --log-level debug bench "$F/synth-dev" --models "$F/models" --backend cuda-fp16 --require-gpu \
    --warmup 1 --repeat 2 --json >"$W/rules.json" 2>"$W/rules.log"
  echo "== fp16 rules: exit $?" | tee -a "$S"
  grep -E 'steadyocr_cuda_static_precision_scans_total|steadyocr_cuda_plans_prepared|_plan_ms_total|prepare_ms_total|run_modes|graphs_captured' \
    "$W/rules.log" | sort | uniq | sed 's/^ */   /' | tee -a "$S"
  bench_line "$W/rules.json" "rules synth-dev cuda-fp16"
fi

if want ab; then
  for round in $(seq 1 "$ROUNDS"); do
    order=$VARIANTS
    [ $((round % 2)) = 0 ] && order=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
    for set in $SETS; do
      for be in $BACKENDS; do
        for v in $order; do
          tag=r$round.$set.$be.$v
          nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 >"$W/$tag.smi" 2>/dev/null &
          smi=$!
          env $(variant_env "$v") timeout 300 $SO bench "$F/$set" --models "$F/models" --backend "$be" --require-gpu \
            --warmup 1 --repeat "$REPEAT" --json $(variant_flags "$v") >"$W/$tag.json" 2>"$W/$tag.log"
          kill $smi 2>/dev/null
          wait $smi 2>/dev/null
          bench_line "$W/$tag.json" "$tag" "$W/$tag.smi"
        done
      done
    done
  done
fi

if want one; then
  # One image at a time: an image's rec calls one after another ("serial", --rec-serial-calls) or at once ("conc",
  # the default); "tun": conc with glibc keeping freed blocks mapped (GLIBC_TUNABLES, inherited by the worker), to
  # see what the pages faulted in afresh for every image cost.
  for set in $SETS; do
    for be in ${ONE_BACKENDS:-cuda-fp16}; do
      for v in ${ONE_VARIANTS:-serial conc tun tun conc serial}; do
        tun=$(variant_env "$v") flags=$(variant_flags "$v")
        [ $v = serial ] && flags=--rec-serial-calls
        env $tun STEADYOCR_WORKER_CONCURRENCY=1 timeout 300 $SO bench "$F/$set" --models "$F/models" --backend "$be" \
          --require-gpu --warmup 1 --repeat "$REPEAT" --json $flags >"$W/one.$set.$be.$v.json" 2>"$W/one.$set.$be.$v.log"
        bench_line "$W/one.$set.$be.$v.json" "one at a time $set $be $v"
        python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['stage_ms']; print('   stage medians: ' + ', '.join(f'{k} {v[\"median\"]:.2f}' for k, v in t.items() if isinstance(v, dict)))" \
          "$W/one.$set.$be.$v.json" 2>/dev/null | tee -a "$S"
      done
    done
  done
fi

if want ocr; then
  # Cold processes, every shape new: the binary before (one chunk at a time) and this one (two in flight), in turns.
  for set in $SETS; do
    for be in $BACKENDS; do
      variants="base new base new"
      [ -x "$F/$BASE/steadyocr" ] || variants="new new"  # no base binary in the bundle: this one, twice
      for v in $variants; do
        bin="$SO"
        [ $v = base ] && bin="$B/env.sh $F/$BASE/steadyocr"
        timeout 300 $bin ocr "$F/$set" --models "$F/models" --backend "$be" --require-gpu --format json \
          -o "$W/ocr.$set.$be.$v.json" >/dev/null 2>"$W/ocr.$set.$be.$v.log"
        echo "== ocr $set $be $v: exit $?; $(grep -E '^ocr: [0-9]+ images' "$W/ocr.$set.$be.$v.log"); $(grep -c WARN \
          "$W/ocr.$set.$be.$v.log") warnings; $(grep -E 'INFO .*(precision for|calibration for|planned [0-9]+ bucketed)' \
          "$W/ocr.$set.$be.$v.log" | sed 's/^.*INFO *//' | cut -c1-140 | tr '\n' ' ')" | tee -a "$S"
      done
      [ -f "$W/ocr.$set.$be.base.json" ] && python3 "$REPO/scripts/compare_ocr_lines.py" \
        "$W/ocr.$set.$be.base.json" "$W/ocr.$set.$be.new.json" "$set $be" "base against new" | tee -a "$S"
      device_ocr_eval "$set" "$W/ocr.$set.$be.new.json" "$set $be new"
      echo | tee -a "$S"
    done
  done
fi

if want modes; then
  # How runs reach the device (graph replay or one step at a time), and planning's phases, with many images in flight
  # and with one: a debug bench each, the worker's totals.
  for conc in 16 1; do
    for be in ${BACKENDS}; do
      tag=modes.$be.c$conc
      STEADYOCR_WORKER_CONCURRENCY=$conc timeout 300 $SO --log-level debug bench "$F/synth-dev" --models "$F/models" \
        --backend "$be" --require-gpu --warmup 1 --repeat "$REPEAT" --json >"$W/$tag.json" 2>"$W/$tag.log"
      bench_line "$W/$tag.json" "$tag"
      grep -E 'run_modes|graphs_captured|graph_capture_ms|prepare_ms_total|_plan_ms_total|model_plans_total|build_ms_total\{op="(Conv|MatMul)"|arena_waits|cudnn_lease' \
        "$W/$tag.log" | sed 's/^ */   /' | tee -a "$S"
    done
  done
fi

if want profile; then
  # Where a rec call's device time goes, one image in flight and 16: the per-step device profile (events after every
  # step, eager, STEADYOCR_CUDA_PROFILE_OPS) of fp16, the last line of each plan; then, where the machine has Nsight
  # Systems, a timeline summary of a plain bench (kernels by total time, CUDA API calls by total time).
  for conc in 1 16; do
    STEADYOCR_WORKER_CONCURRENCY=$conc STEADYOCR_CUDA_PROFILE_OPS=20 timeout 300 $SO bench "$F/synth-dev" \
      --models "$F/models" --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json \
      >"$W/profile.c$conc.json" 2>"$W/profile.c$conc.log"
    bench_line "$W/profile.c$conc.json" "profile c$conc"
    # The lines of the plans that ran most (each plan logs every 20 runs; "(S steps, R runs, ...").
    grep "op profile" "$W/profile.c$conc.log" | sed 's/.*op profile/op profile/' |
      awk -F'[(,]' '{ split($3, r, " "); print r[1] "\t" $0 }' | sort -n -r | head -6 | cut -f2 | cut -c1-600 |
      sed 's/^/   /' | tee -a "$S"
  done
  NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  if [ -n "$NSYS" ]; then
    timeout 300 "$NSYS" profile -t cuda,osrt --stats=false -o "$W/nsys" -f true $SO bench "$F/synth-dev" \
      --models "$F/models" --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json \
      >"$W/nsys.json" 2>"$W/nsys.log"
    bench_line "$W/nsys.json" "nsys"
    for r in cuda_gpu_kern_sum cuda_api_sum; do
      "$NSYS" stats -r "$r" -f csv "$W/nsys.nsys-rep" 2>/dev/null | head -25 | cut -c1-220 | sed "s/^/   $r: /" |
        tee -a "$S"
    done
  else
    echo "nsys: not on this machine" | tee -a "$S"
  fi
fi

if want trace; then
  # The device's own timeline through CUPTI (bin/libso_cupti_trace.so in the bundle, loaded by the driver into the
  # worker through CUDA_INJECTION64_PATH): how much of the steady part any kernel ran, how many at once, the kernels and runtime calls by time.
  # TRACE_CONC: images in flight (default "16 1"); TRACE_VARIANTS: as VARIANTS (default "stream"); REPEAT sets the
  # passes (the summary covers the last SO_CUPTI_LAST_S=2 s of device activity).
  for v in ${TRACE_VARIANTS:-stream}; do
    for conc in ${TRACE_CONC:-16 1}; do
      d="$W/trace.$v.c$conc"
      mkdir -p "$d"
      env $(variant_env "$v") STEADYOCR_WORKER_CONCURRENCY=$conc SO_CUPTI_OUT="$d" SO_CUPTI_LAST_S=2 \
        CUDA_INJECTION64_PATH="$B/bin/libso_cupti_trace.so" timeout -k 5 "${TRACE_TIMEOUT:-150}" $SO bench "$F/synth-dev" --models "$F/models" \
        --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json $(variant_flags "$v") \
        >"$d/bench.json" 2>"$d/bench.log"
      bench_line "$d/bench.json" "trace $v c$conc"
      grep -h "cupti_trace" "$d/bench.log" | sort | uniq -c | head -5 | tee -a "$S"
      for f in "$d"/cupti.*.txt; do
        [ -s "$f" ] && sed 's/^/   /' "$f" | tee -a "$S"
      done
      tail -5 "$d/bench.log" | cut -c1-300 | sed 's/^/   log: /' | tee -a "$S"
    done
  done
fi

if want perf; then
  # Where the host's CPU goes with many images in flight: perf (when the machine has it) over one bench, the worker
  # included; the top symbols by self time.
  if command -v perf >/dev/null; then
    for v in ${PERF_VARIANTS:-stream}; do
      env $(variant_env "$v") timeout 300 perf record -F 999 -g -o "$W/perf.$v.data" -- $SO bench \
        "$F/synth-dev" --models "$F/models" --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json \
        $(variant_flags "$v") >"$W/perf.$v.json" 2>"$W/perf.$v.log"
      bench_line "$W/perf.$v.json" "perf $v"
      perf report -i "$W/perf.$v.data" --no-children --sort dso,sym 2>/dev/null | grep -E '^ +[0-9]' | head -45 |
        tee -a "$S"
      perf report -i "$W/perf.$v.data" --no-children --sort comm 2>/dev/null | grep -E '^ +[0-9]' | head -12 | tee -a "$S"
    done
  else
    echo "perf: not on this machine" | tee -a "$S"
  fi
fi

if want peer; then
  for set in $SETS; do device_torch_peer "$set"; done
fi
tar czf "$OUT/stream.tgz" --exclude='*.data' --exclude='*.nsys-rep' --exclude='*.sqlite' -C /tmp stream
