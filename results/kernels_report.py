#!/usr/bin/env python3
"""Writes results/kernels.md and its plots (results/kernels/*.svg) from the measured H100
kernel database (platforms/h100-sxm/kernels.json), the measurements beside it and the
reference figures in tests/validation/refdata/; runs build/trainsim_kernel_db for the
interpolation errors and build/trainsim for the predictions with either database.

    results/kernels_report.py [BUILD_DIR]      (default: build/ at the top)
"""
import json
import os
import statistics
import subprocess

import svgplot
from kernel_db_accumulate import accumulate_section
from kernel_db_checks import interpolation_section, repeat_diffs, repeat_section
from kernel_db_files import (BUILD, DB, MEAS, PUBLISHED_DB, REF, ROOT, flops, load, pct, shape_key,
                             tflops, write_markdown)


def machine_section(db):
    m, g = db["measurement"], db["gpu"]
    return ["## The machine and the method", "",
            "| | |", "|---|---|",
            "| GPU | %s, %d SMs, SM clock up to %.0f MHz, memory clock %.0f MHz, L2 %.0f MiB |" % (
                g["name"], g["sm_count"], g["sm_clock_MHz"], g["memory_clock_MHz"], g["l2_MiB"]),
            "| driver | %s |" % m["driver"], "| CUDA runtime | %s |" % m["cuda_runtime"],
            "| cuBLASLt | %s |" % m["cublaslt"], "| cuDNN | %s |" % m["cudnn"],
            "| measured | %s |" % m["date"], "| entries | %d |" % len(db["entries"]), "",
            "Method: " + m["method"], ""] + ["- " + n for n in db.get("notes", [])] + [""]


def gemm_section(db, platform, plots):
    ref = {r["dtype"].split()[0]: r for r in load(REF + "/h100_gemm_max_achievable_tflops.json")["rows"]
           if r["accelerator"] == "NVIDIA H100 SXM"}
    peaks = platform["gpu"]["peak_dense_tflops"]
    out = ["## GEMMs", "",
           "| | best found | at m x n x k, layout | published best (same GPU) | peak | of peak |",
           "|---|---|---|---|---|---|"]
    for dtype, name in (("bf16", "BF16"), ("fp8", "FP8")):
        es = [e for e in db["entries"] if e["op"] == "gemm" and e["dtype"] == dtype]
        best = max(es, key=tflops)
        out.append("| %s | %.1f TFLOP/s | %d x %d x %d %s | %.1f (%s) | %d | %.1f %% |" % (
            name, tflops(best), best["m"], best["n"], best["k"], best.get("layout", "tn"),
            ref[name]["mamf_tflops"],
            ref[name]["best_shape_MxNxK"], peaks[dtype], 100 * tflops(best) / peaks[dtype]))
    out += ["", "Published best: `%s/h100_gemm_max_achievable_tflops.json` (torch matmul, a "
            "searched shape). The database's ceilings and the platform's roofline efficiencies "
            "are these best rates." % REF, ""]
    out += gemm_rate_plots(db, peaks, ref, plots)
    return out


def gemm_rate_plots(db, peaks, ref, plots):
    grid = [e for e in db["entries"] if e["op"] == "gemm" and e.get("layout", "tn") == "tn"]
    chart = svgplot.Chart("H100 GEMM rate against size (cuBLASLt, every measured tn GEMM)",
                          "m x n x k", "TFLOP/s", logx=True)
    for dtype in ("bf16", "fp8"):
        chart.series(dtype.upper(), [(e["m"] * e["n"] * e["k"], tflops(e))
                                     for e in grid if e["dtype"] == dtype])
    chart.hline("BF16 peak", peaks["bf16"])
    chart.hline("BF16 published best", ref["BF16"]["mamf_tflops"])
    chart.hline("FP8 published best", ref["FP8"]["mamf_tflops"])
    chart.save(os.path.join(plots, "gemm-rate-vs-size.svg"))
    by_k = svgplot.Chart("GEMM rate against k at fixed m = n", "k", "TFLOP/s", logx=True)
    for dtype in ("bf16", "fp8"):
        for mn in (1024, 4096, 16384):
            pts = [(e["k"], tflops(e)) for e in grid
                   if e["dtype"] == dtype and e["m"] == mn and e["n"] == mn]
            by_k.series("%s m=n=%d" % (dtype.upper(), mn), pts, lines=True)
    by_k.save(os.path.join(plots, "gemm-rate-vs-k.svg"))
    return ["![GEMM rate against m x n x k](kernels/gemm-rate-vs-size.svg)", "",
            "![GEMM rate against k](kernels/gemm-rate-vs-k.svg)", "",
            "Small products run far below the peak (launch cost, too few tiles for 132 SMs), a "
            "short k gives each tile little work, and neighbouring shapes scatter (tile and wave "
            "quantization over 132 SMs, cuBLASLt's choice of kernel per shape).", ""]


