#!/usr/bin/env python3
"""How much of its burst speed a GPU keeps through a training step, by the step's mix of kernels.

The kernel database times each kernel in bursts behind a GPU sleep, so the GPU runs at its boost
clock; a step without pause reaches the power limit and the clock falls (results/moe/
expert_mlp.md: a square BF16 GEMM keeps 0.86 of its burst rate on an H100). trainsim applies one
fitted share to every GEMM of every plan. Whether the share depends on the step's mix is what
this measures: four stand-ins of a Llama 3 8B decoder layer at TP 1 and 4,096 tokens per
micro-batch, run by hand (the kernels autograd would run, no host time counted):

  bf16 full   BF16 GEMMs, every weight trained: weight gradients accumulated into BF16 main
              gradients in the GEMM (beta 1), as the DGX Cloud fine-tuning recipes run SFT
  bf16 lora   the same weights frozen (no weight gradient), NeMo's LoRA adapter of rank 8 on the
              QKV projection (BF16: two thin GEMMs, the scale, the add, and their backward)
  fp8 full    the GEMMs in FP8 (E4M3, per-tensor scales, torch._scaled_mm as Transformer Engine
              runs them; activations and gradients cast before each GEMM, the weights' FP8 copies
              and transposes made once), weight gradients written in BF16
  fp8 lora    the frozen FP8 GEMMs with the BF16 adapter

Attention's core is left out (the fine-tuning rows pack documents of 200 tokens, whose attention
is a small share of the step); the norms, RoPE and SwiGLU are elementwise stand-ins of their bytes.

For each mix: the burst time of one pass over --layers layers (forward and backward, CUDA events
behind a GPU sleep, median), the same without the elementwise kernels (the GEMMs' share of the
burst; FP8's casts count with its GEMMs), then --sustain seconds without pause: the time per pass
in the first 2 s and the last 5 s, and nvidia-smi's clocks, power and throttle reasons before
and after. The mixes run in
order, then again in the reverse order, with --rest seconds of idle between, so that the GPU's
warming shows as a difference between the two rounds.

    python3 kernels/torch/sustained_mix.py --out sustained_mix.json
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F

import expert_mlp
from attention import write
from expert_mlp import rand, smi, timed

expert_mlp.SLEEP_CYCLES = 20_000_000  # about 10 ms: longer than a pass takes to enqueue

T, HIDDEN, Q, KV, FFN, RANK = 4096, 4096, 4096, 1024, 14336, 8
FP8 = torch.float8_e4m3fn
MIXES = ("bf16 full", "bf16 lora", "fp8 full", "fp8 lora")


class Gemms:
    """y = x W^T and its gradients, in BF16 or in FP8 (inputs cast before each GEMM)."""

    def __init__(self, fp8):
        self.fp8 = fp8
        self.one = torch.tensor(1.0, device="cuda")

    def fwd(self, x, w):  # w: (BF16 [n, k], FP8 [n, k], FP8 [k, n])
        if not self.fp8:
            return torch.mm(x, w[0].t())
        return torch._scaled_mm(x.to(FP8), w[1].t(), scale_a=self.one, scale_b=self.one,
                                out_dtype=torch.bfloat16)

    def dgrad(self, dy, w):
        if not self.fp8:
            return torch.mm(dy, w[0])
        return torch._scaled_mm(dy.to(FP8), w[2].t(), scale_a=self.one, scale_b=self.one,
                                out_dtype=torch.bfloat16)

    def wgrad(self, dy, x, acc):
        if not self.fp8:
            return acc.addmm_(dy.t(), x)  # into the BF16 main gradient, beta 1
        dyt, xt = dy.to(FP8).t().contiguous(), x.to(FP8).t().contiguous()
        return torch._scaled_mm(dyt, xt.t(), scale_a=self.one, scale_b=self.one,
                                out_dtype=torch.bfloat16)


def weight(n, k, seed):
    w = rand(n, k, seed=seed) * 0.02
    w8 = w.to(FP8)
    return (w, w8, w8.t().contiguous())


class Layer:
    def __init__(self, seed):
        self.qkv = weight(Q + 2 * KV, HIDDEN, seed)
        self.o = weight(HIDDEN, Q, seed + 1)
        self.up = weight(2 * FFN, HIDDEN, seed + 2)
        self.down = weight(HIDDEN, FFN, seed + 3)
        self.grads = [torch.zeros_like(w[0]) for w in (self.qkv, self.o, self.up, self.down)]
        self.a = rand(HIDDEN, RANK, seed=seed + 4) * 0.02
        self.b = rand(RANK, Q + 2 * KV, seed=seed + 5) * 0.02
        self.ga, self.gb = torch.zeros_like(self.a), torch.zeros_like(self.b)
        self.dkv = rand(T, 2 * KV, seed=seed + 6) * 0.01  # attention's stand-in gradients
        self.dqkv = rand(T, Q + 2 * KV, seed=seed + 7) * 0.01


def forward(layer, x, g, lora, elementwise):
    n1 = F.rms_norm(x, (HIDDEN,)) if elementwise else x
    qkv = g.fwd(n1, layer.qkv)
    saved = {"n1": n1}
    if lora:
        ad = torch.mm(n1, layer.a)
        out = torch.mm(ad, layer.b)
        if elementwise:
            out = out * 2.0
            qkv = qkv + out
        saved["ad"] = ad
    rot = qkv[:, :Q + KV] * 1.01 if elementwise else qkv
    o = rot[:, :Q]  # attention's output stand-in: the rotated queries (a strided view)
    x2 = x + g.fwd(o, layer.o) if elementwise else g.fwd(o, layer.o)
    n2 = F.rms_norm(x2, (HIDDEN,)) if elementwise else x2
    u = g.fwd(n2, layer.up)
    a, b = u.chunk(2, dim=-1)
    act = F.silu(a) * b if elementwise else a
    y = x2 + g.fwd(act, layer.down) if elementwise else g.fwd(act, layer.down)
    saved.update(o=o, n2=n2, a=a, b=b, act=act)
    return y, saved


def backward(layer, s, dy, g, full, lora, elementwise):
    gq, go, gu, gd = layer.grads
    dact = g.dgrad(dy, layer.down)
    if full:
        g.wgrad(dy, s["act"], gd)
    if elementwise:
        da = torch.ops.aten.silu_backward(dact * s["b"], s["a"])
        du = torch.cat([da, dact * F.silu(s["a"])], dim=-1)
    else:
        du = torch.cat([dact, dact], dim=-1)
    dn2 = g.dgrad(du, layer.up)
    if full:
        g.wgrad(du, s["n2"], gu)
    dx2 = torch.addcmul(dy, dn2, s["n2"]) if elementwise else dn2
    do = g.dgrad(dx2, layer.o)
    if full:
        g.wgrad(dx2, s["o"], go)
    if elementwise:  # RoPE's backward on the queries' gradient, the keys' and values' beside
        dqkv = torch.cat([do, layer.dkv], dim=-1) * 1.01
    else:
        dqkv = layer.dqkv
    dn1 = g.dgrad(dqkv, layer.qkv)
    if full:
        g.wgrad(dqkv, s["n1"], gq)
    if lora:
        ds = dqkv * 2.0 if elementwise else dqkv
        dad = torch.mm(ds, layer.b.t())
        layer.gb.addmm_(s["ad"].t(), ds)
        dn1_lora = torch.mm(dad, layer.a.t())
        layer.ga.addmm_(s["n1"].t(), dad)
        if elementwise:
            dn1 = dn1 + dn1_lora
    return torch.addcmul(dx2, dn1, s["n1"]) if elementwise else dn1


def step(layers, x, dy, mix, elementwise=True):
    g = Gemms(mix.startswith("fp8"))
    full, lora = mix.endswith("full"), mix.endswith("lora")
    saved = []
    for layer in layers:
        x, s = forward(layer, x, g, lora, elementwise)
        saved.append(s)
    for layer, s in zip(reversed(layers), reversed(saved)):
        dy = backward(layer, s, dy, g, full, lora, elementwise)
    return dy


def check_fp8():
    """torch._scaled_mm against float64 on the dequantised FP8 inputs."""
    g = Gemms(True)
    x, w = rand(256, 512, seed=1), weight(384, 512, 2)
    got = g.fwd(x, w).double()
    want = x.to(FP8).double() @ w[1].double().t()
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()


def sustained(layers, x, dy, mix, seconds):
    before = smi()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, t_end = [], time.time() + seconds
    while time.time() < t_end:
        start.record()
        out = step(layers, x, dy, mix)
        stop.record()
        stop.synchronize()
        samples.append((time.time(), start.elapsed_time(stop) * 1e-3))
    after = smi()
    if not torch.isfinite(out).all():
        raise RuntimeError("non-finite gradient")
    t0, t1 = samples[0][0], samples[-1][0]
    return dict(passes=len(samples),
                first_s=statistics.median([s for t, s in samples if t - t0 < 2.0]),
                last_s=statistics.median([s for t, s in samples if t1 - t < 5.0]),
                smi_before=before, smi_after=after)


def measure(layers, xs, dys, mix, seconds):
    sets = list(zip(xs, dys))
    burst = timed(lambda s: step(layers, s[0], s[1], mix), sets, warmup=2, reps=8)
    gemms = timed(lambda s: step(layers, s[0], s[1], mix, False), sets, warmup=2, reps=8)
    row = dict(mix=mix, burst_s=burst, gemms_only_s=gemms, gemm_share=gemms / burst)
    row.update(sustained(layers, xs[0], dys[0], mix, seconds))
    row["sustained_share"] = burst / row["last_s"]
    return row


def show(r):
    print("%-9s burst %7.2f ms (GEMMs alone %6.2f ms, %.2f) | sustained: first 2 s %7.2f ms, "
          "last 5 s %7.2f ms, share %.3f | %s" % (
              r["mix"], 1e3 * r["burst_s"], 1e3 * r["gemms_only_s"], r["gemm_share"],
              1e3 * r["first_s"], 1e3 * r["last_s"], r["sustained_share"], r["smi_after"]),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--sustain", type=float, default=20.0)
    ap.add_argument("--rest", type=float, default=8.0)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    err = check_fp8()
    result = dict(device=props.name, torch=torch.__version__, cuda=torch.version.cuda,
                  layers=args.layers, tokens=T, sustain_s=args.sustain, rest_s=args.rest,
                  fp8_check=err, smi_idle=smi(), rounds=[])
    print("device", props.name, "torch", torch.__version__, "| fp8 check %.2e" % err,
          "| idle", result["smi_idle"], flush=True)
    if not (math.isfinite(err) and err < 1e-2):
        raise SystemExit("torch._scaled_mm disagrees with float64: %g" % err)
    layers = [Layer(10 * i) for i in range(args.layers)]
    xs = [rand(T, HIDDEN, seed=900 + i) for i in range(2)]
    dys = [rand(T, HIDDEN, seed=950 + i) * 0.01 for i in range(2)]
    for order in (MIXES, tuple(reversed(MIXES))):
        rows = []
        result["rounds"].append(rows)
        for mix in order:
            time.sleep(args.rest)
            try:
                rows.append(measure(layers, xs, dys, mix, args.sustain))
                show(rows[-1])
            except Exception as e:  # one mix's failure must not lose the others
                rows.append(dict(mix=mix, failed=repr(e)))
                print(mix, "failed:", repr(e), flush=True)
            write(args.out, result)  # a temporary file, then renamed: a kill leaves the last one


if __name__ == "__main__":
    main()
