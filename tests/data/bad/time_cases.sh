#!/usr/bin/env bash
# Runs every case of tests/data/bad/cases.json through a trainsim binary, one after another, and
# prints each one's wall time; fails when a case takes more than LIMIT seconds (default 1), exits
# with another code or prints another error line than the manifest says, writes to stdout, or
# leaves a file in its scratch directory ({tmp}). Time a release build (build/, the default):
#   tests/data/bad/time_cases.sh [path/to/trainsim] [LIMIT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bin=${1:-$root/build/trainsim}
limit=${2:-1}
[ -x "$bin" ] || { echo "time_cases.sh: no trainsim binary at $bin (build it first)" >&2; exit 2; }

exec python3 - "$here" "$bin" "$limit" <<'PYTHON'
import json, os, shutil, statistics, subprocess, sys, tempfile, time

here, binary, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
cases = json.load(open(os.path.join(here, "cases.json"), encoding="utf-8"))
times, failures = [], []
for case in cases:
    tmp = tempfile.mkdtemp(prefix="trainsim-bad-")
    sub = lambda s: s.replace("{dir}", here).replace("{tmp}", tmp)
    start = time.monotonic()
    try:
        run = subprocess.run([binary] + [sub(a) for a in case["args"]], capture_output=True,
                             timeout=max(30.0, 10 * limit))
        code, out, err = run.returncode, run.stdout, run.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        code, out, err = "timeout", b"", ""
    wall = time.monotonic() - start
    left = sorted(os.path.relpath(os.path.join(d, f), tmp)
                  for d, dirs, files in os.walk(tmp) for f in dirs + files)
    shutil.rmtree(tmp)
    problems = []
    if wall > limit:
        problems.append(f"over {limit:g} s")
    if code != case["exit"]:
        problems.append(f"exit {code}, not {case['exit']}")
    if out:
        problems.append("wrote to stdout")
    if err != sub(case["error"]) + "\n":
        problems.append("another error line: " + err.strip()[:200])
    if left:
        problems.append("left " + ", ".join(left))
    times.append((wall, case["name"]))
    print(f"{wall:7.3f} s  {case['name']}" + ("  <- " + "; ".join(problems) if problems else ""))
    if problems:
        failures.append(case["name"])

walls = [w for w, _ in times]
slowest = max(times)
print(f"\n{len(cases)} cases in {sum(walls):.2f} s: median {statistics.median(walls):.3f} s, "
      f"slowest {slowest[0]:.3f} s ({slowest[1]}), {sum(w > limit for w in walls)} over {limit:g} s")
if failures:
    print(f"FAILED: {len(failures)} cases: {', '.join(failures)}")
    sys.exit(1)
print("OK: every case under the limit, with its exit code and error line, leaving nothing behind")
PYTHON
