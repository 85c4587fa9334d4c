#!/usr/bin/env bash
# Regenerates everything under results/ from the current build (run .ci/setup first).
#   results/regenerate.sh [path/to/trainsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/trainsim}

"$bin" run "$root/scenarios/llama3.1-70b-64gpu.json" --out "$here/llama3.1-70b-64gpu" >/dev/null
echo "wrote $here/llama3.1-70b-64gpu/report.{json,txt}"

# What `trainsim check` says about each seed scenario (framework bugs it reproduces).
mkdir -p "$here/seeds"
for scenario in "$root"/scenarios/seeds/*.json; do
  name=$(basename "$scenario" .json)
  status=0
  (cd "$root" && "$bin" check "scenarios/seeds/$name.json") > "$here/seeds/$name.txt.tmp" || status=$?
  if [ "$status" -gt 1 ]; then
    echo "trainsim check failed on $scenario (exit $status)" >&2
    exit "$status"
  fi
  mv "$here/seeds/$name.txt.tmp" "$here/seeds/$name.txt"
  echo "wrote $here/seeds/$name.txt (exit $status)"
done
