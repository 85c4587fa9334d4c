#!/usr/bin/env python3
"""Writes results/scale.md and results/scale/scale.svg: the wall time and peak memory of
`trainsim run` (the default engine, diagnostics and their priced fixes included) from 64 to
131,072 GPUs, against the full simulation where it still runs. Each point is the median of
three runs of the binary in a child process (wall clock and the child's peak resident set).

    results/scale.py [BUILD_DIR]      (default: build/ at the top)
"""
import os
import statistics
import subprocess
import sys
import time

import svgplot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
RUNS = 3

L70 = ["--model", "llama3.1-70b", "--tp", "8", "--pp", "4", "--seq-len", "8192"]
L405 = ["--model", "llama3.1-405b", "--tp", "8", "--seq-len", "8192", "--sp", "--zero", "1",
        "--schedule", "interleaved", "--vp", "2", "--account-for-embedding-in-pipeline-split",
        "--account-for-loss-in-pipeline-split"]

MIXTRAL = ["--model", "mixtral-8x7b", "--tp", "2", "--sp", "--pp", "4", "--vp", "8", "--schedule",
           "interleaved", "--cp", "2", "--ep", "8", "--seq-len", "8192", "--zero", "1"]
DEEPSEEK = ["--model", "deepseek-v3", "--tp", "2", "--sp", "--pp", "8", "--vp", "4", "--schedule",
            "interleaved", "--ep", "64", "--etp", "1", "--seq-len", "4096", "--zero", "1",
            "--partition", "Et|(tt|)*30mL"]


def series():
    """(name, legend label, [(GPUs, pp, dp, args)]): 16 micro-batches per step but where the
    name says (interleaving at pp 64 needs 128)."""
    return [
        ("llama3.1-70b, tp 8, pp 4", "70b pp 4", [
            (32 * dp, 4, dp, L70 + ["--dp", str(dp), "--gbs", str(16 * dp)])
            for dp in (2, 8, 32, 128, 512, 2048, 4096)]),
        ("llama3.1-405b, tp 8, pp 16, vp 2", "405b pp 16 vp 2", [
            (128 * dp, 16, dp, L405 + ["--pp", "16", "--dp", str(dp), "--gbs", str(16 * dp)])
            for dp in (1, 8, 32, 128, 512, 1024)]),
        ("llama3.1-405b, tp 8, dp 8, pp 2 to 64, 128 micro-batches", "405b dp 8, pp 2-64", [
            (64 * pp, pp, 8, L405 + ["--pp", str(pp), "--dp", "8", "--gbs", "1024"])
            for pp in (2, 4, 8, 16, 32, 64)]),
        ("mixtral-8x7b, tp 2, pp 4, vp 8, cp 2, ep 8, seq 8192", "mixtral cp 2 ep 8", [
            (16 * dp, 4, dp, MIXTRAL + ["--dp", str(dp), "--gbs", str(16 * dp)])
            for dp in (4, 16, 64, 256, 1024, 2048)]),
        ("deepseek-v3, tp 2, pp 8, vp 4, ep 64, seq 4096", "deepseek-v3 ep 64", [
            (16 * dp, 8, dp, DEEPSEEK + ["--dp", str(dp), "--gbs", str(16 * dp)])
            for dp in (64, 256, 1024)]),
        ("gpt3-175b, tp 8, pp 8, vp 12, seq 2048, 48 micro-batches", "gpt3-175b vp 12", [
            (2048, 8, 32, ["--model", "gpt3-175b", "--tp", "8", "--pp", "8", "--dp", "32",
                           "--vp", "12", "--schedule", "interleaved", "--gbs", "1536",
                           "--seq-len", "2048", "--sp", "--zero", "1"])]),
    ]


def measure(args):
    """Median wall seconds and peak RSS (MiB) of `trainsim run ARGS` over RUNS runs, and
    whether the plan fits in memory (no oom diagnostic)."""
    walls, peaks, fits = [], [], True
    for _ in range(RUNS):
        start = time.monotonic()
        child = subprocess.Popen([os.path.join(BUILD, "trainsim"), "run", "--platform",
                                  "h100-sxm-ndr"] + args, cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        report = child.stdout.read().decode()
        _, status, usage = os.wait4(child.pid, 0)
        fits = "] oom " not in report
        walls.append(time.monotonic() - start)
        peaks.append(usage.ru_maxrss / 1024.0)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit("scale.py: trainsim run %s failed: %s" % (
                " ".join(args), child.stderr.read().decode()))
        child.stdout.close()
        child.stderr.close()
    return statistics.median(walls), statistics.median(peaks), fits


def main():
    plots = os.path.join(ROOT, "results", "scale")
    os.makedirs(plots, exist_ok=True)
    chart = svgplot.Chart("trainsim run: wall time against cluster size", "GPUs",
                          "seconds", logx=True, logy=True)
    rows = ["| series | GPUs | pp | dp | fits | replay | wall time | peak memory |",
            "|---|---|---|---|---|---|---|---|"]
    for name, label, points in series():
        pts = []
        for gpus, pp, dp, args in points:
            wall, peak, fits = measure(args)
            pts.append((gpus, wall))
            rows.append("| %s | %d | %d | %d | %s | symmetric | %.2f s | %.0f MiB |" % (
                name, gpus, pp, dp, "yes" if fits else "no", wall, peak))
        chart.series(label, pts, lines=True)
    full = []
    for gpus, pp, dp, args in series()[0][2][:4]:
        wall, peak, fits = measure(args + ["--full-simulation"])
        full.append((gpus, wall))
        rows.append("| llama3.1-70b, tp 8, pp 4 | %d | %d | %d | %s | full | %.2f s | %.0f MiB |"
                    % (gpus, pp, dp, "yes" if fits else "no", wall, peak))
    chart.series("70b pp 4, full", full, lines=True)
    chart.save(os.path.join(plots, "scale.svg"))
    text = ["# Scale", "",
            "Wall time and peak memory of `trainsim run` on `h100-sxm-ndr`, with the default "
            "engine (SimGrid) and everything a run does: reading the inputs, the diagnostics "
            "with their fixes priced, the replay and the report. Written by `results/scale.py` "
            "(run by `results/regenerate.sh`) on the machine that ran it; the median of %d "
            "runs each. 16 micro-batches per step but where said. Symmetric: one GPU per "
            "pipeline stage replays the stage for all its GPUs (the default where the layout allows it); "
            "full: every GPU (`--full-simulation`)." % RUNS, "",
            "![wall time against GPUs](scale/scale.svg)", ""] + rows + [
            "", "Past 16,384 GPUs the cluster is a projection (the same rail-optimised fat-tree "
            "grown): Llama 3 405B was trained on 16,384 H100s. The replay's cost follows the "
            "pipeline stages, not data parallelism: the second series' cost is flat in dp, the "
            "third's grows with pp. A plan that does not fit (fits: no) also pays for the search "
            "of the fastest plan that does: every candidate that fits is replayed to price it, "
            "so Llama 3.1 405B at pp 2 and 4 costs more than at pp 8.", ""]
    path = os.path.join(ROOT, "results", "scale.md")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(text))
    os.replace(path + ".tmp", path)
    print("wrote %s" % path)


if __name__ == "__main__":
    main()
