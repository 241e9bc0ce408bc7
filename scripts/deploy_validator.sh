#!/usr/bin/env bash
# Installs the npm packages of the manifests' validator (tests/deploy/package.json, pinned by its package-lock.json:
# kubernetes-models and the KEDA and prometheus-operator models, a YAML parser) into BUILD_DIR/deploy-validate,
# with npm's cache in BUILD_DIR/npm-cache so that a second install works offline. Run by scripts/setup.sh (where
# kubectl exists) and by ctest Deploy.ManifestsRenderAndValidate when they are missing.
#   scripts/deploy_validator.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:?usage: scripts/deploy_validator.sh BUILD_DIR}
DEST=$BUILD_DIR/deploy-validate
command -v npm >/dev/null 2>&1 || {
  echo "deploy_validator: npm not found: install Debian's npm (scripts/setup.sh does)" >&2
  exit 1
}
if [[ -d $DEST/node_modules/kubernetes-models ]] && cmp -s tests/deploy/package-lock.json "$DEST/package-lock.json"; then
  exit 0
fi
mkdir -p "$DEST"
cp tests/deploy/package.json tests/deploy/package-lock.json "$DEST/"
if ! (cd "$DEST" && npm ci --silent --no-audit --no-fund --prefer-offline --cache "$(cd .. && pwd)/npm-cache" >npm.log 2>&1); then
  tail -5 "$DEST/npm.log" >&2
  echo "deploy_validator: npm ci in $DEST failed (log $DEST/npm.log): npm must reach its registry once; later installs use $BUILD_DIR/npm-cache" >&2
  exit 1
fi
echo "deploy_validator: $(ls "$DEST/node_modules" | wc -l) npm packages in $DEST/node_modules"
