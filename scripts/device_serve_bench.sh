#!/bin/bash
# `steadyocr serve` on the GPU machine, in one `device` run: hey against the server at several concurrency levels on
# the synth-dev images (throughput, p50/p99 latency per level), next to `steadyocr bench` on the same images and
# rung (with and without batching across images), and the PyTorch peer; then the faults under load (kill -9 of the
# CUDA worker; a device that keeps faulting: step down, rung header, climb back). Everything lands in $OUT
# (summary.txt, serve_bench.tgz with every CSV and log).
#
# Bundle first, here (hey travels as a binary; the peers for PEERS=1):
#   scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so /usr/bin/hey -- models \
#       ../shared/data/synth-dev ../shared/tools/peers
# then with carry [".devbundle"]:  scripts/device_serve_bench.sh
#   env: LEVELS="1 8 32 128" DURATION=20 (s per level) PEERS=1 FAULTS=1 SERVE_ARGS="" BENCH=1 BATCH_SLOTS="16"
#   ARENA=1 (the detector's arena per input pixel, from the CUDA backend's debug log)
# Also runs here on the 2-core machine without a bundle: BUNDLE=none LEVELS="1 4 16" PEERS=0 FAULTS=0
#   SERVE_ARGS="--backend cpu" (uses build/steadyocr, models/ and ../shared/data).
set -uo pipefail
BUNDLE=${BUNDLE:-${1:-.devbundle/bundle.tgz}}
LEVELS=${LEVELS:-"1 8 32 128"}
DURATION=${DURATION:-20}
PEERS=${PEERS:-1}
FAULTS=${FAULTS:-1}
BENCH=${BENCH:-1}
BATCH_SLOTS=${BATCH_SLOTS:-"16"}
ARENA=${ARENA:-1}
SERVE_ARGS=${SERVE_ARGS:-}
SET=${SET:-synth-dev}
OUT=${OUT:-/tmp/serve_bench_out}
R=/tmp/serve_bench_res
rm -rf "$R" && mkdir -p "$R" "$OUT"
if [ "$BUNDLE" = none ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  RUN=""
  SO="$here/build/steadyocr"
  HEY=$(command -v hey)
  MODELS="$here/models"
  DATA="$here/../shared/data/$SET"
  PEERDIR="$here/../shared/tools/peers"
else
  rm -rf /tmp/bundle
  tar xzf "$BUNDLE" -C /tmp || { echo "cannot unpack $BUNDLE" | tee "$OUT/summary.txt"; exit 1; }
  RUN=/tmp/bundle/env.sh
  SO=/tmp/bundle/bin/steadyocr
  HEY=/tmp/bundle/bin/hey
  MODELS=/tmp/bundle/files/models
  DATA=/tmp/bundle/files/$SET
  PEERDIR=/tmp/bundle/files/peers
fi
S=$R/summary.txt
mapfile -t IMAGES < <(ls "$DATA"/*.jpg | sort)
{
  echo "# steadyocr serve bench $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  $RUN "$SO" --version 2>&1 | sed 's/^/steadyocr: /'
  echo "images: ${#IMAGES[@]} from $SET; levels: $LEVELS; $DURATION s per level; serve args: '$SERVE_ARGS'"
} | tee "$S"

if [ "$BENCH" = 1 ]; then
  # A first process on the machine runs slower (seen: every first bench of a run 5-10 % below the next ones): one
  # untimed bench first, so that the variants compare fairly.
  # shellcheck disable=SC2086
  $RUN "$SO" bench "$DATA" --models "$MODELS" $SERVE_ARGS --warmup 1 --repeat 1 >"$R/bench_first.txt" 2>&1
  echo "bench (first process, not compared): $(grep -E 'images/s' "$R/bench_first.txt" | head -1)" | tee -a "$S"
  # shellcheck disable=SC2086
  $RUN "$SO" bench "$DATA" --models "$MODELS" $SERVE_ARGS --warmup 1 --repeat 3 >"$R/bench.txt" 2>"$R/bench.log"
  echo "bench (batching across images on) exit $?:" | tee -a "$S"
  grep -E "images/s|img/s|rung|backend" "$R/bench.txt" | head -8 | sed 's/^/    /' | tee -a "$S"
  # shellcheck disable=SC2086
  $RUN "$SO" bench "$DATA" --models "$MODELS" $SERVE_ARGS --no-cross-batch --warmup 1 --repeat 3 \
    >"$R/bench_nobatch.txt" 2>"$R/bench_nobatch.log"
  echo "bench --no-cross-batch exit $?:" | tee -a "$S"
  grep -E "images/s|img/s|rung|backend" "$R/bench_nobatch.txt" | head -8 | sed 's/^/    /' | tee -a "$S"
  for slots in $BATCH_SLOTS; do
    # shellcheck disable=SC2086
    $RUN "$SO" bench "$DATA" --models "$MODELS" $SERVE_ARGS --batch-slots "$slots" --warmup 1 --repeat 3 \
      >"$R/bench_slots$slots.txt" 2>"$R/bench_slots$slots.log"
    echo "bench --batch-slots $slots exit $?:" | tee -a "$S"
    grep -E "images/s" "$R/bench_slots$slots.txt" | head -2 | sed 's/^/    /' | tee -a "$S"
  done
fi

if [ "$ARENA" = 1 ]; then
  # The detector's working memory per input pixel (admission by memory, server/admission.cpp): the arena of each
  # detector shape the CUDA backend plans, from its debug log.
  $RUN "$SO" --log-level debug ocr "${IMAGES[@]:0:6}" --models "$MODELS" --backend cuda-fp32 --format json \
    -o "$R/arena.json" >"$R/arena.log" 2>&1
  $RUN "$SO" --log-level debug ocr "${IMAGES[@]:0:6}" --models "$MODELS" --backend cuda-fp16 --format json \
    -o "$R/arena16.json" >>"$R/arena.log" 2>&1
  echo "detector arenas (planned det shapes):" | tee -a "$S"
  grep -E "planned det" "$R/arena.log" | sed -E 's/.*(cuda-fp[0-9]+): planned det for \[([0-9,]+)\].*\(([0-9]+) KiB arena\).*/\1 \2 \3/' |
    awk '{split($2, d, ","); px = d[3] * d[4]; printf "    %s det [%s]: %d KiB arena, %.0f bytes per input pixel\n", $1, $2, $3, $3 * 1024 / px}' |
    sort -u | head -16 | tee -a "$S"
fi

pid=""
start_server() {  # tag, extra args...; env FAULT for STEADYOCR_FAULT
  local tag=$1
  shift
  # shellcheck disable=SC2086
  env ${FAULT:+STEADYOCR_FAULT=$FAULT} $RUN "$SO" --log-level warn serve --port 0 --models "$MODELS" --max-queue 4096 \
    --deadline-ms 120000 $SERVE_ARGS "$@" >"$R/$tag.serve.out" 2>"$R/$tag.serve.log" &
  pid=$!
  port=""
  for _ in $(seq 1 900); do
    port=$(sed -nE 's|.*listening on http://[^:]+:([0-9]+).*|\1|p' "$R/$tag.serve.out" | head -1)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
  done
  url="http://127.0.0.1:$port"
  echo "$tag: server pid $pid on $url: $(curl -s "$url/readyz" | head -c 300)" | tee -a "$S"
}
stop_server() {
  [ -n "$pid" ] || return
  kill -TERM $pid 2>/dev/null
  wait $pid 2>/dev/null
  echo "  server exit $?" | tee -a "$S"
  pid=""
}
trap 'stop_server' EXIT

# c clients for DURATION seconds: min(c, 32) hey processes, each on its own image with c/p clients; every request's
# status and latency in CSV files merged below.
load() {  # tag c duration
  local tag=$1 c=$2 d=$3 p j
  if [ "$c" = 1 ]; then  # one client: every image in turn, d / images seconds each
    for ((j = 0; j < ${#IMAGES[@]}; j++)); do
      "$HEY" -z "$(python3 -c "print(max(0.2, $d / ${#IMAGES[@]}))")s" -c 1 -m POST -T image/jpeg -D "${IMAGES[j]}" \
        -o csv "$url/v1/ocr" >"$R/${tag}_$j.csv" 2>/dev/null
    done
    return
  fi
  p=$((c < 32 ? c : 32))
  for ((j = 0; j < p; j++)); do
    "$HEY" -z "${d}s" -c $((c / p)) -m POST -T image/jpeg -D "${IMAGES[j % ${#IMAGES[@]}]}" -o csv \
      "$url/v1/ocr" >"$R/${tag}_$j.csv" 2>/dev/null &
  done
  wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null
}
summarise() {  # tag c duration
  python3 - "$R" "$1" "$2" "$3" <<'PY'
import csv, glob, sys
r, tag, c, d = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
lat, codes = [], {}
for f in glob.glob(f"{r}/{tag}_*.csv"):
    for row in csv.DictReader(open(f)):
        code = row["status-code"]
        codes[code] = codes.get(code, 0) + 1
        if code == "200":
            lat.append(float(row["response-time"]) * 1000)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
print(f"  c={c}: {len(lat) / d:.1f} img/s ok, p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, statuses {codes}")
PY
}
metric() {  # name-regex
  curl -s "$url/metrics" | grep -E "$1" | grep -v '^#' | head -12 | sed 's/^/    /'
}

# The device's used memory every 200 ms while the server runs (its worker is the only process on the GPU). Started
# from a subshell, so that it is not one of this shell's jobs, which load() waits for.
(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$R/serve.smi" 2>/dev/null &
  echo $! >"$R/serve.smi.pid")
start_server serve
# Warm: each image a few times (plans made), as bench's --warmup.
for img in "${IMAGES[@]}"; do curl -s -o /dev/null -X POST --data-binary @"$img" -H 'Content-Type: image/jpeg' "$url/v1/ocr" & done
wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null
load warm 32 5
for c in $LEVELS; do
  load "c$c" "$c" "$DURATION"
  summarise "c$c" "$c" "$DURATION" | tee -a "$S"
done
echo "  batching across requests (per model call, in the worker; per image, in the server):" | tee -a "$S"
metric 'steadyocr_image_(det_batch_images|rec_batch_rows)_(sum|count)|steadyocr_rec_calls_total|steadyocr_gpu_memory' |
  tee -a "$S"
stop_server
kill "$(cat "$R/serve.smi.pid")" 2>/dev/null
echo "  device memory used while serving: peak $(sort -n "$R/serve.smi" | tail -1) MiB, first sample" \
  "$(head -1 "$R/serve.smi") MiB (nvidia-smi, whole device)" | tee -a "$S"

if [ "$PEERS" = 1 ] && [ -f "$PEERDIR/ref_ppocr.py" ]; then
  echo "--- PyTorch peer (ref_ppocr.py --runner torch, eager, cuDNN) on the same images ---" | tee -a "$S"
  for runner in "torch" "torch --fp16"; do
    # shellcheck disable=SC2086
    (cd "$PEERDIR" && timeout 400 python3 ref_ppocr.py "$MODELS" "$DATA" "$R/peer_$(echo $runner | tr -d ' -').json" \
      --runner $runner --repeat 2 2>&1 | tail -2 | sed "s/^/  $runner: /") | tee -a "$S"
  done
fi

if [ "$FAULTS" = 1 ]; then
  echo "--- faults under load ---" | tee -a "$S"
  # kill -9 of the CUDA worker process with 32 clients on: no request lost, the restart counted.
  start_server kill
  load kwarm 16 3
  load kill 32 20 &
  loader=$!
  sleep 6
  wpid=$(pgrep -P $pid -f __worker | head -1)
  [ -z "$wpid" ] && wpid=$(pgrep -f "steadyocr __worker" | head -1)
  echo "  kill -9 worker $wpid at $(date -u +%T)" | tee -a "$S"
  kill -9 "$wpid"
  wait $loader
  summarise kill 32 20 | tee -a "$S"
  metric 'steadyocr_worker_(restarts|losses|jobs_retried)_total|steadyocr_jobs_retried_total|steadyocr_http_requests_total\{route="/v1/ocr"'
  metric 'steadyocr_worker_(restarts|losses|jobs_retried)_total' >>"$S"
  stop_server
  # A device that faults for 25 s, then heals: every worker of the top rung dies at its 2nd det call (a real
  # illegal address) until then; the engine steps down to the next rung, the re-probe climbs back once it heals.
  FAULT='illegal_address@det:2!~25' start_server sticky --probe-interval-ms 500
  load sticky 32 40 &
  loader=$!
  : >"$R/sticky_rungs.txt"
  for _ in $(seq 1 40); do
    echo "$(date -u +%T) $(curl -s -D - -o /dev/null "$url/readyz" | grep -iE '^HTTP|x-steadyocr-rung' | tr -d '\r' | tr '\n' ' ') $(curl -s "$url/readyz" | head -c 160)" >>"$R/sticky_rungs.txt"
    sleep 1
  done
  wait $loader
  summarise sticky 32 40 | tee -a "$S"
  echo "  rung over time (readyz status, X-Steadyocr-Rung), one line a second, first and every 5th:" | tee -a "$S"
  awk 'NR == 1 || NR % 5 == 0' "$R/sticky_rungs.txt" | cut -c1-200 | sed 's/^/    /' | tee -a "$S"
  metric 'steadyocr_fallback_total|steadyocr_worker_(restarts|losses|jobs_retried)_total|steadyocr_rung_in_use' | tee -a "$S"
  stop_server
fi

cp "$S" "$OUT/summary.txt"
tar czf "$OUT/serve_bench.tgz" -C /tmp serve_bench_res
echo "results: $OUT/summary.txt, $OUT/serve_bench.tgz"
