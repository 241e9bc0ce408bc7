#!/usr/bin/env bash
# Tests the image scripts/build_image.sh made: starts it, waits for /readyz, reads examples/sample_doc.jpg over HTTP
# (POST /v1/ocr, and POST /v2/models/ocr/infer as KServe sends it) and checks every line against the sample's
# labels, runs the image's HEALTHCHECK, checks the server runs as the image's non-root user, then sends SIGTERM while
# a batch is in flight and expects a clean drain: the batch answered 200, the drain logged, exit 0.
#
# Where podman can run containers here it runs the image (read-only root, /tmp a tmpfs, as Kubernetes runs it with
# deploy/). Where it cannot, it says so in one line and runs the same test on the image's root filesystem (buildah
# mount of the image) with chroot, as the image's user (chroot --userspec), with the image's environment.
#
#   scripts/test_image.sh [IMAGE]          as root (default IMAGE localhost/steadyocr:<version of build/steadyocr>)
#
# Environment: TEST_IMAGE_MODE=podman|chroot forces a path; READY_TIMEOUT_S (default 300); OUT_DIR (default
# out/image-test: the server's log, the responses).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
OUT_DIR=$(realpath -m "${OUT_DIR:-out/image-test}")
READY_TIMEOUT_S=${READY_TIMEOUT_S:-300}
SAMPLE=examples/sample_doc.jpg
LABELS=examples/sample_doc.labels.txt
PY=/usr/bin/python3
T0=$(date +%s)

say() { echo "== test_image: $* ($(($(date +%s) - T0)) s)"; }
die() {
  echo "test_image: FAIL: $*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || die "must run as root (buildah's image storage, chroot): sudo scripts/test_image.sh"
command -v buildah >/dev/null 2>&1 || die "buildah not found: apt-get install --no-install-recommends buildah"
command -v curl >/dev/null 2>&1 || die "curl not found: apt-get install curl (scripts/setup.sh installs it)"
[[ -x $PY ]] || die "$PY not found: apt-get install python3"
if [[ -n ${1:-} ]]; then
  IMAGE=$1
else
  v=$(BUILD_DIR=${BUILD_DIR:-build} && "$BUILD_DIR/steadyocr" --version 2>/dev/null | head -1 | tr -d '[:space:]' || true)
  IMAGE=localhost/steadyocr:${v:-0.1.0}
fi
buildah inspect --type image "$IMAGE" >/dev/null 2>&1 || die "no image $IMAGE: build it with scripts/build_image.sh (or name it)"
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/*
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE=http://127.0.0.1:$PORT
CONFIG=$(buildah inspect --type image "$IMAGE" | $PY -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["Docker"]["config"]))')
jget() { $PY -c 'import json,sys; c=json.loads(sys.argv[1]); v=c.get(sys.argv[2]); print("\n".join(v) if isinstance(v, list) else (v or ""))' "$CONFIG" "$1"; }
IMAGE_USER=$(jget User)
[[ -n $IMAGE_USER && ${IMAGE_USER%%:*} != 0 && ${IMAGE_USER%%:*} != root ]] || die "the image's user is '${IMAGE_USER:-unset}': it must be a non-root uid"
mapfile -t ENTRYPOINT < <(jget Entrypoint)
[[ ${ENTRYPOINT[*]} == */steadyocr\ serve ]] || die "the image's ENTRYPOINT is '${ENTRYPOINT[*]}', not steadyocr serve"
HC_OK=$($PY -c 'import json,sys; t=json.loads(sys.argv[1]).get("Healthcheck", {}).get("Test") or []; print(int((t[:1] == ["CMD-SHELL"] and len(t) == 2) or (t[:1] == ["CMD"] and len(t) > 1)))' "$CONFIG")
[[ $HC_OK == 1 ]] || die "the image's HEALTHCHECK is malformed ($(jget Healthcheck)): CMD-SHELL takes one shell command, CMD an argv"
SERVE_ARGS=(--host 127.0.0.1 --port "$PORT" --models /opt/steadyocr/models --drain-s 20 --threads 2)

