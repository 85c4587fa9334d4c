#!/usr/bin/env python3
"""Writes results/moe/expert_mlp.md from what kernels/torch/expert_mlp.py measured on the lent
GPUs (platforms/<gpu>/measurements/expert_mlp.json): the weight-gradient GEMM with and without
the FP32 main-gradient accumulation, one MoE layer's sequential experts against one expert of
the same rows, grouped against sequential, and the share of its burst rate a GPU sustains.

    python3 results/moe/expert_mlp.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GPUS = [("H100", "h100-sxm", "h100-sxm-ndr"), ("H200", "h200-sxm", "h200-sxm-ndr")]
sys.path.insert(0, os.path.dirname(HERE))
from kernel_db_files import write_markdown  # noqa: E402  (results/, beside this folder)
PATHS = ["bf16 out", "fp32 accumulate (fused)", "bf16 out + fp32 add"]


def load():
    runs = []
    for name, folder, platform in GPUS:
        path = os.path.join(ROOT, "platforms", folder, "measurements", "expert_mlp.json")
        if os.path.exists(path):
            with open(path) as f:
                runs.append((name, platform, json.load(f)))
    return runs


def smi_field(line, field):
    """One field of the nvidia-smi query line the script stored ('q1,q2: v1, v2')."""
    names, _, values = line.partition(": ")
    pairs = dict(zip(names.split(","), [v.strip() for v in values.split(",")]))
    return pairs.get(field, "?")


def calibration(platform):
    with open(os.path.join(ROOT, "platforms", platform + ".json")) as f:
        return json.load(f)["calibration"]


def wgrad_shapes(d):
    """The (m, n, k) of the weight-gradient GEMMs a run timed, in its order."""
    return [(r["m"], r["n"], r["k"]) for r in d["kernels"]
            if r["what"] == "wgrad" and r["path"] == "bf16 out"]


def wgrad_times(d, shape):
    """Seconds of one weight-gradient shape by path (BF16 out, FP32 accumulate, ...)."""
    return {r["path"]: r["seconds"] for r in d["kernels"]
            if r["what"] == "wgrad" and (r["m"], r["n"], r["k"]) == shape}


def wgrad_table(runs):
    out = ["| m x n, k | " + " | ".join(
        "%s %s" % (g, p) for g, _, _ in runs for p in ("BF16 out (ms)", "FP32 accumulate (ms)",
                                                       "ratio")) + " |",
           "|---|" + "---:|" * (3 * len(runs))]
    for m, n, k in wgrad_shapes(runs[0][2]):
        cells = []
        for _, _, d in runs:
            t = wgrad_times(d, (m, n, k))
            plain, fused = t["bf16 out"], t["fp32 accumulate (fused)"]
            cells += ["%.3f" % (1e3 * plain), "%.3f" % (1e3 * fused), "%.2f" % (fused / plain)]
        out.append("| %d x %d, %d | %s |" % (m, n, k, " | ".join(cells)))
    return out


def chain_table(runs):
    out = ["| local experts x rows | " + " | ".join(
        "%s %s" % (g, p) for g, _, _ in runs for p in ("BF16 out", "FP32 accumulate",
                                                       "eager autograd (wall)")) + " |",
           "|---|" + "---:|" * (3 * len(runs))]
    for local in (4, 2, 1):
        cells = []
        for _, _, d in runs:
            t = {r["path"]: r for r in d["chain"] if r["local"] == local}
            cells += ["%.2f" % (1e3 * t["bf16 out"]["gpu_s"]),
                      "%.2f" % (1e3 * t["fp32 accumulate (fused)"]["gpu_s"]),
                      "%.2f" % (1e3 * d["eager"][str(local)])]
        out.append("| %d x %d | %s |" % (local, 8192 // local, " | ".join(cells)))
    return out


def grouped_lines(runs):
    out = []
    for g, _, d in runs:
        for r in d["grouped"]:
            out.append("- %s, %d local experts of %d rows: one plain GEMM each %.3f ms, "
                       "`torch._grouped_mm` %.3f ms." % (g, r["local"], r["rows"],
                                                         1e3 * r["sequential_s"],
                                                         1e3 * r["b row-major"]))
    return out


def sustained_lines(runs):
    out = []
    for g, platform, d in runs:
        s = d["sustained"]
        out.append("- %s, the 4-expert layer with FP32 accumulation for %.0f s without pause: "
                   "%.2f ms per layer in its first 2 s, %.2f ms in its last 3 s (%.2f ms in "
                   "bursts, above); SM clock %s, power %s of %s at the end (reasons %s)." % (
                       g, s["seconds"], 1e3 * s["first_s"], 1e3 * s["last_s"],
                       1e3 * next(r["gpu_s"] for r in d["chain"] if r["local"] == 4 and
                                  r["path"] == s["path"]),
                       smi_field(s["smi_after"], "clocks.sm"),
                       smi_field(s["smi_after"], "power.draw"),
                       smi_field(s["smi_after"], "power.limit"),
                       smi_field(s["smi_after"], "clocks_event_reasons.active")))
        for r in d.get("sustained_gemm", []):
            out.append("- %s, an 8192^3 %s GEMM: %.0f TFLOP/s in bursts, %.0f after 30 s "
                       "without pause, a share of **%.3f**; SM clock %s at %s at the end." % (
                           g, r["dtype"].upper(), r["tflops_burst"], r["tflops_sustained"],
                           r["sustained_share"], smi_field(r["smi_after"], "clocks.sm"),
                           smi_field(r["smi_after"], "power.draw")))
        cal = calibration(platform)
        out.append("- %s's calibration, fitted on step times, holds `sustained_compute` %.4f "
                   "and `sustained_fp8_gemm` %.4f (FP8 GEMMs: their product, %.3f)." % (
                       platform, cal["sustained_compute"], cal.get("sustained_fp8_gemm", 1.0),
                       cal["sustained_compute"] * cal.get("sustained_fp8_gemm", 1.0)))
    return out


def wgrad_ratio(d, shape):
    t = wgrad_times(d, shape)
    return t["fp32 accumulate (fused)"] / t["bf16 out"]


def wgrad_summary(run):
    g, _, d = run
    rows = wgrad_shapes(d)
    deep = [wgrad_ratio(d, x) for x in rows if 4096 <= x[2] <= 8192]
    expert = [wgrad_ratio(d, x) for x in rows if x[2] == 2048]
    return ("On the %s the accumulation adds %.0f-%.0f %% at depth k 4,096 to 8,192 (a dense "
            "layer's tokens per micro-batch) and %.0f-%.0f %% at 2,048 (the rows of one of four "
            "local experts here): its m x n FP32 traffic is mostly hidden behind a deep "
            "main loop and exposed behind a shallow one." % (
                g, 100 * (min(deep) - 1), 100 * (max(deep) - 1), 100 * (min(expert) - 1),
                100 * (max(expert) - 1)))


def chain_summary(run):
    g, _, d = run
    t = {(r["local"], r["path"]): r["gpu_s"] for r in d["chain"]}
    plain = t[(4, "bf16 out")] - t[(1, "bf16 out")]
    fused = t[(4, "fp32 accumulate (fused)")] - t[(1, "fp32 accumulate (fused)")]
    walls = [d["eager"][k] - t[(int(k), "bf16 out")] for k in d["eager"]]
    return ("On the %s, 4 local experts of 2,048 rows against 1 of 8,192: %+.2f ms per layer "
            "with BF16 weight gradients, %+.2f ms with the FP32 accumulation (four experts' "
            "weights accumulated instead of one's); autograd from Python (which also adds each "
            "weight gradient into `.grad`) takes %.2f-%.2f ms more wall clock than that GPU "
            "time, about the same for 4, 2 or 1 experts. Running experts one after "
            "another costs the GPU nothing of its own here. The Grok-1 launcher's runs keep "
            "their main gradients in BF16 (`grad_sync_dtype: bf16`), whose accumulation moves "
            "a third of these FP32 bytes (not timed here), so most of what those runs' steps "
            "hold per local expert beyond trainsim's prediction (`results/validation.md`) lies "
            "outside these kernels (the framework's own modules per expert, which plain "
            "PyTorch does not reproduce)." % (
                g, 1e3 * plain, 1e3 * fused, 1e3 * min(walls), 1e3 * max(walls)))


def sustained_summary(run):
    g, platform, d = run
    share = {r["dtype"]: r["sustained_share"] for r in d.get("sustained_gemm", [])}
    if "bf16" not in share or "fp8" not in share:
        return ""
    cal = calibration(platform)
    fitted_bf16 = cal["sustained_compute"]
    fitted_fp8 = fitted_bf16 * cal.get("sustained_fp8_gemm", 1.0)
    above = fitted_bf16 > share["bf16"] and fitted_fp8 > share["fp8"]
    return ("A square GEMM without pause is the heaviest load a GPU meets; a step mixes it with "
            "memory-bound kernels and communication. The fitted shares (%.3f BF16, %.3f FP8) "
            "are %s the %s's square-GEMM shares (%.3f, %.3f), and FP8 sustains %s share than "
            "BF16 both in the fit (%.3f of BF16's) and on the GPU (%.3f)." % (
                fitted_bf16, fitted_fp8, "above" if above else "not all above", g,
                share["bf16"], share["fp8"],
                "a smaller" if share["fp8"] < share["bf16"] else "no smaller",
                fitted_fp8 / fitted_bf16, share["fp8"] / share["bf16"]))


def main():
    runs = load()
    head = ", ".join("%s (%s, PyTorch %s)" % (g, d["device"], d["torch"]) for g, _, d in runs)
    lines = [
        "# What an MoE layer's expert MLP costs beyond its kernels",
        "",
        "Generated by `python3 results/moe/expert_mlp.py` from "
        "`platforms/{h100-sxm,h200-sxm}/measurements/expert_mlp.json`, which "
        "`python3 kernels/torch/expert_mlp.py --out expert_mlp.json` measured on lent GPUs: "
        + head + ". Shapes: Grok-1's experts on one GPU of its DGX Cloud proxies (hidden 6144, "
        "expert FFN 32768 over expert TP 4, gated: up projection 16384 wide, down 8192), 8,192 "
        "routed rows per GPU and layer shared by 4, 2 or 1 local experts (EP 2, 4, 8).",
        "",
        "## The weight-gradient GEMM accumulating into FP32 main gradients",
        "",
        "Megatron-LM's gradient-accumulation fusion (on by default, and in every NeMo recipe) "
        "has the weight-gradient GEMM add its product into the FP32 main gradient in its "
        "epilogue: it reads and writes m x n FP32 where the kernel suite's GEMM writes m x n "
        "BF16. Medians of CUDA-event timings behind a GPU sleep, inputs rotated past the L2:",
        "",
    ] + wgrad_table(runs) + [
        "",
        wgrad_summary(runs[0]),
        "",
        "## One layer's experts: sequential against one expert of the same rows",
        "",
        "Every local expert's forward and backward back to back (ms, GPU time; the GEMMs and "
        "the GeGLU activation as PyTorch's own kernels), and the same layer run by autograd "
        "from Python (wall clock, synchronised):",
        "",
    ] + chain_table(runs) + [
        "",
        chain_summary(runs[0]),
        "",
        "## Grouped against sequential",
        "",
    ] + grouped_lines(runs) + [
        "",
        "## The share of its burst rate a GPU sustains",
        "",
        "The kernel database times each kernel in bursts behind a GPU sleep, so the GPU runs "
        "cool and at its boost clock; a training step keeps it busy. Without pause the GPU "
        "reaches its power limit and lowers its clock (reason 0x4: software power cap):",
        "",
    ] + sustained_lines(runs) + [
        "",
        sustained_summary(runs[0]),
        "",
    ]
    write_markdown(os.path.join("moe", "expert_mlp.md"), lines)


if __name__ == "__main__":
    main()
