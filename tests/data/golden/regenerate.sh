#!/usr/bin/env bash
# Rewrites the golden reports from the current build. Run after an intended change to the
# model, and say in the commit message why the numbers moved.
#   tests/data/golden/regenerate.sh [path/to/trainsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bin=${1:-$root/build/trainsim}
"$bin" run "$root/scenarios/llama3.1-70b-64gpu.json" --format json > "$here/llama3.1-70b-64gpu.json.tmp"
mv "$here/llama3.1-70b-64gpu.json.tmp" "$here/llama3.1-70b-64gpu.json"
echo "wrote $here/llama3.1-70b-64gpu.json"
