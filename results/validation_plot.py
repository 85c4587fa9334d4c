#!/usr/bin/env python3
"""Writes results/validation.md and results/validation.csv (every step-time row, predicted or
skipped, with its source, platform, half of the fixed split and band), and the plot of predicted
against measured step time per model and precision (results/validation/dgxc_step_time.svg, with
the line where they agree), from `trainsim validate` on NVIDIA's DGX Cloud step times (H100),
Megatron-LM's SC21 table (A100), and, reported apart, Megatron-LM README's weak scaling and CI
iteration times (H100). The Markdown gives the errors per source, precision and scale
(GPU count) for each half; its numbers are those the command prints.

    results/validation_plot.py [BUILD_DIR]      (default: build/ at the top)
"""
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import svgplot
from validation_causes import cause, fp8_context, name_parts, without_repeats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
REFDATA = os.path.join(ROOT, "tests", "validation", "refdata")
REFERENCE = os.path.join(REFDATA, "nvidia_dgxc_benchmarking_h100.json")
A100_REFERENCE = os.path.join(REFDATA, "narayanan2021_megatron_a100_table1_table2.json")
CI_REFERENCE = os.path.join(REFDATA, "megatron_lm_ci_golden_values_h100.json")
README_REFERENCE = os.path.join(REFDATA, "megatron_lm_readme_h100_weak_scaling.json")
OUT = os.path.join(ROOT, "results", "validation")


def errors(rows):
    e = [abs(r["error"]) for r in rows]
    return "%d rows: %.1f %%, max %.1f %%" % (len(e), 100 * sum(e) / len(e), 100 * max(e)) if e else "-"


def scale(r):
    gpus = name_parts(r["name"])[1]
    return "16-64 GPUs" if gpus <= 64 else "128-512 GPUs" if gpus <= 512 else "1024-2048 GPUs"


# Why A100 rows miss by over 8 % (written by reading the rows, not fitted): row name part -> cause.
A100_CAUSES = {
    "GPT 1.7B": "SMALL", "GPT 3.6B": "SMALL", "GPT 7.5B": "SMALL", "GPT 18.4B": "SMALL",
    "GPT 1008B": (
        "64 pipeline stages of two layers each: the last also holds the LM head (V / 24h (1 + "
        "s/6h) = 8 %% of its two layers' FLOPs) and the memory-bound loss, and sets the pace of "
        "every micro-batch; the one fitted factor, pulled between this row and the small ones, "
        "leaves it slow"),
}
SMALL_CAUSE = (
    "a narrow model at micro-batch 8-16 with Megatron-LM's 2021 unfused attention and its dropout "
    "on the attention probabilities, both modelled (%.2f s of the 1.7B row's step, %.2f s of it "
    "the dropout); a100-sxm-hdr has no measured kernel database, so the batched GEMMs over the "
    "s x s scores and the memory-bound kernels run at the roofline times one fitted factor that "
    "the large rows set")


def a100_cause_text(r):
    """The A100_CAUSES entry for the row, or None."""
    for part, text in A100_CAUSES.items():
        if r["name"].startswith(part + " "):
            return text
    return None


def a100_cause(r, unfused):
    text = a100_cause_text(r)
    if text is None:
        return "cause not yet identified"
    return (SMALL_CAUSE % unfused) if text == "SMALL" else text % ()


