"""Why the DGX Cloud step-time rows over 8 % miss: each row's likely cause, by what the rows
share (written by reading the rows, not fitted), with the figures that test it worked out from
the rows themselves. Used by validation_plot.py."""
import functools
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Likely causes of the rows over 8 %, by what the rows share (written by reading the rows, not
# fitted): (model and precision, release tag) -> cause; the first match wins. The dense rows have
# none today (the Nemotron-4 15B FP8 TP 4 rows it once named were the LM head priced at the FP8
# peak); the mixture-of-experts rows, all checking rows, have suspects, not established causes.
MOE_FP8 = ("not established.%s What it shows: %s; %s. Megatron-LM's MoE-layer benchmark shows "
           "the same excess (`results/moe/moe_layer_validation.md`). Next suspect: the FP8 expert "
           "GEMMs as Transformer Engine runs them (its cuBLAS calls, FP8 scaling and wgrad "
           "accumulation), which the suite (one cuBLASLt call) does not time: a GPU with "
           "Transformer Engine is needed")
# Said of the FP8 runs whose experts are one grouped GEMM (not of NeMo's Grok-1 launcher runs,
# whose experts are sequential: SEQUENTIAL_RUNS).
GROUPED_QUANTISATION = (
    " Ruled out: a quantisation kernel per expert (Transformer Engine 1.12 and 2.x's grouped "
    "linear layer quantises all local experts' inputs, and their output gradients, in one fused "
    "multi-tensor launch, as priced).")
SEQUENTIAL_RUNS = [("Grok-1", "v24.11.1"), ("Grok-1", "v25.04.02")]
KERNELS = os.path.join(ROOT, "platforms", "h100-sxm", "kernels.json")


# A LoRA row set against its supervised fine-tuning twin (same model, GPUs, precision, release).
LORA_OVER_SFT = (
    "not established. Its supervised fine-tuning twin is predicted %+.1f %%; LoRA's step is "
    "measured %.3f s shorter than the twin's and predicted %.3f s shorter, so what LoRA changes "
    "(the frozen backward, the adapters' kernels, Megatron's plain optimizer, and in FP8 the frozen "
    "BF16 weights cast and transposed each step, where the twin's FP8 weights are only "
    "transposed) is priced %.0f ms a step slower than it ran. As a ratio, LoRA's step is measured "
    "at %.3f of the twin's and predicted at %.3f: trainsim applies one sustained share to every "
    "plan's GEMMs, and a GPU held at its power limit may keep more of its speed once the weight "
    "gradients' GEMMs are gone (kernels/torch/sustained_mix.py is written to measure that)")


def lora_over_sft(r, rows):
    """The LoRA row against its supervised fine-tuning twin."""
    sft = next(x for x in rows if x["name"] == r["name"].replace("finetune_LoRA", "finetune_SFT"))
    measured = sft["measured_s"] - r["measured_s"]
    predicted = sft["predicted_s"] - r["predicted_s"]
    return (100 * sft["error"], measured, predicted, 1e3 * (measured - predicted),
            r["measured_s"] / sft["measured_s"], r["predicted_s"] / sft["predicted_s"])


ETP1_TWIN = (
    "not established: the only BF16 row with expert TP 1 under TP 4 (the experts' all-to-all "
    "over a group that re-divides the TP ranks), and the only one trainsim predicts more than "
    "1 %% slow. The same layout at expert TP 4 (v24.11.1: NeMo 1, FlashAttention-2), with the "
    "same FLOPs per GPU, measured %.2f s and is predicted %+.1f %%; trainsim puts %.2f s between "
    "the two layouts (the TP 4 experts' all-to-all across nodes and their TP gathers, and the "
    "slower attention), the measurements %.2f s. Either this run's kernels ran faster than the "
    "calibration's sustained rate (its compute alone, as priced, exceeds its measured step) or "
    "the older run lost more to communication than trainsim prices")


def db_fp8_speedups():
    """Median BF16 / FP8 time of the H100 database's GEMMs of a TFLOP or more, grouped (the
    experts') and plain, over the shapes timed in both precisions."""
    with open(KERNELS) as f:
        entries = json.load(f)["entries"]
    times = {}
    for x in entries:
        if x["op"] in ("gemm", "grouped_gemm"):
            key = (x["op"], x["m"], x["n"], x["k"], x.get("groups", 1))
            times.setdefault(key, {})[x["dtype"]] = x["median_us"]
    ratios = {"gemm": [], "grouped_gemm": []}
    for (op, m, n, k, g), t in times.items():
        if "bf16" in t and "fp8" in t and 2 * m * n * k * g >= 1e12:
            ratios[op].append(t["bf16"] / t["fp8"])
    med = {op: sorted(r)[len(r) // 2] for op, r in ratios.items() if r}
    return ("the database's FP8 grouped GEMMs of a TFLOP or more run x%.2f as fast as in BF16 "
            "(median), its plain GEMMs x%.2f" % (med["grouped_gemm"], med["gemm"]))


def twin_speedup(r, rows):
    """(measured, predicted) step of the row's BF16 twin (same model, GPU count and release)
    over the row's own; None without a twin."""
    twin = next((b for b in rows if b["name"] == r["name"].replace(" FP8 ", " BF16 ")), None)
    if twin is None:
        return None
    return twin["measured_s"] / r["measured_s"], twin["predicted_s"] / r["predicted_s"]


def own_fp8_speedup(r, rows):
    """The FP8 speed-up of the row against its BF16 twin, measured and predicted."""
    own = twin_speedup(r, rows)
    if own is None:
        return "no BF16 twin row to compare"
    return ("its BF16 twin row takes x%.2f its step as measured, x%.2f as predicted (%+.0f %%)" %
            (own[0], own[1], 100 * (own[1] / own[0] - 1)))


def fp8_context(rows):
    """What every FP8 MoE row's cause compares it with, worked out once: the range of the
    predicted over the measured FP8 speed-up on the dense rows' twins, and the database's FP8
    GEMM speed-ups."""
    dense = [twin_speedup(d, rows) for d in rows
             if " FP8 " in d["name"] and "(MoE)" not in d["name"]]
    dense = [p / m - 1 for m, p in (x for x in dense if x)]
    text = db_fp8_speedups()
    if dense:
        text = ("over the dense rows' twins the predicted speed-up is %+.0f to %+.0f %% of the "
                "measured; " % (100 * min(dense), 100 * max(dense))) + text
    return text


CAUSES = {
    ("Grok-1 314B (MoE) FP8", ""): MOE_FP8,
    ("Llama4 Maverick 400B (MoE) FP8", ""): MOE_FP8,
    ("DeepSeek-V3 671B (MoE)", ""): (
        "not established. The benchmark's script is expressed (NeMo's pretrain_deepseek_v3.py at "
        "the commit its setup pins: its pipeline split, recomputation of MLA's up-projections, no "
        "TP overlap, capacity factor 1), which brought these rows closer. Largest exposed item "
        "left: the expert-parallel all-to-all over 64 GPUs on 8 nodes, priced from InfiniBand's "
        "rate with no measurement of NCCL's all-to-all at that size to check it against"),
    ("Grok-1 314B (MoE) BF16 512 GPUs", "v25.05.05"): ETP1_TWIN,
    ("Grok-1 314B (MoE) BF16", ""): "not established",
    ("Llama3 8B", "finetune_LoRA"): LORA_OVER_SFT,
}


def etp1_twin(r, rows):
    """The Grok-1 row at expert TP 1 beside the same layout at expert TP 4 (v24.11.1)."""
    twin = next(t for t in rows if t["name"] == r["name"].replace("v25.05.05", "v24.11.1"))
    return (twin["measured_s"], 100 * twin["error"], twin["predicted_s"] - r["predicted_s"],
            twin["measured_s"] - r["measured_s"])


# The Grok-1 runs of NeMo's launcher (v24.11.1, v25.04.02) on one pipeline stage without CP:
# proxies of 2 or 4 layers whose expert parallelism, and so the experts each GPU holds, differs.
LOCAL_EXPERTS = (
    "Not the work outside the layers: the %d- and %d-GPU runs hold the same %d layers, embedding "
    "and LM head per GPU and miss by %+.1f and %+.1f %%. What falls with the experts each GPU "
    "holds is the miss per micro-batch and layer (measured minus predicted step, over "
    "micro-batches x layers): %s ms with %s local experts (EP %s), %+.2f ms per local expert "
    "(least squares). These runs set `moe_grouped_gemm` off (NeMo's Grok-1 launcher "
    "configurations): Megatron-Core's sequential experts, each local expert its own MLP of "
    "Transformer Engine layers, priced so (`--no-moe-grouped-gemm`: each expert's GEMMs, "
    "activation and FP8 quantisation launched over its own rows, the database's plain GEMMs, "
    "which it times faster than the grouped GEMM of the same experts). Timed in BF16 on a lent "
    "H100 (`results/moe/expert_mlp.md`), a layer of these experts takes the GPU as long with 4 "
    "local experts as with 1 but for the main-gradient accumulation (about 1 ms of the 3 "
    "between them into FP32; these runs accumulate into BF16, a third of the bytes); the rest "
    "lies outside the kernels plain PyTorch runs, Transformer Engine's modules per expert the "
    "suspect. How they could cost GPU time: Megatron-Core's all-to-all dispatcher makes the host "
    "wait for the GPU in every MoE layer's forward where EP or TP is above 1, to read the split "
    "sizes of its all-to-all (`cuda_sync_point`, from core_r0.9.0 to today), so the GPU then "
    "idles for as long as the host takes to issue each local expert's modules beyond their "
    "kernels' time; trainsim prices no host time, and timing it needs a GPU with Transformer "
    "Engine and Megatron-Core")


def name_parts(name):
    """(model and precision, GPUs, release tag) of a row's name, e.g. "Grok-1 314B (MoE) BF16 8
    GPUs (v24.11.1)" -> ("Grok-1 314B (MoE) BF16", 8, "v24.11.1")."""
    family, gpus = name.split(" GPUs")[0].rsplit(" ", 1)
    return family, int(gpus), name.rsplit("(", 1)[-1].rstrip(")")


@functools.lru_cache(maxsize=None)
def grok_experts():
    """Grok-1's routed experts, from the catalog."""
    with open(os.path.join(ROOT, "models", "grok-1.json")) as f:
        return json.load(f)["moe"]["num_experts"]


def plan_numbers(setup):
    """(ep, pp, layers, micro-batches per step) of a row's setup text, cp or None."""
    num = {k: int(re.search(r"\b%s (\d+)" % k, setup).group(1)) for k in ["ep", "pp", "dp", "mbs"]}
    layers = int(re.search(r"(\d+) layers", setup).group(1))
    gbs = int(re.search(r"gbs (\d+)", setup).group(1))
    cp = re.search(r"\bcp (\d+)", setup)
    return num["ep"], num["pp"], layers, gbs // (num["mbs"] * num["dp"]), cp


def local_expert_miss(r, rows):
    """For a Grok-1 run on one stage without CP, LOCAL_EXPERTS filled from its release's and
    precision's runs of that kind; None for any other row."""
    if not r["name"].startswith("Grok-1"):
        return None
    _, pp, _, _, cp = plan_numbers(r["setup"])
    if pp != 1 or cp:
        return None
    family, _, tag = name_parts(r["name"])
    points = {}  # local experts -> (miss per micro-batch and layer in ms, layers, error, ep, gpus)
    for x in rows:
        x_family, gpus, x_tag = name_parts(x["name"])
        if (x_family, x_tag) != (family, tag):
            continue
        e, p, layers, mbs, c = plan_numbers(x["setup"])
        if p == 1 and not c:
            miss = (x["measured_s"] - x["predicted_s"]) / (mbs * layers)
            points[grok_experts() // e] = (1e3 * miss, layers, 100 * x["error"], e, gpus)
    if len(points) < 3:
        return None
    local = sorted(points, reverse=True)
    mx = sum(local) / len(local)
    my = sum(points[k][0] for k in local) / len(local)
    slope = sum((k - mx) * (points[k][0] - my) for k in local) / sum((k - mx) ** 2 for k in local)
    two, one = points[local[-2]], points[local[-1]]
    return LOCAL_EXPERTS % (
        two[4], one[4], one[1], two[2], one[2], ", ".join("%.2f" % points[k][0] for k in local),
        ", ".join(str(k) for k in local), ", ".join(str(points[k][3]) for k in local), slope)


def cause(r, rows, context):
    """The row's likely cause; `context` is fp8_context(rows)."""
    for (part, tag), text in CAUSES.items():
        if part in r["name"] and tag in r["name"]:
            if text is MOE_FP8:
                sequential = any(r["name"].startswith(m) and t in r["name"]
                                 for m, t in SEQUENTIAL_RUNS)
                text = text % ("" if sequential else GROUPED_QUANTISATION,
                               own_fp8_speedup(r, rows), context)
            elif text is ETP1_TWIN:
                text = text % etp1_twin(r, rows)
            elif text is LORA_OVER_SFT:
                text = text % lora_over_sft(r, rows)
            experts = local_expert_miss(r, rows)
            return text + (". " + experts if experts else "")
    return "cause not yet identified"


def sentences(text):
    """A cause's sentences, without their full stops."""
    return [x.rstrip(".") for x in re.split(r"(?<=\.) (?=[A-Z`])", text)]


def without_repeats(named_causes):
    """[(row name, cause)] -> the causes with every sentence an earlier row's cause already said
    left out (the first, the verdict, always kept) and the rows that said it named instead."""
    said, out = {}, []
    for name, text in named_causes:
        parts = sentences(text)
        kept = [parts[0]] + [x for x in parts[1:] if x not in said]
        earlier = []
        for x in parts[1:]:
            if x in said and said[x] not in earlier:
                earlier.append(said[x])
        for x in parts:
            said.setdefault(x, name)
        text = ". ".join(kept)
        if earlier:
            text += ". The rest as for %s" % "; ".join(earlier)
        out.append(text)
    return out
