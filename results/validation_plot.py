#!/usr/bin/env python3
"""Writes results/validation/dgxc_step_time.csv and .svg from `trainsim validate` on NVIDIA's DGX
Cloud step times: one CSV row per reference row (predicted or skipped, with its half of the
fixed split), and predicted against measured step time per model and precision, with the line
where they agree.

    results/validation_plot.py [BUILD_DIR]      (default: build/ at the top)
"""
import csv
import json
import os
import subprocess
import sys

import svgplot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
REFERENCE = os.path.join(ROOT, "tests", "validation", "refdata", "nvidia_dgxc_benchmarking_h100.json")
OUT = os.path.join(ROOT, "results", "validation")


def main():
    text = subprocess.run([os.path.join(BUILD, "trainsim"), "validate", REFERENCE, "--format",
                           "json"], check=True, capture_output=True, text=True).stdout
    rows = json.loads(text)["validation"][0]["rows"]
    fields = ["name", "setup", "half", "measured_s", "predicted_s", "error", "skipped"]
    with open(os.path.join(OUT, "dgxc_step_time.csv.tmp"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    os.replace(os.path.join(OUT, "dgxc_step_time.csv.tmp"), os.path.join(OUT, "dgxc_step_time.csv"))

    groups = {}
    for r in rows:
        if "skipped" in r:
            continue
        model = r["setup"].split(",")[0]
        precision = "FP8" if r["setup"].endswith("fp8") else "BF16"
        groups.setdefault("%s %s" % (model, precision), []).append((r["measured_s"], r["predicted_s"]))
    chart = svgplot.Chart("Step time: trainsim against NVIDIA's DGX Cloud recipes (H100)",
                          "measured step time (s)", "predicted step time (s)")
    for name in sorted(groups):
        chart.series(name, groups[name])
    top = max(m for pts in groups.values() for m, _ in pts)
    chart.series("predicted = measured", [(0.0, 0.0), (top, top)], lines=True)
    chart.save(os.path.join(OUT, "dgxc_step_time.svg"))
    print("wrote %s/dgxc_step_time.csv and .svg" % OUT)


if __name__ == "__main__":
    main()
