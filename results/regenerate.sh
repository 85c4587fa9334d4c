#!/usr/bin/env bash
# Regenerates everything under results/ from the current build (run .ci/setup first).
#   results/regenerate.sh [path/to/trainsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/trainsim}

"$bin" run "$root/scenarios/llama3.1-70b-64gpu.json" --out "$here/llama3.1-70b-64gpu" >/dev/null
echo "wrote $here/llama3.1-70b-64gpu/report.{json,txt}"
