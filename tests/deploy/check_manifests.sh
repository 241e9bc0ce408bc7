#!/usr/bin/env bash
# ctest Deploy.ManifestsRenderAndValidate: renders every kustomization under deploy/ with `kubectl kustomize` (offline)
# and validates the objects with tests/deploy/validate.cjs (schemas, and what the deployment needs, against the
# flags of STEADYOCR_BIN). Exit 77 (skipped, one line saying why) without a kubectl whose kustomize is v5 or newer.
#   tests/deploy/check_manifests.sh STEADYOCR_BIN BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:?usage: check_manifests.sh STEADYOCR_BIN BUILD_DIR}
BUILD_DIR=${2:?usage: check_manifests.sh STEADYOCR_BIN BUILD_DIR}
if ! command -v kubectl >/dev/null 2>&1; then
  echo "SKIPPED: kubectl is not installed, so deploy/ cannot be rendered here (install kubectl 1.27+, whose kustomize is v5)"
  exit 77
fi
kv=$(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: v\([0-9]*\).*/\1/p')
if [[ -z $kv || $kv -lt 5 ]]; then
  echo "SKIPPED: kubectl's kustomize is ${kv:+v}${kv:-unknown}, deploy/ needs v5 (kubectl 1.27+): $(command -v kubectl)"
  exit 77
fi
command -v node >/dev/null 2>&1 || { echo "FAIL: node not found: install Debian's nodejs (scripts/debian-packages.txt)"; exit 1; }
[[ -x $BIN ]] || { echo "FAIL: $BIN not found: build steadyocr first (its --help lists the flags the manifests may use)"; exit 1; }
scripts/deploy_validator.sh "$BUILD_DIR"
OUT=$BUILD_DIR/deploy-rendered
rm -rf "$OUT"
mkdir -p "$OUT"
n=0
while IFS= read -r k; do
  dir=$(dirname "$k")
  name=${dir#deploy/}
  name=${name//\//-}
  if ! kubectl kustomize "$dir" >"$OUT/$name.yaml" 2>"$OUT/$name.err"; then
    echo "FAIL: kubectl kustomize $dir: $(head -3 "$OUT/$name.err")"
    exit 1
  fi
  echo "rendered $dir: $(grep -c '^kind:' "$OUT/$name.yaml") objects ($(grep '^kind:' "$OUT/$name.yaml" | awk '{print $2}' | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}'))"
  n=$((n + 1))
done < <(find deploy -name kustomization.yaml | sort)
"$BIN" serve --help >"$OUT/serve-help.txt"
"$BIN" doctor --help >"$OUT/doctor-help.txt"
node tests/deploy/validate.cjs "$BUILD_DIR/deploy-validate/node_modules" "$OUT" "$(pwd)" "$OUT/serve-help.txt" "$OUT/doctor-help.txt"
