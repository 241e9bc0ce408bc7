#!/usr/bin/env bash
# Fails when a tracked C++/CUDA file is not clang-formatted (.clang-format, 120 columns).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
if ((${#files[@]} == 0)); then exit 0; fi
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/steadyocr-format.log; then
  echo "format check failed (run: clang-format -i <file>):"
  grep -E '^[^ ].*error:' /tmp/steadyocr-format.log | cut -d: -f1 | sort -u | sed 's/^/  /'
  exit 1
fi
echo "format check: ${#files[@]} files OK"
