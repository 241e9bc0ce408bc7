#!/usr/bin/env bash
# The second CUDA plugin, libsteadyocr_cuda11.so: built with CUDA 11.8 (Debian's non-free nvidia-cuda-toolkit, whose
# nvcc wants g++-11), linked only against cudart (statically) and cuBLAS 11, SASS for sm_70-90 + PTX of sm_90. It runs
# on every driver of CUDA 11.0 or later (R450.80.02+), so GPUs whose driver predates CUDA 13 (R535/R550...) keep the
# GPU path; steadyocr picks it by itself where the driver cannot run the CUDA 13 plugin (docs/COMPATIBILITY.md).
#   scripts/build_cuda11.sh [MAIN_BUILD_DIR]     (scripts/setup.sh --cuda11 runs it)
# Environment: CUDA11_TOOLKIT  a CUDA 11.8 toolkit folder (bin/nvcc, include/, lib64/) instead of Debian's package
#              CUDNN_HEADER_DIR  a folder holding cudnn.h (cuDNN 9; any CUDA build: only the header is used)
#              SKIP_APT=1        do not install packages
# The plugin loads cuDNN at run time like the CUDA 13 one (cuDNN 9 for CUDA 11, where installed; otherwise every
# convolution runs without it). It is not built in CI: the toolkit is 3.6 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
MAIN_BUILD=${1:-build}
BUILD11=${BUILD11_DIR:-$MAIN_BUILD-cuda11}
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
die() { echo "build_cuda11: $*" >&2; exit 1; }

if [[ -n ${CUDA11_TOOLKIT:-} ]]; then
  NVCC=$CUDA11_TOOLKIT/bin/nvcc
  TOOLKIT_ARGS=(-DCUDAToolkit_ROOT="$CUDA11_TOOLKIT")
else
  NVCC=/usr/lib/nvidia-cuda-toolkit/bin/nvcc
  TOOLKIT_ARGS=()
  if [[ ! -x $NVCC || ! -x /usr/bin/g++-11 ]] && [[ -z ${SKIP_APT:-} ]]; then
    # Debian's CUDA 11.8 toolkit is in the non-free component: add it for this suite if no source lists it.
    if ! grep -rqsE '^(Components:.*non-free([^-]|$)|deb .* non-free([^-]|$))' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "== adding Debian's non-free component (/etc/apt/sources.list.d/steadyocr-non-free.sources)"
      $SUDO tee /etc/apt/sources.list.d/steadyocr-non-free.sources >/dev/null <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    echo "== installing nvidia-cuda-toolkit (CUDA 11.8, ~3.6 GB) and g++-11"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit g++-11 >/dev/null
  fi
fi
[[ -x $NVCC ]] || die "no CUDA 11.8 nvcc at $NVCC: install Debian's nvidia-cuda-toolkit (non-free) or set CUDA11_TOOLKIT"
"$NVCC" --version | grep -q 'release 11\.' || die "$NVCC is not CUDA 11: $("$NVCC" --version | tail -1)"
command -v g++-11 >/dev/null || die "g++-11 not found (CUDA 11.8's nvcc refuses g++ 12): apt-get install g++-11"

# cudnn.h alone, copied into a folder of its own: the folder it comes from may hold another CUDA's headers
# (e.g. /usr/local/cuda/include of CUDA 13), which must not shadow CUDA 11.8's.
hdr=""
for d in ${CUDNN_HEADER_DIR:-} /usr/include /usr/include/x86_64-linux-gnu /usr/local/cuda/include; do
  [[ -f $d/cudnn.h && -f $d/cudnn_version.h ]] && { hdr=$d; break; }
done
[[ -n $hdr ]] || die "cudnn.h (cuDNN 9) not found in ${CUDNN_HEADER_DIR:-} /usr/include /usr/local/cuda/include: install cuDNN 9's header (e.g. libcudnn9-dev-cuda-11 or -cuda-13: any, only its C API is used) or set CUDNN_HEADER_DIR"
grep -q '#define CUDNN_MAJOR 9' "$hdr/cudnn_version.h" || die "$hdr/cudnn.h is not cuDNN 9"
mkdir -p "$BUILD11/cudnn-include"
cp "$hdr"/cudnn*.h "$BUILD11/cudnn-include/"

echo "== configuring $BUILD11 (nvcc $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), g++-11, SASS 70-90)"
cmake -S . -B "$BUILD11" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTEADYOCR_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DCMAKE_CUDA_HOST_COMPILER=g++-11 "-DSTEADYOCR_CUDA_ARCHS=70;75;80;86;89;90" \
  -DSTEADYOCR_CUDNN_INCLUDE="$(realpath "$BUILD11/cudnn-include")" "${TOOLKIT_ARGS[@]}" >/dev/null
echo "== building libsteadyocr_cuda11.so"
ninja -C "$BUILD11" -j "${JOBS:-$(nproc)}" steadyocr_cuda
so=$BUILD11/libsteadyocr_cuda11.so
[[ -f $so ]] || die "$so was not built"
bad=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E 'libcudart|libcudnn|libcublas\.so\.1[2-9]' || true)
[[ -z $bad ]] || die "$so links $bad: it must link only cuBLAS 11 (cudart static, cuDNN loaded at run time)"
# Beside the CUDA 13 plugin, so the binary finds both (runtime/cuda_plugin.h picks by the driver).
cp "$so" "$MAIN_BUILD/"
echo "== $MAIN_BUILD/libsteadyocr_cuda11.so: NEEDED $(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')"
