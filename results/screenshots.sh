#!/usr/bin/env bash
# Opens the HTML report, a comparison page and the pipeline diagrams in headless Chromium, fails on any console
# error or failed load, and writes their screenshots to results/screenshots/ (run after
# results/regenerate.sh; installs Debian's chromium when it is missing).
#   results/screenshots.sh [path/to/trainsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/trainsim}
cd "$root"

if ! command -v chromium >/dev/null; then
  sudo_if_needed=""
  [ "$(id -u)" -eq 0 ] || sudo_if_needed=sudo
  $sudo_if_needed apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_if_needed apt-get install -y -qq --no-install-recommends chromium
fi

out="$here/screenshots"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" run scenarios/llama3.1-70b-64gpu.json --html "$tmp/report.html" >/dev/null
"$bin" compare scenarios/teaching/schedules.json --set schedule=gpipe \
  --set schedule=interleaved,vp=2 --set schedule=zb-h1 --engine analytic \
  --html "$tmp/compare.html" >/dev/null

# shot NAME FILE WIDTH HEIGHT: a screenshot, and the console's complaints if any.
shot() {
  local log="$tmp/$1.log"
  chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --hide-scrollbars --enable-logging=stderr --v=0 --window-size="$3,$4" \
    --screenshot="$out/$1.png" "file://$2" 2>"$log" >/dev/null
  if grep -E 'CONSOLE|Uncaught|Failed to load|net::ERR' "$log"; then
    echo "error: $2 logged the lines above in Chromium" >&2
    exit 1
  fi
  echo "wrote $out/$1.png (no console error)"
}
size() { grep -o "$1=\"[0-9.]*\"" "$2" | head -1 | grep -o '[0-9]*' | head -1; }
for svg in "$here"/schedules/*.svg; do
  name=$(basename "$svg" .svg)
  shot "$name" "$svg" "$(size width "$svg")" "$(size height "$svg")"
done
shot report "$tmp/report.html" 1600 2600
shot compare "$tmp/compare.html" 1600 1200