def training_gemms_section(run_json):
    out = ["### The default scenario's GEMMs", "",
           "Llama 3.1 70B at TP 4, 8192 tokens per micro-batch (`scenarios/llama3.1-70b-64gpu.json`"
           "), each timed exactly:", "",
           "| kernel | shape | time | TFLOP/s |", "|---|---|---|---|"]
    seen, rates = set(), []
    for k in run_json["provenance"]["kernels"]:
        if k["kind"] != "gemm" or k["shape"] in seen:
            continue
        seen.add(k["shape"])
        rates.append(k["flops"] / k["seconds"] / 1e12)
        out.append("| %s | %s | %.1f us | %.0f |" % (k["name"], k["shape"], k["seconds"] * 1e6,
                                                    rates[-1]))
    return out + ["", "%.0f to %.0f TFLOP/s: none at the best rate; the old model ran them all "
                  "at 794.5." % (min(rates), max(rates)), ""]


def layout_section(db, run_json):
    """BF16 GEMMs in the data-gradient (nn) and weight-gradient (nt) layouts against tn."""
    tn = {(e["m"], e["n"], e["k"]): e for e in db["entries"]
          if e["op"] == "gemm" and e["dtype"] == "bf16" and e.get("layout", "tn") == "tn"}
    medians = []
    out = ["### Layouts", "",
           "The cost model times every GEMM in the tn layout (a linear layer's forward, and every "
           "FP8 GEMM on Hopper); BF16 data and weight gradients run nn and nt. The suite timed "
           "the BF16 grid and the catalog's gradient GEMMs in those layouts too (call 4, another "
           "machine than the tn GEMMs'): time against the tn GEMM of the same m, n, k:", "",
           "| layout | GEMMs | median | 10th to 90th percentile |", "|---|---|---|---|"]
    for layout in ("nn", "nt"):
        ratios = sorted(e["median_us"] / tn[(e["m"], e["n"], e["k"])]["median_us"]
                        for e in db["entries"] if e["op"] == "gemm" and
                        e.get("layout") == layout and (e["m"], e["n"], e["k"]) in tn)
        medians.append(statistics.median(ratios) - 1)
        out.append("| %s | %d | %s | %s to %s |" % (
            layout, len(ratios), pct(statistics.median(ratios) - 1),
            pct(ratios[len(ratios) // 10] - 1), pct(ratios[9 * len(ratios) // 10] - 1)))
    out += ["", "The default scenario's gradients:", "",
            "| kernel | tn | in its layout | |", "|---|---|---|---|"]
    laid = {(e["m"], e["n"], e["k"], e.get("layout")): e for e in db["entries"]
            if e["op"] == "gemm" and e["dtype"] == "bf16"}
    seen = set()
    for k in run_json["provenance"]["kernels"]:
        name = k["name"]
        layout = "nn" if name.endswith(".dgrad") else "nt" if name.endswith(".wgrad") else None
        if k["kind"] != "gemm" or layout is None or k["shape"] in seen:
            continue
        seen.add(k["shape"])
        dims = dict(w.split("=") for w in k["shape"].split() if "=" in w)
        m, n, kk = int(dims["m"]), int(dims["n"]), int(dims["k"])
        e = laid.get((m, n, kk, layout))
        if e:
            out.append("| %s (%s) | %.1f us | %.1f us | %s |" % (
                name, k["shape"], k["seconds"] * 1e6, e["median_us"],
                pct(e["median_us"] / (k["seconds"] * 1e6) - 1)))
    spread = statistics.mean(abs(d) for d in repeat_diffs(db).get("gemm", [0]))
    return out + ["", "Medians of %s and %s, against %.1f %% between two measurements of the "
                  "same tn GEMM (Run to run, below)." % (pct(medians[0]), pct(medians[1]),
                                                         100 * spread), ""]


def grouped_section(db):
    out = ["## Grouped GEMMs (MoE experts)", "",
           "One strided-batched cuBLASLt launch over the local experts, equal tokens per expert; "
           "4096 tokens per GPU, the first linear layer's forward (gate and up), expert TP 1 but "
           "where named; beside it, where the database has that shape, one expert's GEMM as a "
           "plain launch (how sequential experts, `--no-moe-grouped-gemm`, are priced):", "",
           "| layer | experts | EP | local experts | tokens per expert | n x k | BF16 TFLOP/s | "
           "FP8 TFLOP/s | one expert, plain: BF16 | FP8 |", "|---|---|---|---|---|---|---|---|---|---|"]
    layers = [("mixtral-8x7b", 8, 2, 4096, 14336), ("deepseek-v3", 256, 8, 7168, 2048),
              ("deepseek-proxy-32e", 32, 8, 7168, 2048), ("grok-1", 8, 2, 6144, 32768),
              ("grok-1, expert TP 4", 8, 2, 6144, 8192), ("llama4-maverick", 128, 1, 5120, 8192)]
    index = {shape_key(e): e for e in db["entries"] if e["op"] in ("grouped_gemm", "gemm")}
    for name, experts, topk, hidden, ffn in layers:
        for ep in (1, 2, 4, 8, 16, 32, 64, 128):
            groups, m = experts // ep, 4096 * topk * ep // experts
            if experts % ep or groups < 2 or groups > 32:
                continue
            rates = []
            for op, extra in (("grouped_gemm", {"groups": groups}), ("gemm", {})):
                for dtype in ("bf16", "fp8"):
                    e = index.get(shape_key(dict({"op": op, "dtype": dtype, "m": m,
                                                  "n": 2 * ffn, "k": hidden}, **extra)))
                    rates.append("%.0f" % tflops(e) if e else "-")
            out.append("| %s | %d | %d | %d | %d | %d x %d | %s |" % (
                name, experts, ep, groups, m, 2 * ffn, hidden, " | ".join(rates)))
    return out + [""]


def attention_section(db):
    fa2_pub = {(r["head_dim"], r["causal"], r["seq_len"]): r["tflops"]
               for r in load(REF + "/flashattention_h100_kernel_tflops.json")["rows"]
               if r["impl"] == "flashattention2"}
    ours = {shape_key(e): e for e in db["entries"] if e["op"] == "attention"}
    fa2 = {shape_key(e): e for e in load(MEAS + "/fa2.json")["entries"]}
    out = ["## Attention", "",
           "cuDNN's SDPA through PyTorch (forward and backward), on FlashAttention's benchmark "
           "shapes (hidden 2048, 16k tokens per batch), in its FLOP convention (causal counts the "
           "unmasked half; backward 2.5x the forward). FlashAttention-2's published fwd+bwd "
           "figure (`%s/flashattention_h100_kernel_tflops.json`) beside the same kernel timed "
           "here through PyTorch's FlashAttention-2:" % REF, "",
           "| head dim | mask | seq | cuDNN fwd | cuDNN bwd | cuDNN fwd+bwd | FA2 fwd+bwd here | "
           "FA2 published | here vs published |", "|---|---|---|---|---|---|---|---|---|"]
    speedups = []
    for d in (64, 128):
        for causal in (False, True):
            for seq in (512, 1024, 2048, 4096, 8192, 16384):
                shape = {"op": "attention", "dtype": "bf16", "batch": 16384 // seq, "seq": seq,
                         "heads": 2048 // d, "kv_heads": 2048 // d, "head_dim": d,
                         "causal": causal}
                f, b = (ours.get(shape_key(dict(shape, **{"pass": p}))) for p in ("fwd", "bwd"))
                ff, fb = (fa2.get(shape_key(dict(shape, **{"pass": p}))) for p in ("fwd", "bwd"))
                if not (f and b and ff and fb):
                    continue
                both = 3.5 * flops(f) / (f["median_us"] + b["median_us"]) / 1e6
                fa2_both = 3.5 * flops(ff) / (ff["median_us"] + fb["median_us"]) / 1e6
                pub = fa2_pub.get((d, causal, seq))
                speedups.append(both / fa2_both)
                out.append("| %d | %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %s |" % (
                    d, "causal" if causal else "full", seq, tflops(f), tflops(b), both, fa2_both,
                    pub or "-", pct(fa2_both / pub - 1) if pub else "-"))
    out += ["", "FlashAttention-2 timed here matches its published figure at head dim 64 (the "
            "last column), so the method holds; at head dim 128 the build inside PyTorch runs "
            "below the figure's. cuDNN's kernels, which the database holds, run %.2f to %.2f "
            "times as fast as FlashAttention-2 here." % (min(speedups), max(speedups))]
    return out + [""] + attention_checks(ours)


def attention_checks(ours):
    graph = load(MEAS + "/attention-graph.json")["entries"]
    diffs = sorted(e["median_us"] / ours[shape_key(e)]["median_us"] - 1 for e in graph
                   if shape_key(e) in ours)
    d192 = [e for e in ours.values() if e["head_dim"] == 192 and e["batch"] == 1 and
            e["seq"] == 8192 and e["heads"] == e["kv_heads"] == 32]
    out = ["The same forwards through the C++ suite's own cuDNN graph (`kernels/cuda/"
           "attention.cu`), %d shapes: median difference %s, range %s to %s." % (
               len(diffs), pct(statistics.median(diffs)), pct(diffs[0]), pct(diffs[-1])), ""]
    if d192:
        out.append("Head dim 192 (Nemotron-4), 32 heads, seq 8192: " + ", ".join(
            "%s %s %.0f TFLOP/s" % (e["pass"], "causal" if e["causal"] else "full", tflops(e))
            for e in sorted(d192, key=lambda e: (e["pass"], e["causal"]))) + ".")
    return out + [""]


def memory_section(db, platform):
    hbm = platform["gpu"]["hbm_bandwidth_GBps"]
    bytes_per = {"copy": 4, "add": 6, "rmsnorm": 4, "rmsnorm.grad": 6, "layernorm": 4,
                 "layernorm.grad": 6, "rope": 4, "rope.grad": 4, "swiglu": 6, "swiglu.grad": 10,
                 "geglu": 6, "geglu.grad": 10, "gelu": 4, "gelu.grad": 6, "relu": 4,
                 "relu.grad": 6, "squared_relu": 4, "squared_relu.grad": 6, "embedding": 4,
                 "embedding.grad": 10, "cast": 6, "cast.grad": 6, "cross_entropy": 6,
                 "cross_entropy.grad": 6, "grad_norm": 4, "adam": 30}
    out = ["## Memory-bound kernels", "",
           "At 2^28 elements (the grid's largest), bytes counted as each input read once and "
           "each output written once (`sim/platform/kernel_shape.cpp`), against the sheet's "
           "%d GB/s:" % hbm, "", "| op | GB/s | of HBM peak |", "|---|---|---|"]
    shares = {}
    for e in db["entries"]:
        if e["op"] in bytes_per and e["rows"] * e["cols"] == 2 ** 28:
            gbps = e["rows"] * e["cols"] * bytes_per[e["op"]] / e["median_us"] / 1e3
            shares[e["op"]] = gbps / hbm
            out.append("| %s | %.0f | %.1f %% |" % (e["op"], gbps, 100 * gbps / hbm))
    rest = [v for k, v in shares.items() if k != "embedding.grad"]
    out += ["", "`embedding.grad` is a scatter-add with atomics (%.0f %%); the others stream at "
            "%.0f to %.0f %% of the sheet." % (100 * shares["embedding.grad"], 100 * min(rest),
                                               100 * max(rest)), ""]
    return out


# NeMo's pre-training defaults; its FP8 recipes also keep FP8 primary weights (--fp8-param-gather).
NEMO = ["--sp", "--zero", "1", "--overlap-grad-reduce", "--overlap-param-gather",
        "--tp-comm-overlap"]
PREDICTIONS = [  # name, trainsim arguments, published row (model, precision, GPUs) or None
    ("llama3.1-70b-64gpu", ["scenarios/llama3.1-70b-64gpu.json"], None),
    ("nemotron4-340b, BF16", ["scenarios/nemotron4-340b.json"], ("Nemotron4 340B", "BF16", 256)),
    ("nemotron4-340b, FP8",
     ["scenarios/nemotron4-340b.json", "--precision", "fp8", "--fp8-param-gather"],
     ("Nemotron4 340B", "FP8", 256)),
    ("nemotron4-15b on 16 GPUs, BF16",
     ["--model", "nemotron4-15b", "--platform", "h100-sxm-ndr", "--tp", "2", "--dp", "8",
      "--mbs", "2", "--gbs", "64", "--seq-len", "4096"] + NEMO, ("Nemotron4 15B", "BF16", 16)),
    ("nemotron4-15b on 16 GPUs, FP8",
     ["--model", "nemotron4-15b", "--platform", "h100-sxm-ndr", "--tp", "2", "--dp", "8",
      "--mbs", "2", "--gbs", "64", "--seq-len", "4096", "--precision", "fp8",
      "--fp8-param-gather"] + NEMO, ("Nemotron4 15B", "FP8", 16)),
]


def published_step(row):
    model, precision, gpus = row
    for r in load(REF + "/nvidia_dgxc_benchmarking_h100.json")["rows"]:
        if (r["model"], r["precision"], r["n_gpus"], r["source"]["tag"]) == (
                model, precision, gpus, "v25.05.05"):
            return r["step_time_s"]
    return None


def step_time(args, db):
    cmd = [os.path.join(BUILD, "trainsim"), "run"] + args + ["--kernel-db", db, "--format", "json"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        raise SystemExit("kernels_report: %s failed: %s" % (" ".join(cmd), res.stderr))
    return json.loads(res.stdout)


def predictions_section():
    out = ["## How the predictions moved", "",
           "Step time with the published database (`--kernel-db %s`: FlashAttention-2's figure "
           "for attention, the roofline for the rest) and with the measured one (the default), "
           "the platform otherwise the same; against NVIDIA's DGX Cloud step times "
           "(`%s/nvidia_dgxc_benchmarking_h100.json`, release v25.05.05) where they exist. "
           "Flags beyond the layout are the NeMo recipe's overlaps (the table does not list "
           "them):" % (PUBLISHED_DB, REF), "",
           "| run | published database | measured database | NVIDIA measured | error before | "
           "error after | kernel time measured or interpolated |", "|---|---|---|---|---|---|---|"]
    runs = {}
    for name, args, row in PREDICTIONS:
        before, after = step_time(args, PUBLISHED_DB), step_time(args, DB)
        runs[name] = after
        share = after["provenance"]["kernel_time_share"]
        pub = published_step(row) if row else None
        out.append("| %s | %.3f s | %.3f s | %s | %s | %s | %.1f %% |" % (
            name, before["step_time_s"], after["step_time_s"], "%.3f s" % pub if pub else "-",
            pct(before["step_time_s"] / pub - 1) if pub else "-",
            pct(after["step_time_s"] / pub - 1) if pub else "-",
            100 * (share["measured"] + share["interpolated"])))
    out += ["", "Memory predictions (`results/validation/`) do not use kernel times and did not "
            "move. The rest of the gap to NVIDIA's step times is the subject of the accuracy "
            "work: kernels slowed by concurrent communication, per-step fixed work, host gaps.",
            ""]
    return out, runs["llama3.1-70b-64gpu"]


def main():
    db, platform = load(DB), load("platforms/h100-sxm-ndr.json")
    # The sections below read the plain GEMMs; the accumulating ones have their own section.
    db = dict(db, entries=[e for e in db["entries"] if not e.get("accumulate")])
    plots = os.path.join(ROOT, "results", "kernels")
    os.makedirs(plots, exist_ok=True)
    predictions, default_run = predictions_section()
    lines = ["# The H100 kernel database", "",
             "What the project's CUDA suite measured on an H100 (`%s`), and what it changed. "
             "Generated by `results/kernels_report.py` (run by `results/regenerate.sh`) from the "
             "database, the measurements beside it (`%s/`) and the reference figures; every "
             "number below comes from those files." % (DB, MEAS), ""]
    lines += machine_section(db) + gemm_section(db, platform, plots)
    lines += training_gemms_section(default_run) + layout_section(db, default_run)
    lines += grouped_section(db) + accumulate_section()
    lines += attention_section(db) + memory_section(db, platform)
    lines += interpolation_section() + repeat_section(db) + predictions
    write_markdown("kernels.md", lines)


if __name__ == "__main__":
    main()