def unfused_share():
    """What the unfused attention with its dropout adds to the SC21 1.7B row (launch script's
    plan), and what the dropout adds of it, by running it three ways: (both, dropout)."""
    model = {"name": "gpt-1.7b", "hidden_size": 2304, "num_layers": 24, "num_attention_heads": 24,
             "ffn_hidden_size": 9216, "ffn_kind": "gelu", "vocab_size": 51200,
             "tied_embeddings": True, "position_embedding": "learned",
             "max_position_embeddings": 2048, "norm": "layernorm",
             "bias": {"qkv": True, "attention_output": True, "mlp": True}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt-1.7b.json")
        with open(path, "w") as f:
            json.dump(model, f)
        steps = []
        for backend, dropout in [("flash", "0"), ("unfused", "0"), ("unfused", "0.1")]:
            out = subprocess.run(
                [os.path.join(BUILD, "trainsim"), "run", "--model", path, "--platform",
                 "a100-sxm-hdr", "--dp", "32", "--mbs", "16", "--gbs", "512", "--seq-len", "2048",
                 "--recompute", "full", "--overlap-grad-reduce", "--engine", "analytic",
                 "--attention-backend", backend, "--attention-dropout", dropout,
                 "--format", "json"],
                check=True, capture_output=True, text=True).stdout
            steps.append(json.loads(out)["step_time_s"])
    return steps[2] - steps[0], steps[2] - steps[1]


def write_a100(result, lines):
    done = [r for r in result["rows"] if "skipped" not in r]
    fit = [r for r in done if r["half"] == "fit"]
    check = [r for r in done if r["half"] == "check"]
    inside = sum(1 for r in check if r["p10_s"] <= r["measured_s"] <= r["p90_s"])
    lines += ["", "## A100: Megatron-LM's SC21 weak-scaling table", "",
              "From `trainsim validate %s` on platform %s: the step time Table 1 of Narayanan et "
              "al. (SC21) implies (the paper's Eq. 3 FLOPs over its TFLOP/s per GPU), against the "
              "prediction for the launch settings of Megatron-LM's `examples/sc21/run_table_1.sh`. "
              "The platform's calibration is fitted on the fitting half only (`results/calibrate.py "
              "--platform a100-sxm-hdr`; with 5 fitting rows, only `sustained_compute`). In all "
              "%s; fitting half %s; checking half %s, the band (%+.1f %% to %+.1f %%) holding %d of "
              "%d." % (os.path.relpath(A100_REFERENCE, ROOT), result["platform"], errors(done),
                       errors(fit), errors(check), 100 * result["band"]["residual_p10"],
                       100 * result["band"]["residual_p90"], inside, len(check)), "",
              "| row | run | half | measured s | predicted s | error |", "|---|---|---|---|---|---|"]
    for r in done:
        lines.append("| %s | %s | %s | %.3f | %.3f | %+.1f %% |" %
                     (r["name"], r["setup"], r["half"], r["measured_s"], r["predicted_s"],
                      100 * r["error"]))
    over = [r for r in done if abs(r["error"]) > 0.08]
    lines += ["", "Rows over 8 %% (%d)%s" % (len(over), ":" if over else ": none.")]
    # Three runs of the 1.7B row, only when a row's cause quotes them.
    small = any(a100_cause_text(r) == "SMALL" for r in over)
    unfused = unfused_share() if small else (0, 0)
    for r in over:
        lines.append("- %s: %+.1f %% (%s half). Likely cause: %s." %
                     (r["name"], 100 * r["error"], r["half"], a100_cause(r, unfused)))
    skipped = {}
    for r in result["rows"]:
        if "skipped" in r:
            skipped.setdefault(r["skipped"], []).append(r["name"])
    for why, names in sorted(skipped.items()):
        lines.append("")
        lines.append("Not expressed (%d): %s." % (len(names), why))


def write_ci(result, lines):
    """Megatron-LM's CI iteration times: reported apart, the likely cause beside each kind of run."""
    done = [r for r in result["rows"] if "skipped" not in r]
    lines += ["", "## H100: Megatron-LM's CI iteration times (reported apart, never fitted)", "",
              "From `trainsim validate %s` (the second set it prints; the first is memory) on "
              "platform %s: the median iteration time of each CI run's steady steps against the "
              "prediction for the run's model, layout, batch and flags. CI runs small models in "
              "deterministic mode, so these rows are neither fitted nor held to the targets; %s." %
              (os.path.relpath(CI_REFERENCE, ROOT), result["platform"], errors(done)), ""]
    write_caused_rows(done, lines)
    lines += ["", "%d of %d rows expressed; the others are listed with their reason in "
              "`results/validation/megatron_ci.md`." % (len(done), len(result["rows"]))]


def write_readme_rows(result, lines):
    """Megatron-LM README's weak scaling: reported apart, unknown settings chosen as the fastest."""
    done = [r for r in result["rows"] if "skipped" not in r]
    inside = sum(1 for r in done if r["p10_s"] <= r["measured_s"] <= r["p90_s"])
    lines += ["", "## H100: Megatron-LM README's weak-scaling table (reported apart, never fitted)",
              "", "From `trainsim validate %s` on platform %s: the step time the table implies "
              "(Megatron-LM's FLOP count of a step over its TFLOP/s per GPU and GPU count) against "
              "the prediction for the row's model and layout with what the README states (sequence "
              "4096, BF16, TP overlap with sequence parallelism, the distributed optimizer with "
              "overlapped reduction and gather) and, of what it leaves out (micro-batch 1, 2 or 4, "
              "virtual pipeline size, no or selective recomputation), the fastest choice that "
              "fits, which leans optimistic by construction. %s; the band holds %d of %d." %
              (os.path.relpath(README_REFERENCE, ROOT), result["platform"], errors(done)[0].upper()
               + errors(done)[1:], inside, len(done)), "",
              ]
    write_caused_rows(done, lines)


def write_caused_rows(done, lines):
    """The rows with a likely-cause letter each, the causes listed above the table."""
    causes = []
    for r in done:
        if r["note"] not in causes:
            causes.append(r["note"])
    for i, cause in enumerate(causes):
        sel = [r for r in done if r["note"] == cause]
        lines.append("(%s) %s: %s." % (chr(ord("a") + i), cause[0].upper() + cause[1:],
                                        errors(sel)))
    lines += ["", "| row | run | measured s | predicted s | error | likely cause |",
              "|---|---|---|---|---|---|"]
    for r in done:
        lines.append("| %s | %s | %.3f | %.3f | %+.1f %% | (%s) |" %
                     (r["name"], r["setup"], r["measured_s"], r["predicted_s"], 100 * r["error"],
                      chr(ord("a") + causes.index(r["note"]))))


def expected_max_normal(n):
    """E[max of n standard normals], Blom's approximation (as sim/platform/calibration.cpp)."""
    return statistics.NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def per_gpu_work(setup):
    """What a GPU runs in a step, from a row's setup text: its layout less dp, and micro-batches."""
    dp = int(re.search(r"\bdp (\d+)", setup).group(1))
    gbs = int(re.search(r"gbs (\d+)", setup).group(1))
    mbs = int(re.search(r"mbs (\d+)", setup).group(1))
    layout = re.sub(r"\b(dp|gbs) \d+", "", setup)
    return layout, gbs // (mbs * dp)


def write_scale_growth(done, lines):
    """How the step grows from the fewest to the most GPUs of each dense run series whose GPUs
    run the same work (weak scaling), measured and predicted, beside what the calibration's
    gpu_speed_spread alone adds to compute over that range."""
    with open(os.path.join(ROOT, "platforms", "h100-sxm-ndr.json")) as f:
        spread = json.load(f)["calibration"]["gpu_speed_spread"]
    series = {}
    for r in done:
        if "(MoE)" in r["name"]:
            continue
        family, gpus, tag = name_parts(r["name"])
        series.setdefault((family, tag, per_gpu_work(r["setup"])), []).append((gpus, r))
    lines += ["", "Step growth over each dense weak-scaling series (the same work per GPU, more "
              "data-parallel ranks): measured and predicted step at the most GPUs over the step "
              "at the fewest, and what `gpu_speed_spread` (%.3f) alone adds to compute over that "
              "range (1 + spread x E[max of N standard normals]):" % spread, "",
              "| runs | GPUs | measured | predicted | spread alone |", "|---|---|---|---|---|"]
    for (family, tag, _), points in sorted(series.items()):
        if len(points) < 3:
            continue
        points.sort(key=lambda p: p[0])
        (n0, a), (n1, b) = points[0], points[-1]
        alone = (1 + spread * expected_max_normal(n1)) / (1 + spread * expected_max_normal(n0))
        lines.append("| %s (%s) | %d-%d | %+.1f %% | %+.1f %% | %+.1f %% |" % (
            family, tag, n0, n1, 100 * (b["measured_s"] / a["measured_s"] - 1),
            100 * (b["predicted_s"] / a["predicted_s"] - 1), 100 * (alone - 1)))


def write_dense(done, band, lines):
    """The dense rows (no mixture of experts) alone, which the issue's targets are set on: errors
    per precision and half, and how many rows each form of the band holds: locally weighted (the
    one reports print) and plain (q from residual_p10 to residual_p90 on every row)."""
    dense = [r for r in done if "(MoE)" not in r["name"]]
    lines += ["", "Dense rows (the targets' rows):", "",
              "| rows | fitting half | checking half |", "|---|---|---|"]
    for name, keep in [("BF16", lambda r: r["setup"].endswith("bf16")),
                       ("FP8", lambda r: r["setup"].endswith("fp8")), ("all", lambda r: True)]:
        lines.append("| %s | %s | %s |" % (name, errors([r for r in dense if keep(r) and r["half"] == "fit"]),
                                         errors([r for r in dense if keep(r) and r["half"] == "check"])))
    for half in ["fit", "check"]:
        sel = [r for r in dense if r["half"] == half]
        weighted = sum(1 for r in sel if r["p10_s"] <= r["measured_s"] <= r["p90_s"])
        plain = sum(1 for r in sel if r["predicted_s"] * (1 + band[0]) <= r["measured_s"] <=
                    r["predicted_s"] * (1 + band[1]))
        lines.append("")
        lines.append("On the %s half's %d dense rows the band, %.1f %% wide on BF16 rows and %.1f %% "
                     "on FP8 rows (mean), holds %d (plain, q from %+.1f %% to %+.1f %% on every "
                     "row: %d)." % ("fitting" if half == "fit" else "checking", len(sel),
                                    100 * mean_width(sel, "bf16"), 100 * mean_width(sel, "fp8"),
                                    weighted, 100 * band[0], 100 * band[1], plain))


# How each release's benchmarks ran and read a step's time, from its READMEs and launch scripts
# (NVIDIA/dgxc-benchmarking at each tag): v24.11.1 through NeMo 1's launcher, the last step's
# train_step_timing; v25.04.02's dense recipes through NeMo 2's performance scripts, the last
# step's; v25.04.02's fine-tuning, SFT and LoRA (ft_llama3), through its own NeMo 2 script, the
# mean of the last 20 steps (its README); v25.05.05's through NeMo 2's performance scripts, the mean of
# iterations 11-44.
RELEASE_TIMING = {
    "v24.11.1": "NeMo 1 launcher, last step",
    "v25.04.02": "NeMo 2 scripts, last step",
    "v25.04.02, finetune_SFT": "NeMo 2 fine-tuning script, mean of the last 20 steps",
    "v25.04.02, finetune_LoRA": "NeMo 2 fine-tuning script, mean of the last 20 steps",
    "v25.05.05": "NeMo 2 scripts, mean of steps 11-44",
}


def signed(rows):
    """Mean signed error and its range over rows, e.g. "+2.9 % (+0.3 to +5.5 %), 5 rows"."""
    if not rows:
        return "none"
    e = [100 * r["error"] for r in rows]
    return "%+.1f %% (%+.1f to %+.1f %%), %d rows" % (sum(e) / len(e), min(e), max(e), len(e))


def write_release_bias(done, lines):
    """The dense rows' signed error per release and precision, both halves together: where the
    residuals split by software release rather than by model or scale."""
    dense = [r for r in done if "(MoE)" not in r["name"]]
    lines += ["", "Dense rows by release (signed error, predicted over measured, both halves):", "",
              "| release | how it ran and timed a step | BF16 | FP8 |", "|---|---|---|---|"]
    for tag in sorted({name_parts(r["name"])[2] for r in dense}):
        sel = [r for r in dense if name_parts(r["name"])[2] == tag]
        lines.append("| %s | %s | %s | %s |" % (
            tag, RELEASE_TIMING.get(tag, "not recorded"),
            signed([r for r in sel if r["setup"].endswith("bf16")]),
            signed([r for r in sel if r["setup"].endswith("fp8")])))


def mean_width(rows, precision):
    """Mean P10-P90 band width relative to the prediction over the rows of one precision."""
    w = [(r["p90_s"] - r["p10_s"]) / r["predicted_s"] for r in rows if r["setup"].endswith(precision)]
    return sum(w) / len(w)


def write_memory(done, capacity, lines):
    """The runs' predicted peaks against their GPU: they ran, so each should fit, at least without
    the allocator fragmentation the platform assumes (trainsim check's oom error)."""
    gib = 1024.0 ** 3
    with_peak = [r for r in done if "memory_fit" in r]
    # trainsim's own verdict per row (yes, tight or no), as check's oom diagnostic decides it.
    tight = [r for r in with_peak if r["memory_fit"] == "tight"]
    certain = [r for r in with_peak if r["memory_fit"] == "no"]

    def names(rows, key):
        return ", ".join("%s (%.2f GiB)" % (r["name"], r[key] / gib) for r in rows)
    text = ("Peak memory per GPU of these runs, which ran (the worst stage, predicted; columns "
            "`peak_memory_bytes`, `peak_unfragmented_bytes` and `memory_fit` of "
            "`results/validation.csv`): %d of "
            "%d within the GPU's %.2f GiB; %d over it only with the allocator fragmentation the "
            "platform assumes (trainsim check: an oom warning)" %
            (len(with_peak) - len(tight) - len(certain), len(with_peak), capacity / gib,
             len(tight)))
    if tight:
        text += ": " + names(tight, "peak_memory_bytes")
    text += "; %d over it even without (an oom error)" % len(certain)
    if certain:
        text += ": " + names(certain, "peak_unfragmented_bytes")
    lines += ["", text + "."]


def write_markdown(rows, band, halves, capacity, path, a100, ci, readme):
    done = [r for r in rows if "skipped" not in r]
    lines = ["# Step-time validation", "",
             "Generated by `results/validation_plot.py` (run by `results/regenerate.sh`) from "
             "`trainsim validate %s`; platform h100-sxm-ndr with its calibration "
             "(`results/calibrate.py`, fitted on the fitting half only). Mean and max absolute "
             "error of predicted against measured step time; the band is the prediction times "
             "1 + q x the P10-P90 width of the row's kernels in the kernel database, q from %.2f "
             "to %.2f (the residuals of the fitting rows, each predicted by the calibration fitted "
             "on the other folds, over each row's kernel spread; %s, "
             "mean width %.1f %% on BF16 rows and %.1f %% on FP8 rows)." %
             (os.path.relpath(REFERENCE, ROOT), band[2], band[3],
              "column `kernel_spread` of `results/validation.csv`",
              100 * mean_width(done, "bf16"), 100 * mean_width(done, "fp8")), "",
             "| rows | all | fitting half | checking half |", "|---|---|---|---|"]
    groups = [("source: DGX Cloud recipes (NeMo, H100)", lambda r: True),
              ("precision: BF16", lambda r: r["setup"].endswith("bf16")),
              ("precision: FP8", lambda r: r["setup"].endswith("fp8"))]
    for s in ["16-64 GPUs", "128-512 GPUs", "1024-2048 GPUs"]:
        groups.append(("scale: " + s, lambda r, s=s: scale(r) == s))
    for name, keep in groups:
        sel = [r for r in done if keep(r)]
        lines.append("| %s | %s | %s | %s |" % (name, errors(sel), errors(
            [r for r in sel if r["half"] == "fit"]), errors([r for r in sel if r["half"] == "check"])))
    for half in ["fit", "check"]:
        lines.append("")
        lines.append("Band P10-P90 holds the measured step on %d of %d %s rows." %
                     (halves[half]["in_band"], halves[half]["rows"],
                      "fitting" if half == "fit" else "checking"))
    write_dense(done, band, lines)
    write_release_bias(done, lines)
    write_scale_growth(done, lines)
    over = [r for r in done if abs(r["error"]) > 0.08]
    context = fp8_context(done)
    lines += ["", "Rows over 8 %% (%d)%s" % (len(over), ":" if over else ": none."), ""]
    causes = without_repeats([(r["name"], cause(r, done, context)) for r in over])
    for r, text in zip(over, causes):
        lines.append("- %s: %+.1f %% (%s half). Likely cause: %s." %
                     (r["name"], 100 * r["error"], r["half"], text))
    write_memory(done, capacity, lines)
    lines += ["", "%d of %d rows expressed; every row in `results/validation.csv`, the plot in "
              "`results/validation/dgxc_step_time.svg` (A100: `sc21_step_time.svg`)." % (len(done), len(rows))]
    write_a100(a100, lines)
    write_readme_rows(readme, lines)
    write_ci(ci, lines)
    lines.append("")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines))
    os.replace(path + ".tmp", path)


