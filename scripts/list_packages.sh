#!/usr/bin/env bash
# Prints the Debian packages of scripts/debian-packages.txt, one a line, without comments. A package whose comment
# says `when-missing: CMD` is left out when CMD is already on PATH (Debian's npm conflicts with a machine's own
# Node.js build, so it is only installed where npm is absent).
set -euo pipefail
list="$(dirname "$0")/debian-packages.txt"
while IFS= read -r line; do
  pkg=${line%%#*}
  pkg=${pkg//[[:space:]]/}
  [[ -z $pkg ]] && continue
  if [[ $line =~ when-missing:[[:space:]]*([A-Za-z0-9._-]+) ]] && command -v "${BASH_REMATCH[1]}" >/dev/null 2>&1; then
    continue
  fi
  echo "$pkg"
done <"$list"
