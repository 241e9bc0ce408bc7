#!/usr/bin/env bash
# Load test of `steadyocr serve` with hey (Debian package): measures the server's capacity on one image (requests/s
# with one client at a time), then offers twice that for DURATION seconds and checks that every request is answered,
# sent = ok + rejected, the only 5xx is 503 SERVER_BUSY, the p99 of the rejections is under 10 ms, and the RSS stays
# flat. Writes a summary (and hey's per-request CSV) under OUT_DIR.
#
#   scripts/serve_load.sh [BUILD_DIR] [IMAGE]      env: DURATION=30 OUT_DIR=/tmp/serve_load SERVE_ARGS="--backend cpu"
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
image=${2:-tests/data/engine/doc_0000.jpg}
duration=${DURATION:-30}
out=${OUT_DIR:-/tmp/serve_load}
serve_args=${SERVE_ARGS:---backend cpu}
mkdir -p "$out"
command -v hey >/dev/null || { echo "hey not found: apt-get install -y --no-install-recommends hey"; exit 2; }

# shellcheck disable=SC2086
"$build/steadyocr" serve --port 0 --models models $serve_args --max-queue 4 --deadline-ms 30000 \
  >"$out/serve.out" 2>"$out/serve.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  port=$(sed -nE 's|.*listening on http://[^:]+:([0-9]+).*|\1|p' "$out/serve.out" | head -1)
  [[ -n $port ]] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
url="http://127.0.0.1:$port/v1/ocr"
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

# Capacity: one client at a time for 10 s.
hey -z 10s -c 1 -m POST -T image/jpeg -D "$image" -o csv "$url" >"$out/capacity.csv"
capacity=$(python3 -c "
import csv,sys
rows=list(csv.DictReader(open('$out/capacity.csv')))
ok=[r for r in rows if r['status-code']=='200']
print(len(ok)/10.0)")
echo "capacity: $capacity requests/s (one client)"
rss_before=$(rss)

# Twice the capacity: 8 clients, each at a quarter of 2x capacity (hey -q is per client).
clients=8
qps=$(python3 -c "print(max(1, round(2*$capacity/$clients + 0.4999)))")
hey -z "${duration}s" -c $clients -q "$qps" -m POST -T image/jpeg -D "$image" -o csv "$url" >"$out/load.csv"
rss_after=$(rss)
metrics=$(curl -s "http://127.0.0.1:$port/metrics")

python3 - "$out/load.csv" "$capacity" "$clients" "$qps" "$duration" "$rss_before" "$rss_after" <<'EOF' | tee "$out/summary.txt"
import csv, sys
path, capacity, clients, qps, duration, rss0, rss1 = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
by = {}
for r in rows:
    by.setdefault(r['status-code'], []).append(float(r['response-time']) * 1000)
def p(v, q):
    v = sorted(v); return v[min(len(v) - 1, int(q * len(v)))] if v else float('nan')
sent = len(rows); ok = len(by.get('200', [])); rejected = len(by.get('503', []))
other = {k: len(v) for k, v in by.items() if k not in ('200', '503')}
print(f"offered: {clients} clients x {qps}/s = {int(clients)*int(qps)}/s for {duration}s (capacity {capacity}/s)")
print(f"sent {sent} = ok {ok} + rejected {rejected} + other {other}")
print(f"ok latency ms: p50 {p(by.get('200',[]),.5):.1f} p99 {p(by.get('200',[]),.99):.1f}")
print(f"503 latency ms: p50 {p(by.get('503',[]),.5):.2f} p99 {p(by.get('503',[]),.99):.2f} max {max(by.get('503',[0])):.2f}")
print(f"rss kB: before {rss0} after {rss1} ({(int(rss1)-int(rss0))/max(1,int(rss0))*100:+.1f}%)")
fails = []
if other: fails.append(f"statuses other than 200/503: {other}")
if sent != ok + rejected: fails.append("sent != ok + rejected")
if rejected and p(by['503'], .99) >= 10: fails.append("p99 of rejections >= 10 ms")
print("PASS" if not fails else "FAIL: " + "; ".join(fails))
EOF
echo "$metrics" | grep -E '^steadyocr_(http_requests_total|queue_depth|deadline_dropped_total)' | tee -a "$out/summary.txt"
