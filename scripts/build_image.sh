#!/usr/bin/env bash
# Builds the steadyocr container image from Debian 12 packages, with Debian's buildah, from a debootstrap root: no
# base image is pulled. What goes in (docs/DEPLOY.md says why):
#   - a pristine `debootstrap --variant=minbase bookworm` root (the tarball .ci/run caches, made here when missing)
#   - the run-time packages of scripts/debian-packages.txt (`scripts/list_packages.sh --image`; no compiler, no -dev)
#   - steadyocr as `cmake --install BUILD_DIR --component runtime` lays it out, under /opt/steadyocr (bin/, lib/steadyocr/)
#   - the models (/opt/steadyocr/models) and scripts/doctor_metrics.py (the daily doctor's CronJob)
#   - the NVIDIA libraries the CUDA plugin loads, found with readelf/ldd on the plugin: cuBLAS, cuBLASLt, cuDNN and
#     the cuDNN sub-libraries it opens itself, into /opt/steadyocr/lib/nvidia, with their licence files. Never libcuda
#     (the NVIDIA container runtime mounts the driver's); the CUDA runtime is linked statically into the plugin.
#   - a non-root user (uid 10001), HEALTHCHECK on /readyz (curl), ENTRYPOINT `steadyocr serve`
# and it prints the image's size and its large parts (scripts/image_size.py).
#
#   scripts/build_image.sh                          as root, on Debian 12 with buildah (apt-get install buildah)
#   BUILD_DIR=/work/main/build scripts/build_image.sh
#
# Environment:
#   BUILD_DIR     build tree with steadyocr and libsteadyocr_cuda13.so built (default build)
#   MODELS_DIR    the models (default models)
#   IMAGE         image name (default localhost/steadyocr:<steadyocr --version>)
#   CI_CACHE      cache of the pristine root tarball and of .deb files, shared with .ci/run (default /var/cache/steadyocr-ci)
#   OUT_DIR       where the size report goes (default out/image)
#   ALLOW_NO_CUDA=1  build without the CUDA plugin (a CPU-only image); by default its absence is an error
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUILD_DIR=$(realpath -m "${BUILD_DIR:-build}")
MODELS_DIR=$(realpath -m "${MODELS_DIR:-models}")
CI_CACHE=${CI_CACHE:-/var/cache/steadyocr-ci}
OUT_DIR=$(realpath -m "${OUT_DIR:-out/image}")
SUITE=bookworm
PREFIX=/opt/steadyocr
NVIDIA_DIR=$PREFIX/lib/nvidia
APP_UID=10001
PORT=8080
# cuDNN 9 opens these itself (dlopen), so no ldd shows them; the doctor's layer 2 requires the same six
# (src/doctor/libraries.cpp). libcudnn_adv (RNNs, attention: 105 MB) is not among them: steadyocr never calls it.
CUDNN_PARTS=(graph ops cnn engines_precompiled engines_runtime_compiled heuristic)
MODEL_FILES=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt)
T0=$(date +%s)

step() { echo "== build_image: $* ($(($(date +%s) - T0)) s)"; }
die() {
  echo "build_image: ERROR: $*" >&2
  exit 1
}

