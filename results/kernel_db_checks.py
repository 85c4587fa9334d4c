"""How far the H100 kernel database can be trusted between and across measurements: its
interpolation against held-back grid points and off-grid shapes (the MoE routing kernels by
group), and the run-to-run differences of shapes measured again. Sections of kernels.md (written
by kernels_report.py); kernels_h200.py reuses the tables."""
import json
import os
import statistics
import subprocess
import tempfile

from kernel_db_files import BUILD, DB, MEAS, ROOT, load, pct, shape_key


def interpolation_table(db_path, meas):
    """`trainsim_kernel_db interpolation` on a database and the off-grid measurements beside it:
    the command as run and its table (held-back grid points, then off-grid shapes)."""
    cmd = [os.path.join(BUILD, "trainsim_kernel_db"), "interpolation", db_path,
           "--offgrid", meas + "/offgrid.json", "--offgrid", meas + "/offgrid-attention.json"]
    res = json.loads(subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True,
                                    text=True).stdout)
    out = ["| points | class | n | mean | median | p90 | max |", "|---|---|---|---|---|---|---|"]
    for which in ("held_back", "offgrid"):
        for cls, s in res[which].items():
            out.append("| %s | %s | %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% |" % (
                which.replace("_", "-"), cls, s["count"], 100 * s["mean"], 100 * s["median"],
                100 * s["p90"], 100 * s["max"]))
    return cmd, out


def interpolation_section():
    cmd, table = interpolation_table(DB, MEAS)
    out = ["## Interpolation", "",
           "`%s`. Held back: every seventh grid point of each family left out in turn and "
           "interpolated from the rest; off-grid: shapes between the grid points measured on "
           "their own (`--offgrid`). Error = |interpolated / measured - 1|." % " ".join(
               ["trainsim_kernel_db"] + cmd[2:]), ""]
    return out + table + ["", "The run-to-run spread (next section) is the floor under these "
                          "errors: a kernel measured twice does not give the same time either.",
                          ""] + routing_offgrid_section()


# The MoE routing kernels measured between the grid points (offgrid-routing.json), by group:
# (label, which entries).
def _permutation(e):
    return e["op"].startswith(("moe_permute", "moe_unpermute"))


ROUTING_GROUPS = [
    ("router and its gradient (widths between the grid's)",
     lambda e: e["op"].startswith("moe_router")),
    ("permutations, 1,024 tokens or more (rows >= 8,192)",
     lambda e: _permutation(e) and e["rows"] >= 8192),
    ("permutations, fewer tokens", lambda e: _permutation(e) and e["rows"] < 8192),
    ("FP8 cast-transpose", lambda e: e["op"] == "fp8_cast_transpose"),
]


def routing_offgrid_section():
    """Off-grid errors of the routing kernels, per group (interpolated and nearest shapes
    together), from `trainsim_kernel_db interpolation` on each group's shapes of
    measurements/offgrid-routing.json."""
    path = os.path.join(ROOT, MEAS, "offgrid-routing.json")
    if not os.path.exists(path):
        return []
    measured = json.load(open(path))
    out = ["The MoE routing kernels between the grid points (`measurements/offgrid-routing.json`, "
           "%d shapes: `trainsim_kernels --offgrid 24` on the routing ops), per group:" %
           len(measured["entries"]), "",
           "| kernels | n | mean | max |", "|---|---|---|---|"]
    for label, keep in ROUTING_GROUPS:
        entries = [e for e in measured["entries"] if keep(e)]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(measured, entries=entries), f)
        cmd = [os.path.join(BUILD, "trainsim_kernel_db"), "interpolation", DB, "--offgrid", f.name]
        res = json.loads(subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True,
                                        text=True).stdout)
        os.unlink(f.name)
        errors = [s for s in res["offgrid"].values()]
        n = sum(s["count"] for s in errors)
        mean = sum(s["mean"] * s["count"] for s in errors) / n
        out.append("| %s | %d | %.1f %% | %.1f %% |" % (
            label, n, 100 * mean, 100 * max(s["max"] for s in errors)))
    return out + ["", "Few tokens make each token's block's latency, which grows with the row's "
                  "width, the cost; the grid holds one width (4,096), so bytes alone misprice "
                  "them. A training micro-batch routes thousands of tokens.", ""]


def repeat_diffs(db, meas=MEAS):
    """Relative differences of the repeated measurements from the database's, by class."""
    base = {shape_key(e): e for e in db["entries"]}
    by = {}
    for f in ("repeat.json", "repeat-attention.json"):
        for e in load(meas + "/" + f)["entries"]:
            if shape_key(e) in base:
                cls = e["op"] if e["op"] in ("gemm", "attention") else "memory"
                by.setdefault(cls, []).append(e["median_us"] / base[shape_key(e)]["median_us"] - 1)
    return by


def repeat_table(db, meas=MEAS):
    """The repeated measurements' differences from the database's, a row per class."""
    out = ["| class | n | median difference | mean absolute | 5th to 95th percentile |",
           "|---|---|---|---|---|"]
    for cls, v in sorted(repeat_diffs(db, meas).items()):
        v.sort()
        out.append("| %s | %d | %s | %.1f %% | %s to %s |" % (
            cls, len(v), pct(statistics.median(v)), 100 * statistics.mean(abs(x) for x in v),
            pct(v[int(0.05 * (len(v) - 1))]), pct(v[int(0.95 * (len(v) - 1))])))
    return out


def repeat_section(db):
    out = ["## Run to run", "",
           "The default scenario's kernels and part of the grids measured again in a later call "
           "(another lent machine):", ""] + repeat_table(db)
    wide = {}
    for e in db["entries"]:
        if e.get("p10_us") and e["p90_us"] > 1.5 * e["p10_us"]:
            wide[e["op"]] = wide.get(e["op"], 0) + 1
    out += ["", "Within one measurement, %d of the %d entries spread wider than p90 = 1.5 x p10 "
            "(%s): two speeds of the same kernel; the database keeps the median." % (
                sum(wide.values()), len(db["entries"]),
                ", ".join("%d %s" % (n, op) for op, n in sorted(wide.items())) or "none"), ""]
    return out
