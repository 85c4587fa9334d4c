#!/usr/bin/env bash
# Rewrites the golden reports from the current build. Run after an intended change to the
# model, and say in the commit message why the numbers moved.
#   tests/data/golden/regenerate.sh [path/to/trainsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bin=${1:-$root/build/trainsim}
for scenario in llama3.1-70b-64gpu nemotron4-340b llama3.1-8b-cp2-8gpu qwen3-30b-a3b-16gpu \
  deepseek-v3-1024gpu llama3-70b-lora-8gpu; do
  "$bin" run "$root/scenarios/$scenario.json" --format json > "$here/$scenario.json.tmp"
  mv "$here/$scenario.json.tmp" "$here/$scenario.json"
  echo "wrote $here/$scenario.json"
done
