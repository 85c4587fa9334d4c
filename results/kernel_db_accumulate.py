"""The kernel-database report's section on weight-gradient GEMMs accumulating into FP32 (the
suite's `accumulate` GEMMs, Megatron-LM's gradient-accumulation fusion): their time against
their plain twins timed the same way in the next call (measurements/accumulate.json and
accumulate-twins.json), by the GEMM's depth k. Used by kernels_report.py."""
import statistics

from kernel_db_files import DB, MEAS, load, pct, shape_key

DEPTHS = [(0, 1024, "k <= 1,024"), (1025, 2048, "2,048"), (2049, 4096, "4,096"),
          (4097, 8192, "8,192"), (8193, 1 << 30, "k > 8,192")]


def plain_key(e):
    """The shape key of an accumulating entry's plain twin."""
    return shape_key(dict((k, v) for k, v in e.items() if k != "accumulate"))


def twins():
    """(accumulating entry, its plain twin's median) for every shape both files hold."""
    plain = {}
    for e in load(MEAS + "/accumulate-twins.json")["entries"]:
        plain[shape_key(e)] = e["median_us"]
    out = []
    for e in load(MEAS + "/accumulate.json")["entries"]:
        key = plain_key(e)
        if key in plain:
            out.append((e, plain[key]))
    return out


def accumulate_section():
    pairs = twins()
    out = ["## Weight gradients accumulating into FP32", "",
           "Megatron-LM's gradient-accumulation fusion has each weight-gradient GEMM add its "
           "product into the FP32 main gradient in its epilogue (C read and D written in FP32, "
           "beta 1), as Transformer Engine calls cuBLASLt. The suite timed %d such GEMMs (call 9) and their plain twins writing BF16 the same "
           "way (call 11); time against the twin, by the depth k (the tokens, or an expert's "
           "rows, the weight gradient sums over):" % len(pairs), "",
           "| GEMMs | " + " | ".join(d[2] for d in DEPTHS) + " |",
           "|---|" + "---|" * len(DEPTHS)]
    for op in ("gemm", "grouped_gemm"):
        for dtype in ("bf16", "fp8"):
            cells = []
            for lo, hi, _ in DEPTHS:
                r = [e["median_us"] / t for e, t in pairs
                     if e["op"] == op and e["dtype"] == dtype and lo <= e["k"] <= hi]
                cells.append("%s (%d)" % (pct(statistics.median(r) - 1, 0), len(r)) if r else "-")
            out.append("| %s %s | %s |" % ("grouped" if op == "grouped_gemm" else "plain",
                                           dtype.upper(), " | ".join(cells)))
    plain = {shape_key(e): e["median_us"] for e in load(DB)["entries"]
             if e["op"] in ("gemm", "grouped_gemm") and not e.get("accumulate")}
    drift = sorted(t / plain[plain_key(e)] for e, t in pairs if plain_key(e) in plain)
    shallow = [statistics.median([e["median_us"] / t for e, t in pairs
                                  if e["op"] == "grouped_gemm" and e["dtype"] == d and
                                  e["k"] <= 1024]) for d in ("bf16", "fp8")]
    out += ["", "Medians (GEMMs). The epilogue's FP32 traffic hides behind a deep main loop and "
            "shows behind a shallow one, and more in FP8, whose main loop is shorter: a dense "
            "layer's weight gradient at 4,096 to 8,192 tokens pays a few per cent, the grouped "
            "weight gradient of experts of 1,024 rows or fewer takes %.1f (BF16) and %.1f (FP8) "
            "times its twin's time." % tuple(shallow), "",
            "The twins against the database's own entries of the same shapes, timed in earlier "
            "calls at 50 to 200 ms per shape instead of 30: %d shapes, median %s, 10th to 90th "
            "percentile %s to %s. That spread between runs is as large as the accumulation at a "
            "dense layer's depth; the cost model does not yet price weight gradients from the "
            "accumulating entries (README, Kernel timings, says why)." % (
                len(drift), pct(statistics.median(drift) - 1), pct(drift[len(drift) // 10] - 1),
                pct(drift[9 * len(drift) // 10] - 1)), ""]
    return out
