"""The files the kernel-database reports read and write, and the helpers they share: the
measured and published H100 databases, the measurements beside them, the reference figures, and
a kernel entry's FLOPs, rate and shape key. Used by kernels_report.py, kernel_db_checks.py and
kernels_h200.py."""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
DB = "platforms/h100-sxm/kernels.json"
PUBLISHED_DB = "platforms/h100-sxm/kernels-published.json"
MEAS = "platforms/h100-sxm/measurements"
REF = "tests/validation/refdata"


def load(path):
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


def flops(e):
    if e["op"] in ("gemm", "grouped_gemm"):
        return 2.0 * e.get("groups", 1) * e["m"] * e["n"] * e["k"]
    if e["op"] == "attention":
        f = 4.0 * e["batch"] * e["seq"] ** 2 * e["heads"] * e["head_dim"]
        return f * (0.5 if e["causal"] else 1) * (2.5 if e["pass"] == "bwd" else 1)
    return 0.0


def tflops(e):
    return flops(e) / e["median_us"] / 1e6


def shape_key(e):
    return tuple(sorted((k, v) for k, v in e.items()
                        if k not in ("median_us", "p10_us", "p90_us", "repetitions", "source")))


def pct(x, digits=1):
    return "%+.*f %%" % (digits, 100 * x)


def write_markdown(name, lines):
    """results/NAME from `lines`, through a temporary file."""
    path = os.path.join(ROOT, "results", name)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines))
    os.replace(path + ".tmp", path)
    print("wrote %s" % path)
