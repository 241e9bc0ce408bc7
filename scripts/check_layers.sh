#!/usr/bin/env bash
# Fails when a source file includes a layer it must not (ARCHITECTURE.md: a request flows down; each layer calls only
# the ones below it; docs/DESIGN.md draws them). Part of the test command. Each rule: the folder, then the layers
# its files may include (its own folder is always allowed). Front doors (cli/, server/, bindings/) may include every
# layer below them, never each other, except that cli/ may start the server (`steadyocr serve`, cli/cmd_serve.cpp):
# the server never includes cli/, and that bindings/ may include cli/engine_options.h (the engine flags and their
# translation into EngineOptions: the bindings name their options as the CLI's flags, with one definition of both).
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
  [core]=""
  [graph]="core"
  [backends]="core graph"
  [runtime]="core graph backends"
  [pipeline]="core graph backends runtime"
  [doctor]="core graph backends runtime"
  [engine]="core graph backends runtime pipeline doctor"
  [cli]="core graph backends runtime pipeline doctor engine server"
  [server]="core graph backends runtime pipeline doctor engine"
  [bindings]="core graph backends runtime pipeline doctor engine"
)
# Single headers a layer may include beyond its table row: "layer:header".
declare -A exceptions=([bindings:cli/engine_options.h]=1)
layers=$(printf '%s\n' "${!allowed[@]}")
bad=0
checked=0
for dir in "${!allowed[@]}"; do
  [[ -d src/$dir ]] || continue
  while IFS= read -r -d '' f; do
    checked=$((checked + 1))
    while IFS= read -r inc; do
      top=${inc%%/*}
      grep -qx "$top" <<<"$layers" || continue  # a system or third-party header
      [[ $top == "$dir" ]] && continue
      [[ -n ${exceptions[$dir:$inc]:-} ]] && continue
      if [[ " ${allowed[$dir]} " != *" $top "* ]]; then
        echo "layering: $f includes \"$inc\": $dir/ may include only: ${allowed[$dir]:-(nothing but itself)}"
        bad=1
      fi
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$f")
  done < <(find "src/$dir" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) -print0)
done
if ((bad)); then
  echo "layering check failed (docs/DESIGN.md)"
  exit 1
fi
echo "layering check: $checked files OK"
