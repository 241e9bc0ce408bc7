#!/usr/bin/env bash
# Prints the Debian packages of scripts/debian-packages.txt, one a line, without comments. A package whose comment
# says `when-missing: CMD` is left out when CMD is already on PATH (Debian's npm conflicts with a machine's own
# Node.js build, so it is only installed where npm is absent).
#
#   scripts/list_packages.sh            what setup.sh installs (build, tests, models)
#   scripts/list_packages.sh --image    the run-time packages of the container image: the `image: PKG...` lists at
#                                       the end of the comments (scripts/build_image.sh)
set -euo pipefail
list="$(dirname "$0")/debian-packages.txt"
mode=${1:-}
case $mode in
  "" | --image) ;;
  *)
    echo "list_packages.sh: unknown argument '$mode' (none: setup's packages; --image: the image's)" >&2
    exit 2
    ;;
esac
while IFS= read -r line; do
  pkg=${line%%#*}
  pkg=${pkg//[[:space:]]/}
  [[ -z $pkg ]] && continue
  if [[ $mode == --image ]]; then
    if [[ $line =~ image:[[:space:]]*([A-Za-z0-9.+\ -]+)$ ]]; then
      for p in ${BASH_REMATCH[1]}; do echo "$p"; done
    fi
    continue
  fi
  if [[ $line =~ when-missing:[[:space:]]*([A-Za-z0-9._-]+) ]] && command -v "${BASH_REMATCH[1]}" >/dev/null 2>&1; then
    continue
  fi
  echo "$pkg"
done <"$list"
