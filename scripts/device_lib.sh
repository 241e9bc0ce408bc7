#!/bin/bash
# Sourced by the device scripts (device_shapes.sh, device_ab_sync.sh, device_checks.sh): the bundle unpacked, the
# summary file, the STEPS test and the header line, in one place.
#   device_begin NAME WORKDIR OUTDIR [EXTRA HEADER TEXT]
# leaves REPO (the repository root, the caller's working directory), B (the unpacked bundle), F (its data files) and
# S (OUTDIR/summary.txt); exits 2 when the bundle cannot be unpacked.
device_begin() {
  local name=$1 work=$2 out=$3 extra=${4:-}
  REPO=$PWD
  rm -rf "$work" /tmp/bundle && mkdir -p "$work" "$out"
  tar xzf .devbundle/bundle.tgz -C /tmp || exit 2
  B=/tmp/bundle
  F=$B/files
  S=$out/summary.txt
  echo "# $name $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nvidia-smi --query-gpu=name,driver_version \
    --format=csv,noheader 2>/dev/null); $(nproc) cores${extra:+; $extra}" | tee -a "$S"
}

# Whether STEPS (space-separated) names step $1.
want() { [[ " $STEPS " == *" $1 "* ]]; }