# --- preflight: every missing piece is named with its fix before anything is made
[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot and buildah's mount need it): sudo scripts/build_image.sh"
command -v buildah >/dev/null 2>&1 ||
  die "buildah not found: install Debian's buildah (apt-get install --no-install-recommends buildah)"
for tool in cmake readelf ldd tar python3; do
  command -v $tool >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh (it installs the build packages)"
done
[[ -x $BUILD_DIR/steadyocr ]] ||
  die "$BUILD_DIR/steadyocr not found: build first (scripts/setup.sh, or ninja -C $BUILD_DIR), or set BUILD_DIR"
[[ -f $BUILD_DIR/cmake_install.cmake ]] && grep -q 'lib/steadyocr' "$BUILD_DIR/cmake_install.cmake" ||
  die "$BUILD_DIR has no install rules (cmake/Install.cmake): reconfigure it (cmake -S . -B $BUILD_DIR) and build"
HAVE_CUDA=1
if [[ ! -f $BUILD_DIR/libsteadyocr_cuda13.so ]]; then
  [[ -n ${ALLOW_NO_CUDA:-} ]] ||
    die "$BUILD_DIR/libsteadyocr_cuda13.so not found: build with the CUDA toolkit and cuDNN 9 in /usr/local/cuda (-DSTEADYOCR_CUDA=ON), or set ALLOW_NO_CUDA=1 for a CPU-only image"
  HAVE_CUDA=""
fi
for m in "${MODEL_FILES[@]}"; do
  [[ -f $MODELS_DIR/$m ]] || die "$MODELS_DIR/$m not found: scripts/setup.sh fetches the models, or set MODELS_DIR"
done
VERSION=$("$BUILD_DIR/steadyocr" --version 2>/dev/null | head -1 | tr -d '[:space:]')
[[ -n $VERSION ]] || die "$BUILD_DIR/steadyocr --version printed nothing: the binary does not run on this machine"
IMAGE=${IMAGE:-localhost/steadyocr:$VERSION}
mapfile -t PACKAGES < <(scripts/list_packages.sh --image)
((${#PACKAGES[@]})) || die "scripts/list_packages.sh --image printed no package: scripts/debian-packages.txt has no 'image:' entries"

# The NVIDIA libraries: what the plugin's NEEDED entries resolve to here, outside Debian's packages and our own build.
declare -A NVIDIA_LIBS=()
if [[ -n $HAVE_CUDA ]]; then
  ldd_out=$(ldd "$BUILD_DIR/libsteadyocr_cuda13.so")
  if grep -q 'not found' <<<"$ldd_out"; then
    die "the CUDA plugin's libraries are not all found here: $(grep 'not found' <<<"$ldd_out" | tr -s ' \t' ' ' | paste -sd,): install the CUDA toolkit and cuDNN 9 into /usr/local/cuda (as the build used)"
  fi
  for soname in $(readelf -d "$BUILD_DIR/libsteadyocr_cuda13.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v n="$soname" '$1 == n && $2 == "=>" {print $3}' <<<"$ldd_out")
    case $soname in
      libcuda.so*) die "the plugin links libcuda directly ($path): it must not (the driver's libcuda is mounted by the NVIDIA container runtime)" ;;
      libcudart.so*) NVIDIA_LIBS[$soname]=$path ;;
      libcublas.so* | libcudnn.so*) NVIDIA_LIBS[$soname]=$path ;;
    esac
  done
  # cuDNN is loaded at run time (src/backends/cuda/cudnn_api.h), not linked: the image carries the one beside the
  # cudnn.h the build used, so the image's GPU rung has it (without it the image would serve from cuda-fp32-nocudnn).
  cudnn_inc=$(sed -n 's/^CUDNN_INCLUDE:PATH=//p' "$BUILD_DIR/CMakeCache.txt")
  for d in "$cudnn_inc/../lib" "$cudnn_inc/../lib64" /usr/lib/x86_64-linux-gnu; do
    if [[ -f $d/libcudnn.so.9 ]]; then NVIDIA_LIBS[libcudnn.so.9]=$(realpath -s "$d/libcudnn.so.9"); break; fi
  done
  [[ -n ${NVIDIA_LIBS[libcudnn.so.9]:-} ]] ||
    die "no libcudnn.so.9 beside the cudnn.h the build used ($cudnn_inc/../lib) nor in /usr/lib/x86_64-linux-gnu: install cuDNN 9 there; this script knows cuDNN 9 only"
  # cuBLAS loads cuBLASLt (its own NEEDED); cuDNN its sub-libraries (dlopen), from its own folder ($ORIGIN).
  for soname in "${!NVIDIA_LIBS[@]}"; do
    for dep in $(readelf -d "${NVIDIA_LIBS[$soname]}" | sed -n 's/.*(NEEDED).*\[\(libcublas[^]]*\)\]/\1/p'); do
      NVIDIA_LIBS[$dep]=$(dirname "${NVIDIA_LIBS[$soname]}")/$dep
    done
  done
  cudnn_dir=$(dirname "${NVIDIA_LIBS[libcudnn.so.9]}")
  for part in "${CUDNN_PARTS[@]}"; do NVIDIA_LIBS[libcudnn_$part.so.9]=$cudnn_dir/libcudnn_$part.so.9; done
  for soname in "${!NVIDIA_LIBS[@]}"; do
    [[ -f ${NVIDIA_LIBS[$soname]} ]] || die "${NVIDIA_LIBS[$soname]} not found (needed as $soname): install the complete cuDNN 9 / cuBLAS 13 into $cudnn_dir"
  done
  # Their licences: the wheels' dist-info folders (the toolkit here is NVIDIA's wheels), else a toolkit's EULA.txt.
  CUDA_ROOT=$(realpath "$cudnn_dir/..")
  declare -A LICENSES=()
  for comp in cudnn cublas cuda_runtime; do
    f=$(compgen -G "$CUDA_ROOT/dist-info/nvidia_${comp}*/licenses/*" | head -1 || true)
    [[ -z $f && -f $CUDA_ROOT/EULA.txt ]] && f=$CUDA_ROOT/EULA.txt
    [[ -n $f ]] || die "no licence file for NVIDIA $comp under $CUDA_ROOT (dist-info/nvidia_${comp}*/licenses/ or EULA.txt): the image must carry the licence of what it redistributes; put the licence text there"
    LICENSES[$comp]=$f
  done
fi

mkdir -p "$CI_CACHE/debs" "$OUT_DIR"
ROOT=$(mktemp -d /var/tmp/steadyocr-image-root.XXXXXX)
chmod 755 "$ROOT"
MOUNTS=()
CTR=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || echo "build_image: could not unmount ${MOUNTS[i]}"
  done
  [[ -n $CTR ]] && buildah rm "$CTR" >/dev/null 2>&1
  if grep -q " $ROOT" /proc/mounts; then
    echo "build_image: mounts left under $ROOT; not removing it"
  else
    rm -rf "$ROOT"
  fi
  ((rc == 0)) || echo "build_image: FAILED (exit $rc)" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "build_image: interrupted"; exit 130' INT TERM HUP
mount_in() { # mount_in TARGET MOUNT-ARGS...
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  MOUNTS+=("$target")
}
unmount_all() {
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}"; done
  MOUNTS=()
}
in_root() { # in_root CMD...: a command in the image's root, with a clean environment
  chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

step "pristine root: debootstrap --variant=minbase $SUITE"
TARBALL=$CI_CACHE/$SUITE-minbase-$(dpkg --print-architecture).tar
if [[ -f $TARBALL ]]; then
  echo "   unpacking the cached pristine root $TARBALL"
else
  command -v debootstrap >/dev/null 2>&1 ||
    die "no cached root ($TARBALL) and no debootstrap: apt-get install --no-install-recommends debootstrap (or run .ci/run once)"
  echo "   no cached root: debootstrap (log $CI_CACHE/debootstrap.log); the tarball is kept for .ci/run and later builds"
  mkdir -p "$ROOT.boot"
  debootstrap --variant=minbase --cache-dir="$CI_CACHE/debs" "$SUITE" "$ROOT.boot" >"$CI_CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CI_CACHE/debootstrap.log"; die "debootstrap failed (log: $CI_CACHE/debootstrap.log)"; }
  tar -cpf "$TARBALL.tmp" -C "$ROOT.boot" . && mv "$TARBALL.tmp" "$TARBALL" && rm -rf "$ROOT.boot"
fi
tar -xpf "$TARBALL" -C "$ROOT"
chmod 755 "$ROOT"

step "Debian run-time packages (${#PACKAGES[@]}): ${PACKAGES[*]}"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mount_in "$ROOT/proc" -t proc proc
mount_in "$ROOT/dev" --bind /dev
mount_in "$ROOT/var/cache/apt/archives" --bind "$CI_CACHE/debs"
in_root apt-get update -qq >"$OUT_DIR/apt.log" 2>&1 ||
  die "apt-get update in the image root failed: $(grep -E '^(E|W):' "$OUT_DIR/apt.log" | tail -2 | paste -sd' ') (log $OUT_DIR/apt.log): check this machine's network and DNS (/etc/resolv.conf is copied in)"
# The .deb cache is shared with .ci/run: while another apt holds its lock, wait (up to 10 minutes) instead of failing.
for try in $(seq 60); do
  if in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" \
    >>"$OUT_DIR/apt.log" 2>&1; then
    break
  fi
  if tail -3 "$OUT_DIR/apt.log" | grep -q 'Could not get lock' && ((try < 60)); then
    ((try == 1)) && echo "   another apt holds the lock of $CI_CACHE/debs (.ci/run?): waiting for it"
    sleep 10
    continue
  fi
  errors=$(grep '^E:' "$OUT_DIR/apt.log" | tail -3 | paste -sd' ')
  die "apt-get install of the image's packages failed: ${errors:-see $OUT_DIR/apt.log} (a package named by an 'image:' entry of scripts/debian-packages.txt that Debian 12 lacks is one cause; log $OUT_DIR/apt.log)"
done
unmount_all
# debootstrap's own .deb files are still in the root's archive folder (under the cache mounted above): not wanted.
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/log/apt "$ROOT"/var/log/dpkg.log \
  "$ROOT"/usr/share/man "$ROOT"/usr/share/info
: >"$ROOT/etc/resolv.conf" # the container runtime provides its own
# Nothing of a build toolchain may have come in through a dependency.
dev_pkgs=$(in_root dpkg-query -W -f '${Package}\n' | grep -E -- '-dev$' || true)
[[ -z $dev_pkgs ]] || die "-dev packages in the image: $(echo $dev_pkgs): an 'image:' entry of scripts/debian-packages.txt pulls them; name the run-time library instead"
for cc in gcc g++ cc c++ clang ld as nvcc; do
  [[ ! -e $ROOT/usr/bin/$cc ]] || die "compiler or linker /usr/bin/$cc in the image: an 'image:' entry pulls a toolchain package ($(in_root dpkg -S /usr/bin/$cc 2>/dev/null | head -1))"
done

step "steadyocr: cmake --install $BUILD_DIR --component runtime --prefix $PREFIX"
cmake --install "$BUILD_DIR" --prefix "$ROOT$PREFIX" --component runtime >"$OUT_DIR/install.log"
# A serving image: the C API's library and header are for programs built against steadyocr, not for `serve`.
rm -rf "$ROOT$PREFIX/include" "$ROOT$PREFIX"/lib/libsteadyocr.so*
mkdir -p "$ROOT$PREFIX/models" "$ROOT$PREFIX/share/licenses"
for m in "${MODEL_FILES[@]}"; do install -m 644 "$MODELS_DIR/$m" "$ROOT$PREFIX/models/$m"; done
install -m 755 scripts/doctor_metrics.py "$ROOT$PREFIX/bin/doctor_metrics.py"
if [[ -n $HAVE_CUDA ]]; then
  step "NVIDIA libraries into $NVIDIA_DIR (from $(dirname "${NVIDIA_LIBS[libcudnn.so.9]}"))"
  mkdir -p "$ROOT$NVIDIA_DIR"
  for soname in $(printf '%s\n' "${!NVIDIA_LIBS[@]}" | sort); do
    install -m 644 "$(realpath "${NVIDIA_LIBS[$soname]}")" "$ROOT$NVIDIA_DIR/$soname" # unmodified (the licences' terms)
    printf '   %-42s %6d MiB  %s\n' "$soname" $(($(stat -c %s "$ROOT$NVIDIA_DIR/$soname") >> 20)) "$(realpath "${NVIDIA_LIBS[$soname]}")"
  done
  for comp in "${!LICENSES[@]}"; do
    mkdir -p "$ROOT$PREFIX/share/licenses/nvidia-$comp"
    install -m 644 "${LICENSES[$comp]}" "$ROOT$PREFIX/share/licenses/nvidia-$comp/$(basename "${LICENSES[$comp]}")"
  done
  if [[ -z ${NVIDIA_LIBS[libcudart.so.13]:-} ]]; then
    echo "   CUDA runtime: linked into the plugin statically (it has no libcudart NEEDED): no libcudart carried"
  fi
  echo "   libcuda: not carried (the NVIDIA container runtime mounts the driver's)"
  echo "$NVIDIA_DIR" >"$ROOT/etc/ld.so.conf.d/steadyocr-nvidia.conf"
fi
in_root ldconfig

step "user steadyocr (uid $APP_UID), non-root"
in_root groupadd --gid $APP_UID steadyocr
in_root useradd --uid $APP_UID --gid $APP_UID --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin steadyocr

step "checks in the image's root (ldd, the doctor's layer 2 as uid $APP_UID)"
for f in "$ROOT$PREFIX/bin/steadyocr" "$ROOT$PREFIX/bin/steadyocr-doctor" "$ROOT$PREFIX"/lib/steadyocr/*.so; do
  f=${f#"$ROOT"}
  missing=$(in_root ldd "$f" 2>&1 | grep 'not found' | awk '{print $1}' | paste -sd' ' || true)
  [[ -z $missing ]] ||
    die "$f in the image cannot find $missing: add the Debian package holding it (dpkg -S on the build machine) to its line of scripts/debian-packages.txt as 'image: PKG'"
done
stray=$(cd "$ROOT" && find . -xdev \( -name 'libcuda.so*' -o -name 'libnvidia-ml.so*' \) | paste -sd' ')
[[ -z $stray ]] || die "driver libraries in the image: $stray: they must come from the host's driver (the NVIDIA container runtime mounts them); remove their source from the copy"
mount_in "$ROOT/proc" -t proc proc
mount_in "$ROOT/dev" --bind /dev
chroot --userspec=$APP_UID:$APP_UID "$ROOT" /usr/bin/env -i PATH=$PREFIX/bin:/usr/bin:/bin HOME=/tmp \
  $PREFIX/bin/steadyocr doctor --level 2 --keep-going --json >"$OUT_DIR/doctor-level2.json" 2>"$OUT_DIR/doctor-level2.err" || true
unmount_all
python3 - "$OUT_DIR/doctor-level2.json" "$PREFIX" "$NVIDIA_DIR" "${HAVE_CUDA:-0}" <<'PY' || die "the doctor in the image's root does not load its own libraries (report $OUT_DIR/doctor-level2.json)"
import json, sys
path, prefix, nvidia, have_cuda = sys.argv[1:]
j = json.load(open(path))
env = j["environment"]
build = env.get("build", {})
checks = {c["check"]: c for layer in j["layers"] for c in layer["checks"]}
print(f"   doctor: plugin {build.get('plugin')} loaded={build.get('plugin_loaded')}; built with CUDA runtime "
      f"{build.get('cuda_runtime')}, cuDNN {build.get('cudnn')}, cuBLAS {build.get('cublas')}; archs {build.get('declared_archs')}")
if have_cuda == "0":
    sys.exit(0)
bad = []
if build.get("plugin") != prefix + "/lib/steadyocr/libsteadyocr_cuda13.so" or not build.get("plugin_loaded"):
    bad.append(f"plugin {build.get('plugin')} loaded={build.get('plugin_loaded')}")
for lib in ("cudnn", "cublas"):
    real = env.get(lib, {}).get("realpath", "")
    print(f"   doctor: {lib} {env.get(lib, {}).get('version')} loaded from {real}")
    if not real.startswith(nvidia + "/"):
        bad.append(f"{lib} loaded from '{real}', not from {nvidia}")
sub = checks.get("cudnn_sublibraries", {})
print(f"   doctor: cudnn_sublibraries {sub.get('status')}: {sub.get('summary')}")
if sub.get("status") != "pass":
    bad.append("cudnn_sublibraries " + str(sub.get("status")))
if bad:
    print("   " + "; ".join(bad))
    sys.exit(1)
PY

step "image $IMAGE (buildah, from scratch)"
CTR=$(buildah from --format docker scratch)
MNT=$(buildah mount "$CTR")
tar -C "$ROOT" -cf - . | tar -C "$MNT" -xpf -
buildah umount "$CTR" >/dev/null
CUDNN_V=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"].get("build", {}).get("cudnn", ""))' "$OUT_DIR/doctor-level2.json")
CUBLAS_V=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"].get("build", {}).get("cublas", ""))' "$OUT_DIR/doctor-level2.json")
buildah config \
  --user "$APP_UID:$APP_UID" \
  --workingdir "$PREFIX" \
  --env PATH=$PREFIX/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env HOME=/tmp \
  --env LANG=C.UTF-8 \
  --env NVIDIA_VISIBLE_DEVICES=all \
  --env NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics \
  --port $PORT/tcp \
  --stop-signal SIGTERM \
  --entrypoint "[\"$PREFIX/bin/steadyocr\", \"serve\"]" \
  --cmd "--host 0.0.0.0 --port $PORT --models $PREFIX/models" \
  --healthcheck "CMD-SHELL 'curl -fsS -o /dev/null http://127.0.0.1:$PORT/readyz || exit 1'" \
  --healthcheck-interval 10s --healthcheck-timeout 3s --healthcheck-start-period 120s --healthcheck-retries 3 \
  --label org.opencontainers.image.title=steadyocr \
  --label org.opencontainers.image.version="$VERSION" \
  --label org.opencontainers.image.revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  --label org.opencontainers.image.base.name="debootstrap --variant=minbase $SUITE" \
  --label io.steadyocr.cudnn="$CUDNN_V" \
  --label io.steadyocr.cublas="$CUBLAS_V" \
  "$CTR"
# Docker's image format (here and at `buildah from`): the OCI image config has no HEALTHCHECK (buildah drops it
# there); registries, podman, Docker and Kubernetes take both.
old_id=$(buildah images --noheading --format '{{.ID}}' "$IMAGE" 2>/dev/null | head -1 || true)
# buildah splits --healthcheck into words: the quotes above keep the shell command one word, as CMD-SHELL needs.
hc=$(buildah inspect --type container "$CTR" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Docker"]["config"]["Healthcheck"]["Test"])')
[[ $hc == "['CMD-SHELL', 'curl -fsS -o /dev/null http://127.0.0.1:$PORT/readyz || exit 1']" ]] ||
  die "the HEALTHCHECK came out as $hc: CMD-SHELL and one shell command expected (buildah's word splitting changed?)"
buildah commit --quiet --format docker --rm "$CTR" "$IMAGE" >"$OUT_DIR/image-id"
CTR=""
# The previous image of this name, now untagged: removed unless a container still uses it.
if [[ -n $old_id && $(cut -c1-12 "$OUT_DIR/image-id") != "$old_id"* ]]; then
  buildah rmi "$old_id" >/dev/null 2>&1 && echo "   removed the previous $IMAGE ($old_id)" || true
fi

step "size"
scripts/image_size.py "$ROOT" "$PREFIX" "$NVIDIA_DIR" "$IMAGE" "$(buildah images --noheading --format '{{.Size}}' "$IMAGE" | head -1)" \
  "$TARBALL" "${PACKAGES[@]}" | tee "$OUT_DIR/size.txt"
echo "build_image: done: $IMAGE (size report $OUT_DIR/size.txt); test it with scripts/test_image.sh"