# --- the two ways of running it; each defines start_server, server_uid, stop_server (SIGTERM), wait_exit (sets
# EXIT_RC), server_log, healthcheck, server_alive, cleanup_path.
CTR_NAME=steadyocr-test-$$
PODMAN_GLOBAL=() # podman's own options (--runtime)
PODMAN_OPTS=()   # options of podman run
podman_try() { # can a container of the image run here with PODMAN_GLOBAL and PODMAN_OPTS? (else its error in PODMAN_ERR)
  if timeout 120 podman "${PODMAN_GLOBAL[@]}" run --rm "${PODMAN_OPTS[@]}" --entrypoint /bin/true "$IMAGE" \
    >/dev/null 2>"$OUT_DIR/podman-try.err"; then
    return 0
  fi
  PODMAN_ERR=$(grep -v systemd "$OUT_DIR/podman-try.err" | tail -1)
  return 1
}
choose_mode() {
  if [[ ${TEST_IMAGE_MODE:-} == chroot ]]; then
    MODE=chroot WHY="TEST_IMAGE_MODE=chroot"
    return
  fi
  if ! command -v podman >/dev/null 2>&1; then
    MODE=chroot WHY="podman is not installed (apt-get install podman)"
    return
  fi
  if podman_try; then
    MODE=podman WHY="podman runs containers here with its defaults"
    return
  fi
  local first=$PODMAN_ERR
  # Inside another container (as this project's machines are): podman's default rlimits exceed the hard limits it
  # may set, and crun refuses a cgroup v1/v2 hybrid, which runc accepts.
  PODMAN_OPTS=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
  command -v runc >/dev/null 2>&1 && PODMAN_GLOBAL=(--runtime runc)
  if podman_try; then
    MODE=podman WHY="podman runs containers here with ${PODMAN_GLOBAL[*]} ${PODMAN_OPTS[*]} (with its defaults: $first)"
    return
  fi
  MODE=chroot WHY="podman cannot run containers here: $first; with ${PODMAN_GLOBAL[*]:-crun} and lower rlimits: $PODMAN_ERR"
  PODMAN_GLOBAL=() PODMAN_OPTS=()
}
choose_mode
[[ ${TEST_IMAGE_MODE:-} == podman && $MODE != podman ]] && die "TEST_IMAGE_MODE=podman but $WHY"
if [[ $MODE == podman ]]; then
  echo "test_image: running the image with podman: $WHY"
else
  echo "test_image: containers cannot run here ($WHY); testing the image's root filesystem with chroot instead"
fi

if [[ $MODE == podman ]]; then
  start_server() {
    podman "${PODMAN_GLOBAL[@]}" run -d --name "$CTR_NAME" "${PODMAN_OPTS[@]}" --read-only --tmpfs /tmp \
      -p "127.0.0.1:$PORT:8080" "$IMAGE" --host 0.0.0.0 --port 8080 "${SERVE_ARGS[@]:4}" >"$OUT_DIR/container-id" 2> >(grep -v systemd >&2)
  }
  server_uid() { podman exec "$CTR_NAME" sh -c 'grep ^Uid: /proc/1/status' | awk '{print $2}'; }
  stop_server() { podman kill --signal TERM "$CTR_NAME" >/dev/null; }
  wait_exit() { EXIT_RC=$(timeout 60 podman wait "$CTR_NAME"); }
  server_log() { podman logs "$CTR_NAME" >"$OUT_DIR/server.log" 2>&1; }
  healthcheck() { # `podman healthcheck run` prints "healthy" and exits 0, or exits 1
    local out rc=0
    out=$(podman "${PODMAN_GLOBAL[@]}" healthcheck run "$CTR_NAME" 2>&1) || rc=$?
    grep -v systemd <<<"$out" || true
    return $rc
  }
  server_alive() { [[ $(podman inspect --format '{{.State.Running}}' "$CTR_NAME" 2>/dev/null) == true ]]; }
  cleanup_path() { podman rm -f "$CTR_NAME" >/dev/null 2>&1 || true; }
