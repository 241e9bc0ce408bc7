#!/bin/bash
# The GPU machine's host and GPU in one `device` call (issue 13): the cpu backend's image groups against the ONNX
# Runtime reference pipeline on the host's cores, the CUDA rung's images in flight, and the PyTorch eager peer.
#   groups: per set and round, ref_ppocr.py --runner ort once, then a cold `steadyocr ocr SET --backend cpu
#           --image-groups G` for each G of IMAGE_GROUPS ("auto": the default, no flag): wall time, peak resident
#           memory and the `ocr:` line; lines of each G against the first (scripts/compare_ocr_lines.py) and
#           ocr_eval's figures.
#   conc:   `bench` of each set four times over (under other names: the same shapes), cuda-fp16, with
#           STEADYOCR_WORKER_CONCURRENCY each of CONCS, alternating over ROUNDS.
#   trace:  the device's timeline (CUPTI) of a 16-in-flight bench of each set four times over (after conc).
#   peer:   ref_ppocr.py --runner torch on each set (device_lib.sh).
#   tests:  test_backends --gtest_filter=$TESTS (the bundle's bin/test_backends), summary and failures.
#   env:    `bench` of each set four times over, cuda-fp16, 16 in flight, once per ENV_VARIANTS entry and round
#           (order reversed every other round), each entry NAME or NAME:ITEM[,ITEM...], an ITEM VAR=VALUE for the
#           environment or --flag=value for bench (e.g. "g1:STEADYOCR_CUDA_GRAPH_ARENAS=1 g4 mem1g:--gpu-mem=1024");
#           the line adds the device memory the process used at the end and the recogniser's time table.
#   lines:  cold `ocr` of each set with the first two ENV_VARIANTS (each process's `ocr:` line: every shape new),
#           compared line by line. One image at a time is an env variant: "one:STEADYOCR_WORKER_CONCURRENCY=1".
# Summary: $OUT/summary.txt; the runs' JSON and logs: $OUT/groups.tgz.
#
# Bundle: scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so [build/libso_cupti_trace.so] -- models \
#   ../shared/data/synth-dev ../shared/data/sroie-dev ../shared/tools/peers ../shared/tools/ocr_eval.py
# Device (repo root, carry [".devbundle"]): STEPS="groups conc peer" IMAGE_GROUPS="1 2 4 8" CONCS="16 24 32" ROUNDS=2 \
#   SETS="synth-dev sroie-dev" scripts/device_groups.sh
set -u
STEPS=${STEPS:-groups conc peer}
GROUPS_=${IMAGE_GROUPS:-1 2 4 8}
CONCS=${CONCS:-16 24 32}
ROUNDS=${ROUNDS:-2}
REPEAT=${REPEAT:-3}
SETS=${SETS:-synth-dev sroie-dev}
OUT=${OUT:-/tmp/groups_out}
W=/tmp/groups
# shellcheck source=scripts/device_lib.sh
. "$(dirname "$0")/device_lib.sh"
device_begin device_groups "$W" "$OUT" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
SO="$B/env.sh $B/bin/steadyocr"

secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

if want groups; then
  for set in $SETS; do
    for round in $(seq 1 "$ROUNDS"); do
      s0=$(date +%s.%N)
      timeout 300 python3 "$F/peers/ref_ppocr.py" "$F/models" "$F/$set" "$W/ort.$set.$round.json" --runner ort \
        >"$W/ort.$set.$round.log" 2>&1
      s1=$(date +%s.%N)
      echo "== $set round $round, $(nproc) cores: ONNX Runtime reference wall $(secs "$s0" "$s1") s," \
        "$(tail -1 "$W/ort.$set.$round.log")" | tee -a "$S"
      for g in $GROUPS_; do
        tag=cpu.$set.g$g.$round
        s0=$(date +%s.%N)
        gflag=(--image-groups "$g")
        [ "$g" = auto ] && gflag=()
        # The process's peak resident memory (its children's rusage, read by a Python parent).
        python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f}")
sys.exit(rc)' "$W/$tag.rss" timeout 300 $B/env.sh $B/bin/steadyocr ocr "$F/$set" --models "$F/models" --backend cpu \
          "${gflag[@]}" --format json -o "$W/$tag.json" >/dev/null 2>"$W/$tag.log"
        rc=$?
        s1=$(date +%s.%N)
        echo "   groups $g: exit $rc, wall $(secs "$s0" "$s1") s, peak RSS $(cat "$W/$tag.rss" 2>/dev/null) MB," \
          "$(tr '\r' '\n' <"$W/$tag.log" | grep -E '^ocr: ' | tail -1)" | tee -a "$S"
        if [ "$g" != "$(echo $GROUPS_ | cut -d' ' -f1)" ] && [ "$round" = 1 ]; then
          python3 "$REPO/scripts/compare_ocr_lines.py" "$W/cpu.$set.g$(echo $GROUPS_ | cut -d' ' -f1).1.json" \
            "$W/$tag.json" "$F/$set" "groups $g against $(echo $GROUPS_ | cut -d' ' -f1)" 2>&1 | tail -1 |
            sed 's/^/     /' | tee -a "$S"
        fi
      done
    done
    device_ocr_eval "$set" "$W/cpu.$set.g$(echo $GROUPS_ | cut -d' ' -f1).1.json" "steadyocr cpu"
    echo | tee -a "$S"
  done
fi

if want conc || want trace; then
  for set in $SETS; do device_four "$set" "$W/$set.x4"; done