def main():
    text = subprocess.run([os.path.join(BUILD, "trainsim"), "validate", REFERENCE, A100_REFERENCE,
                           "--format", "json"], check=True, capture_output=True, text=True).stdout
    result, a100 = json.loads(text)["validation"]
    text = subprocess.run([os.path.join(BUILD, "trainsim"), "validate", CI_REFERENCE, "--format",
                           "json"], check=True, capture_output=True, text=True).stdout
    ci = json.loads(text)["validation"][1]  # [0] is memory
    text = subprocess.run([os.path.join(BUILD, "trainsim"), "validate", README_REFERENCE,
                           "--format", "json"], check=True, capture_output=True, text=True).stdout
    readme = json.loads(text)["validation"][0]
    rows = result["rows"]
    band = (result["band"]["residual_p10"], result["band"]["residual_p90"],
            result["band"]["residual_per_spread_p10"], result["band"]["residual_per_spread_p90"])
    fields = ["source", "platform", "name", "setup", "half", "measured_s", "predicted_s", "p10_s",
              "p90_s", "kernel_spread", "error", "peak_memory_bytes", "peak_unfragmented_bytes",
              "memory_fit", "skipped"]
    csv_path = os.path.join(ROOT, "results", "validation.csv")
    with open(csv_path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for source, res in [("DGX Cloud recipes", result), ("SC21 Table 1-2", a100),
                            ("Megatron-LM README", readme), ("Megatron-LM CI", ci)]:
            for r in res["rows"]:
                w.writerow(dict({k: r.get(k, "") for k in fields}, source=source,
                                platform=res["platform"]))
    os.replace(csv_path + ".tmp", csv_path)
    write_markdown(rows, band, result["halves"], result["gpu_memory_bytes"],
                   os.path.join(ROOT, "results", "validation.md"),
                   a100, ci, readme)

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
    points = [(r["measured_s"], r["predicted_s"]) for r in a100["rows"] if "skipped" not in r]
    chart = svgplot.Chart("Step time: trainsim against Megatron-LM's SC21 table (A100)",
                          "measured step time (s)", "predicted step time (s)")
    chart.series("GPT 1.7B to 1T, SC21 Table 1", points)
    top = max(m for m, _ in points)
    chart.series("predicted = measured", [(0.0, 0.0), (top, top)], lines=True)
    chart.save(os.path.join(OUT, "sc21_step_time.svg"))
    print("wrote results/validation.md, results/validation.csv, %s/dgxc_step_time.svg and "
          "sc21_step_time.svg" % OUT)


if __name__ == "__main__":
    main()