else
  MNT_CTR=$(buildah from "$IMAGE")
  ROOT=$(buildah mount "$MNT_CTR")
  MOUNTS=()
  for d in proc dev; do
    mount --bind "/$d" "$ROOT/$d" # /proc for /proc/self/exe (the engine starts itself as its worker)
    MOUNTS+=("$ROOT/$d")
  done
  mapfile -t IMAGE_ENV < <(jget Env)
  SERVER_PID=""
  start_server() {
    (cd "$ROOT" && exec chroot --userspec="$IMAGE_USER" "$ROOT" /usr/bin/env -i "${IMAGE_ENV[@]}" \
      "${ENTRYPOINT[@]}" "${SERVE_ARGS[@]}" >"$OUT_DIR/server.log" 2>&1) &
    SERVER_PID=$!
  }
  server_uid() { awk '/^Uid:/ {print $2}' "/proc/$SERVER_PID/status"; }
  stop_server() { kill -TERM "$SERVER_PID"; }
  wait_exit() { # the server is this shell's child: wait for it here, not in a subshell
    EXIT_RC=0
    wait "$SERVER_PID" || EXIT_RC=$?
    SERVER_PID=""
  }
  server_log() { :; }
  # The image's HEALTHCHECK command, run in its root as its user.
  healthcheck() {
    local hc
    hc=$($PY -c 'import json,sys; t=json.loads(sys.argv[1])["Healthcheck"]["Test"]; print(t[1] if t[0] == "CMD-SHELL" else " ".join(t[1:]))' "$CONFIG")
    chroot --userspec="$IMAGE_USER" "$ROOT" /usr/bin/env -i "${IMAGE_ENV[@]}" /bin/sh -c "${hc//8080/$PORT}"
  }
  server_alive() { [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; }
  cleanup_path() {
    [[ -n $SERVER_PID ]] && kill -KILL "$SERVER_PID" 2>/dev/null
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"; done
    buildah rm "$MNT_CTR" >/dev/null 2>&1 || true
  }
fi
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  server_log 2>/dev/null || true
  cleanup_path
  if ((rc != 0)); then
    echo "test_image: FAILED ($MODE path); the server's log: $OUT_DIR/server.log" >&2
    tail -5 "$OUT_DIR/server.log" 2>/dev/null | sed 's/^/   /' >&2 || true
  fi
  exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT TERM

say "start $IMAGE ($MODE), port $PORT"
start_server
t=$(date +%s)
code=""
while (($(date +%s) - t < READY_TIMEOUT_S)); do
  code=$(curl -s -o "$OUT_DIR/readyz.json" -w '%{http_code}' "$BASE/readyz" || true)
  [[ $code == 200 ]] && break
  server_alive || die "the server exited before it was ready (see $OUT_DIR/server.log)"
  sleep 1
done
[[ $code == 200 ]] || die "/readyz not 200 within ${READY_TIMEOUT_S} s (last: ${code:-no answer}; body $OUT_DIR/readyz.json)"
ready_line=$($PY - "$OUT_DIR/readyz.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
falls = ", ".join(f"{f['from']}->{f['to']} {f['reason']}" for f in r["fallbacks"]) or "none"
print(f"rung {r['rung']} (requested {r['requested_rung']}); fallbacks: {falls}")
PY
)
say "ready: $ready_line"

uid=$(server_uid)
[[ $uid == "${IMAGE_USER%%:*}" ]] || die "the server runs as uid $uid, not the image's user $IMAGE_USER"
say "the server runs as uid $uid (the image's user $IMAGE_USER)"
hc_out=$(healthcheck) || die "the image's HEALTHCHECK failed on a ready server: $hc_out"
say "HEALTHCHECK (curl /readyz) passes"

curl -sS -o "$OUT_DIR/v1_ocr.json" -w '%{http_code}\n' --data-binary @"$SAMPLE" -H 'Content-Type: image/jpeg' "$BASE/v1/ocr" >"$OUT_DIR/v1_ocr.code"
[[ $(cat "$OUT_DIR/v1_ocr.code") == 200 ]] || die "POST /v1/ocr answered $(cat "$OUT_DIR/v1_ocr.code"): $(head -c 300 "$OUT_DIR/v1_ocr.json")"
$PY - "$OUT_DIR/v1_ocr.json" "$SAMPLE" "$OUT_DIR/v2_request.json" <<'PY'
import base64, json, sys
res, sample, req = sys.argv[1:]
json.dump({"id": "image-test", "inputs": [{"name": "IMAGE", "shape": [1], "datatype": "BYTES",
          "data": [base64.b64encode(open(sample, "rb").read()).decode()]}]}, open(req, "w"))
PY
curl -sS -o "$OUT_DIR/v2_infer.json" -w '%{http_code}\n' --data-binary @"$OUT_DIR/v2_request.json" \
  -H 'Content-Type: application/json' "$BASE/v2/models/ocr/infer" >"$OUT_DIR/v2_infer.code"
[[ $(cat "$OUT_DIR/v2_infer.code") == 200 ]] || die "POST /v2/models/ocr/infer answered $(cat "$OUT_DIR/v2_infer.code"): $(head -c 300 "$OUT_DIR/v2_infer.json")"
$PY - "$OUT_DIR/v1_ocr.json" "$OUT_DIR/v2_infer.json" "$LABELS" <<'PY' || die "the text read over HTTP is not the sample's (responses in $(dirname "$OUT_DIR/x"))"
import json, sys
v1_path, v2_path, labels_path = sys.argv[1:]
norm = lambda t: t.replace(" ", "").replace("\uff1a", ":")
truth = [norm(x["transcription"]) for x in json.loads(open(labels_path, encoding="utf-8").read().split("\t", 1)[1])]
v1 = json.load(open(v1_path))
got = [norm(l["text"]) for l in v1["lines"]]
v2 = json.load(open(v2_path))
out = v2["outputs"][0]
v2_result = json.loads(out["data"][0]) if isinstance(out["data"][0], str) else out["data"][0]
got2 = [norm(l["text"]) for l in v2_result["lines"]]
print(f"   /v1/ocr: {len(got)} lines on rung {v1['rung']} in {v1['timings_ms']['total']:.0f} ms; "
      f"first {v1['lines'][0]['text']!r}, sixth {v1['lines'][5]['text']!r}")
print(f"   /v2/models/ocr/infer: model {v2['model_name']} version {v2['model_version']} id {v2.get('id')}, {len(got2)} lines")
ok = True
if got != truth:
    missing = [t for t in truth if t not in got]
    extra = [t for t in got if t not in truth]
    print(f"   /v1/ocr lines differ from the labels: missing {missing}, unexpected {extra}")
    ok = False
if got2 != got:
    print(f"   /v2 infer read other lines than /v1/ocr: {got2}")
    ok = False
if v2.get("id") != "image-test" or v2["model_name"] != "ocr":
    print("   /v2 infer: id or model_name not echoed")
    ok = False
print("   every one of the %d lines equals the sample's label" % len(truth) if ok else "   MISMATCH")
sys.exit(0 if ok else 1)
PY
say "OCR over HTTP: the sample's text read right"

say "drain: SIGTERM while a batch of 4 pages is in flight"
$PY - "$SAMPLE" "$OUT_DIR/batch_request.json" <<'PY'
import base64, json, sys
img = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
json.dump({"images": [img] * 4}, open(sys.argv[2], "w"))
PY
curl -sS -o "$OUT_DIR/batch.json" -w '%{http_code}\n' --data-binary @"$OUT_DIR/batch_request.json" \
  -H 'Content-Type: application/json' "$BASE/v1/ocr/batch" >"$OUT_DIR/batch.code" 2>"$OUT_DIR/batch.err" &
BATCH_PID=$!
busy=0
for _ in $(seq 200); do
  busy=$(curl -s "$BASE/readyz" | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r.get("in_flight", 0) + r.get("queue_depth", 0))' 2>/dev/null || echo 0)
  ((busy > 0)) && break
  sleep 0.05
done
((busy > 0)) || die "the batch never showed in /readyz's in_flight/queue_depth (did it reach the server? $(cat "$OUT_DIR/batch.err"))"
stop_server
sleep 0.3
refused=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$SAMPLE" -H 'Content-Type: image/jpeg' "$BASE/v1/ocr" || true)
wait "$BATCH_PID" || true
wait_exit
rc=$EXIT_RC
server_log
[[ $(cat "$OUT_DIR/batch.code") == 200 ]] || die "the in-flight batch was answered $(cat "$OUT_DIR/batch.code"), not 200, during the drain"
$PY - "$OUT_DIR/batch.json" <<'PY' || die "the in-flight batch lost images in the drain ($OUT_DIR/batch.json)"
import json, sys
b = json.load(open(sys.argv[1]))
print(f"   in-flight batch: {b['images']} images, {b['failed']} failed, {sum(len(r['lines']) for r in b['results'])} lines")
sys.exit(0 if b["images"] == 4 and b["failed"] == 0 and all(len(r["lines"]) == 12 for r in b["results"]) else 1)
PY
[[ $refused == 503 || $refused == 000 ]] || die "a new request during the drain was answered $refused (want 503 SERVER_DRAINING, or no listener)"
grep -q 'SIGTERM: draining' "$OUT_DIR/server.log" || die "no 'SIGTERM: draining' line in the server's log ($OUT_DIR/server.log)"
grep -q 'drained; exiting' "$OUT_DIR/server.log" || die "no 'drained; exiting' line in the server's log ($OUT_DIR/server.log)"
[[ $rc == 0 ]] || die "the server exited $rc after SIGTERM, not 0"
drain_line=$(grep -o 'SIGTERM: draining[^"]*' "$OUT_DIR/server.log" | head -1)
say "drain clean: '$drain_line'; a new request meanwhile: $refused; exit status $rc"
echo "test_image: PASS ($MODE path: $WHY)"