fi
if want conc; then
  for round in $(seq 1 "$ROUNDS"); do
    for set in $SETS; do
      for c in $CONCS; do
        tag=conc.$set.c$c.$round
        STEADYOCR_WORKER_CONCURRENCY=$c timeout -k 5 200 $SO bench "$W/$set.x4" --models "$F/models" \
          --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json >"$W/$tag.json" 2>"$W/$tag.log"
        device_bench_line "$W/$tag.json" "$tag"
      done
    done
  done
fi

if want trace; then
  # The device's own timeline (bin/libso_cupti_trace.so in the bundle, loaded into the worker by the driver): the
  # share of the last 2 s any kernel ran, kernels at once, the kernels and runtime calls by time; 16 in flight.
  for set in $SETS; do
    d="$W/trace.$set"
    mkdir -p "$d"
    STEADYOCR_WORKER_CONCURRENCY=16 SO_CUPTI_OUT="$d" SO_CUPTI_LAST_S=2 CUDA_INJECTION64_PATH="$B/bin/libso_cupti_trace.so" \
      timeout -k 5 150 $SO bench "$W/$set.x4" --models "$F/models" --backend cuda-fp16 --require-gpu --warmup 1 \
      --repeat "$REPEAT" --json >"$d/bench.json" 2>"$d/bench.log"
    echo "== trace $set x4, 16 in flight: $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(f\"{r['images_per_s']:.1f} images/s\")" "$d/bench.json" 2>&1 | tail -1)" | tee -a "$S"
    for f in "$d"/cupti.*.txt; do
      [ -s "$f" ] && head -60 "$f" | sed 's/^/   /' | tee -a "$S"
    done
  done
fi

# Runs "$@" as ENV_VARIANTS entry $1 says (NAME or NAME:ITEM,ITEM...; an ITEM VAR=VALUE is set in the environment,
# an ITEM --flag=value is added to the command's flags).
with_variant() {
  local spec=$1 kv item
  shift
  local -a envs=() flags=()
  if [[ "$spec" == *:* ]]; then
    IFS=, read -ra kv <<<"${spec#*:}"
    for item in "${kv[@]}"; do
      if [[ "$item" == --* ]]; then flags+=("$item"); else envs+=("$item"); fi
    done
  fi
  env "${envs[@]}" "$@" "${flags[@]}"
}

if want tests; then
  (cd "$B" && STEADYOCR_MODELS=$F/models STEADYOCR_SHARED_DATA=$F STEADYOCR_TEST_DATA=$REPO/tests/data \
    timeout 300 ./env.sh bin/test_backends --gtest_filter="${TESTS:-CudaRuntime.*:ArenaGraphs.*}") >"$W/tests.log" 2>&1
  echo "== tests (${TESTS:-CudaRuntime.*:ArenaGraphs.*}): exit $?; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?|tests? from .* ran' \
    "$W/tests.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E '^\[  FAILED  \]|GraphsReplay|GraphReplay' "$W/tests.log" | head -20 | tee -a "$S"
fi

if want env || want lines; then
  for set in $SETS; do [ -d "$W/$set.x4" ] || device_four "$set" "$W/$set.x4"; done
fi
if want env; then
  for round in $(seq 1 "$ROUNDS"); do
    order=$ENV_VARIANTS
    [ $((round % 2)) = 0 ] && order=$(echo $ENV_VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
    for set in $SETS; do
      for v in $order; do
        tag=env.$set.${v%%:*}.$round
        STEADYOCR_WORKER_CONCURRENCY=${CONC:-16} with_variant "$v" timeout -k 5 200 $SO bench "$W/$set.x4" \
          --models "$F/models" --backend cuda-fp16 --require-gpu --warmup 1 --repeat "$REPEAT" --json \
          >"$W/$tag.json" 2>"$W/$tag.log"
        device_bench_line "$W/$tag.json" "$tag"
        python3 -c "import json,sys; r=json.load(open(sys.argv[1])); m=r.get('gpu_memory',{}).get('end',{}); \
t=r['time_table_ms']['rec']; print(f\"  device used {m.get('device_used',0):.0f} MiB (at start {m.get('device_used_at_start',0):.0f}); \
rec per image: acquire {t['acquire']:.2f}, compute {t['compute']:.2f}, sync {t['sync']:.2f}, run {t['run']:.2f} ms\")" \
          "$W/$tag.json" 2>/dev/null | tee -a "$S"
      done
    done
  done
fi
if want lines; then
  set -- $ENV_VARIANTS
  for set in $SETS; do
    for v in "$1" "$2"; do
      with_variant "$v" timeout -k 5 200 $SO ocr "$F/$set" --models "$F/models" --backend cuda-fp16 --require-gpu \
        --format json -o "$W/lines.$set.${v%%:*}.json" >/dev/null 2>"$W/lines.$set.${v%%:*}.log"
      # The cold process's own figure (every shape new): its `ocr:` line.
      echo "   cold ocr $set ${v%%:*}: exit $?, $(tr '\r' '\n' <"$W/lines.$set.${v%%:*}.log" | grep -E '^ocr: ' | tail -1)" |
        tee -a "$S"
    done
    python3 "$REPO/scripts/compare_ocr_lines.py" "$W/lines.$set.${1%%:*}.json" "$W/lines.$set.${2%%:*}.json" "$F/$set" \
      "$set: ${2%%:*} against ${1%%:*}" 2>&1 | tail -1 | tee -a "$S"
    device_ocr_eval "$set" "$W/lines.$set.${2%%:*}.json" "${2%%:*}"
    echo | tee -a "$S"
  done
fi

if want peer; then
  for set in $SETS; do device_torch_peer "$set"; done
fi
tar czf "$OUT/groups.tgz" -C /tmp groups 2>/dev/null
