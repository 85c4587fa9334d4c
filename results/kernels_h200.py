#!/usr/bin/env python3
"""Writes results/kernels-h200.md: the H200 kernel database (platforms/h200-sxm/kernels.json)
against the H100's, kernel by kernel, its interpolation and run-to-run checks, and what the
h200-sxm-ndr platform predicts beside h100-sxm-ndr; runs build/trainsim_kernel_db and
build/trainsim.

    results/kernels_h200.py [BUILD_DIR]      (default: build/ at the top)
"""
import json
import os
import statistics
import subprocess

from kernel_db_checks import interpolation_table, repeat_table
from kernel_db_files import BUILD, ROOT, load, shape_key, write_markdown
from kernels_report import machine_section
DB, H100_DB = "platforms/h200-sxm/kernels.json", "platforms/h100-sxm/kernels.json"
MEAS = "platforms/h200-sxm/measurements"


def family(e):
    """The class a kernel's H100/H200 ratio is reported under."""
    if e["op"] in ("gemm", "grouped_gemm"):
        return "%s %s %s" % (e["op"], e["dtype"], e.get("layout", "tn"))
    if e["op"] == "attention":
        return "attention %s" % e["pass"]
    if e["op"].startswith("moe_router"):  # bound by its top-k passes, not its bytes
        return "router (softmax and top-k, and its gradient)"
    size = e.get("rows", 1) * e.get("cols", 1)
    return "memory-bound, %s" % ("2^24 elements or more" if size >= 1 << 24 else "smaller")


def quantile(v, q):
    return v[int(q * (len(v) - 1))]


def ratio_section(db, h100):
    base = {shape_key(e): e for e in h100["entries"]}
    by = {}
    for e in db["entries"]:
        other = base.get(shape_key(e))
        if other:
            by.setdefault(family(e), []).append(other["median_us"] / e["median_us"])
    out = ["## The H200 against the H100, kernel by kernel", "",
           "Speed-up = H100 time / H200 time for every shape both databases hold (the same "
           "suite, the same shapes; the H100's timed about 200 ms per shape, the H200's about "
           "50 ms):", "",
           "| kernels | shapes | median speed-up | 10th to 90th percentile |", "|---|---|---|---|"]
    for fam, v in sorted(by.items()):
        v.sort()
        out.append("| %s | %d | %.3f | %.3f to %.3f |" % (
            fam, len(v), statistics.median(v), quantile(v, 0.1), quantile(v, 0.9)))
    c, h = db["ceilings"], h100["ceilings"]
    out += ["", "| ceiling | H200 | H100 | H200 / H100 |", "|---|---|---|---|"]
    for key, name in (("gemm_bf16_tflops", "best BF16 GEMM, TFLOP/s"),
                      ("gemm_fp8_tflops", "best FP8 GEMM, TFLOP/s"),
                      ("copy_GBps", "device-to-device copy, GB/s read + written")):
        out.append("| %s | %.1f | %.1f | %.3f |" % (name, c[key], h[key], c[key] / h[key]))
    out += ["", "The matrix units are the H100's: GEMMs and attention run at the same rates "
            "within a few per cent. Memory-bound kernels on large tensors gain what the faster "
            "HBM3e gives (the copy ceiling's ratio); small ones are bound by launch and latency "
            "and gain little.", ""]
    return out


def interpolation_section():
    cmd, table = interpolation_table(DB, MEAS)
    return ["## Interpolation", "", "`%s` (as for the H100, `results/kernels.md`):" % " ".join(
        ["trainsim_kernel_db"] + cmd[1:]), ""] + table + [""]


def repeat_section(db):
    return ["## Run to run", "", "The default scenario's kernels and part of the grids measured "
            "again in a later call on the same machine:", ""] + repeat_table(db, MEAS) + [""]


PREDICTIONS = [  # name, trainsim arguments (the platform is added)
    ("llama3.1-70b, 64 GPUs (the default scenario)", ["scenarios/llama3.1-70b-64gpu.json"]),
    ("nemotron4-340b, 256 GPUs, BF16", ["scenarios/nemotron4-340b.json"]),
    ("nemotron4-340b, 256 GPUs, FP8 (FP8 primary weights, as NeMo)",
     ["scenarios/nemotron4-340b.json", "--precision", "fp8", "--fp8-param-gather"]),
    ("llama3.1-8b, 8 GPUs, CP 2, seq 8192",
     ["--model", "llama3.1-8b", "--tp", "1", "--cp", "2", "--dp", "4", "--mbs", "1", "--gbs",
      "128", "--seq-len", "8192", "--zero", "1"]),
]


def run(args, platform):
    cmd = [os.path.join(BUILD, "trainsim"), "run"] + args + [
        "--platform", platform, "--engine", "analytic", "--format", "json"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        raise SystemExit("kernels_h200: %s failed: %s" % (" ".join(cmd), res.stderr))
    return json.loads(res.stdout)


def peak(report):
    return max(s["peak_memory_bytes"] for s in report["stages"]) / 2**30


def fits(report):
    return "no" if any(d["id"] == "oom" for d in report["diagnostics"]) else "yes"


def predictions_section():
    out = ["## What the platform predicts", "",
           "`trainsim run ARGS --platform P --engine analytic`, the same plan on "
           "`h100-sxm-ndr` and `h200-sxm-ndr` (the H200 platform carries the H100's calibration: "
           "the reference set has no H200 step times to fit or check against, so these are "
           "predictions, not validated figures):", "",
           "| run | H100 step | H200 step | H200 speed-up | peak memory per GPU | fits on H100 / H200 |",
           "|---|---|---|---|---|---|"]
    for name, args in PREDICTIONS:
        a, b = run(args, "h100-sxm-ndr"), run(args, "h200-sxm-ndr")
        out.append("| %s | %.3f s | %.3f s | %.3f | %.1f GiB | %s / %s |" % (
            name, a["step_time_s"], b["step_time_s"], a["step_time_s"] / b["step_time_s"],
            peak(b), fits(a), fits(b)))
    return out + ["", "The compute units and the network are the H100's, so a step bound by GEMMs and "
                  "attention runs at the H100's speed: the differences above are within the "
                  "kernels' run-to-run spread. What the H200 buys is memory: plans that do not "
                  "fit in 80 GB fit in 141 GB, and the time it saves comes from using that room "
                  "(larger micro-batches, less recomputation, fewer pipeline stages), which "
                  "`trainsim sweep` will search.", ""]


def main():
    db, h100 = load(DB), load(H100_DB)
    lines = ["# The H200 kernel database", "",
             "What the project's CUDA suite measured on an H200 (`%s`, merged from `%s/`), "
             "against the H100's. Generated by `results/kernels_h200.py` (run by "
             "`results/regenerate.sh`); every number below comes from those files." % (DB, MEAS),
             ""]
    lines += machine_section(db) + ratio_section(db, h100) + interpolation_section()
    lines += repeat_section(db) + predictions_section()
    write_markdown("kernels-h200.md", lines)


if __name__ == "__main__":
    main()
