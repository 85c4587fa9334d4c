#!/usr/bin/env python3
"""What a mixture-of-experts layer's expert MLP costs on the GPU beyond the kernels the database
times one at a time: Megatron-Core's sequential experts (a plain GEMM per local expert, as
Grok-1's launcher runs them) at the Grok-1 proxies' shapes, hidden 6144, expert FFN 32768 split
over expert TP 4 (8192 per GPU, gated: the up projection is 16384 wide), 8,192 routed rows per
GPU shared by 4, 2 or 1 local experts (EP 2, 4, 8).

    python3 kernels/torch/expert_mlp.py --out expert_mlp.json

Four measurements, each printed as a table and written to --out:
  1. kernels  every GEMM of one expert alone (CUDA events, queued behind a GPU sleep so that no
              host time counts, inputs rotated over more than twice the L2; median), the
              weight-gradient GEMMs three ways: BF16 output (what the kernel suite times), FP32
              output accumulated into an FP32 main gradient in the GEMM's epilogue (what
              Megatron's gradient-accumulation fusion asks cuBLAS for), and BF16 output followed
              by an FP32 add (the same without the fusion). Also the weight-gradient shapes
              over a range of reduction depths, to see how the epilogue's share falls with it.
  2. chain    one layer's expert work (every local expert's forward and backward) back to back,
              GPU time only, against the sum of its kernels' medians.
  3. eager    the same as autograd runs it from Python (wall clock per layer, synchronised),
              to see whether the host falls behind.
  4. sustained the chain repeated for --sustain seconds without pause: the time per layer in
              the first and last seconds, and the clocks, power and throttle reasons before and
              after, as nvidia-smi reads them; then an 8192^3 GEMM in BF16 and in FP8 (as
              Transformer Engine runs it) in bursts and for 30 s without pause: the share of
              the burst rate each precision sustains.
Every GEMM path is first checked against a float64 product of the same BF16 inputs.
"""
import argparse
import math
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

from attention import write  # beside this script: JSON through a temporary file and a rename

HIDDEN, FFN = 6144, 8192  # per GPU: Grok-1's expert FFN 32768 over expert TP 4
ROUTED_ROWS = 8192        # 4096 tokens x top-2 per GPU after the dispatcher
SLEEP_CYCLES = 4_000_000  # about 2 ms at Hopper clocks: longer than any enqueue below
SUSTAIN_GEMM = 30.0       # seconds of each precision's square GEMM without pause


def smi():
    base = "clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu"
    out = ""
    for q in (base + ",clocks_event_reasons.active", base):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:  # nvidia-smi missing or hung: say so, keep measuring
            return "nvidia-smi: %s" % e
        if out and "Field" not in out and "nvalid" not in out:
            return q + ": " + out
    return out


def rand(*shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return (torch.rand(shape, generator=g, device="cuda") * 2 - 1).to(dtype)


def wgrad_bf16(dy, x, acc):
    return torch.mm(dy.t(), x)


def wgrad_fused(dy, x, acc):
    """Gradient-accumulation fusion: acc (FP32) += dy^T x in one GEMM, in place."""
    return torch.addmm(acc, dy.t(), x, out_dtype=torch.float32, out=acc)


def wgrad_fused_new(dy, x, acc):
    """The same GEMM writing a new FP32 tensor (same bytes: reads acc, writes m x n FP32)."""
    return torch.addmm(acc, dy.t(), x, out_dtype=torch.float32)


def wgrad_unfused(dy, x, acc):
    return acc.add_(torch.mm(dy.t(), x))


WGRAD = {"bf16 out": wgrad_bf16, "fp32 accumulate (fused)": wgrad_fused,
         "fp32 accumulate (new out)": wgrad_fused_new, "bf16 out + fp32 add": wgrad_unfused}


def check_paths():
    """Each weight-gradient path against float64 on fresh inputs; returns {name: error or
    message}. A path that raises is dropped from the timings."""
    out = {}
    dy, x = rand(512, 384, seed=1), rand(512, 256, seed=2)
    acc0 = rand(384, 256, dtype=torch.float32, seed=3)
    want = acc0.double() + dy.double().t() @ x.double()
    for name, fn in WGRAD.items():
        try:
            acc = acc0.clone()
            got = fn(dy, x, acc)
            got = got.double() + (acc0.double() if name == "bf16 out" else 0)
            err = (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()
            out[name] = err if math.isfinite(err) and err < 1e-2 else "error %.3g" % err
        except Exception as e:
            out[name] = "refused: %s" % str(e).splitlines()[0][:160]
    return out


def timed(launch, sets, warmup=3, reps=15):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + reps):
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        launch(sets[i % len(sets)])
        stop.record()
        stop.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(times)


def gemm_sets(m, n, k, count):
    """(dy [k x m], x [k x n], acc [m x n] FP32): the weight gradient's operands, m x n out."""
    return [(rand(k, m, seed=10 + i), rand(k, n, seed=50 + i),
             torch.zeros(m, n, dtype=torch.float32, device="cuda")) for i in range(count)]


def set_count(m, n, k, l2):
    one = 2 * k * (m + n) + 4 * m * n
    return max(2, min(6, math.ceil(2 * l2 / one)))


def kernel_table(paths, l2):
    rows = []
    for r in (2048, 4096, 8192):
        shapes = {"up fwd": (r, 2 * FFN, HIDDEN), "down fwd": (r, HIDDEN, FFN),
                  "down dgrad": (r, FFN, HIDDEN), "up dgrad": (r, HIDDEN, 2 * FFN)}
        for what, (m, n, k) in shapes.items():
            sets = [(rand(m, k, seed=i), rand(k, n, seed=20 + i)) for i in range(3)]
            t = timed(lambda s: torch.mm(s[0], s[1]), sets)
            rows.append(dict(rows=r, what=what, m=m, n=n, k=k, path="bf16", seconds=t))
            del sets
    depth = [(HIDDEN, 2 * FFN, k) for k in (1024, 2048, 4096, 8192, 16384)]
    depth += [(FFN, HIDDEN, k) for k in (2048, 4096, 8192)]
    depth += [(8192, 7168, 8192), (1536, 6144, 4096), (6144, 2048, 4096)]  # dense rows' shapes
    for m, n, k in depth:
        sets = gemm_sets(m, n, k, set_count(m, n, k, l2))
        for name in paths:
            t = timed(lambda s, f=WGRAD[name]: f(s[0], s[1], s[2]), sets)
            rows.append(dict(rows=k, what="wgrad", m=m, n=n, k=k, path=name, seconds=t))
        del sets
        torch.cuda.empty_cache()
    return rows


class Experts:
    """One layer's local experts on one GPU: weights, FP32 main gradients, routed rows."""

    def __init__(self, local, seed):
        self.local, self.rows = local, ROUTED_ROWS // local
        self.w1 = [rand(HIDDEN, 2 * FFN, seed=seed + e) * 0.02 for e in range(local)]
        self.w2 = [rand(FFN, HIDDEN, seed=seed + 40 + e) * 0.02 for e in range(local)]
        self.g1 = [torch.zeros(HIDDEN, 2 * FFN, dtype=torch.float32, device="cuda")
                   for _ in range(local)]
        self.g2 = [torch.zeros(FFN, HIDDEN, dtype=torch.float32, device="cuda")
                   for _ in range(local)]
        self.x = rand(ROUTED_ROWS, HIDDEN, seed=seed + 90)
        self.dy = rand(ROUTED_ROWS, HIDDEN, seed=seed + 91) * 0.01

    def step(self, wgrad):
        """Forward then backward of every local expert, by hand: the kernels autograd runs."""
        outs, saved = [], []
        for e, x in enumerate(self.x.split(self.rows)):
            h = torch.mm(x, self.w1[e])
            a, b = h.chunk(2, dim=-1)
            act = F.gelu(a, approximate="tanh") * b
            outs.append(torch.mm(act, self.w2[e]))
            saved.append((x, a, b, act))
        torch.cat(outs)
        dxs = []
        for e, dy in enumerate(self.dy.split(self.rows)):
            x, a, b, act = saved[e]
            dact = torch.mm(dy, self.w2[e].t())
            wgrad(act, dy, self.g2[e])
            ga = F.gelu(a, approximate="tanh")
            da = torch.ops.aten.gelu_backward(dact * b, a, approximate="tanh")
            dh = torch.cat([da, dact * ga], dim=-1)
            dxs.append(torch.mm(dh, self.w1[e].t()))
            wgrad(x, dh, self.g1[e])
        return torch.cat(dxs)


def chain_table(paths):
    rows = []
    for local in (4, 2, 1):
        sets = [Experts(local, 100 * s) for s in range(2)]
        for name in paths:
            f = WGRAD[name]
            gpu = timed(lambda ex: ex.step(f), sets, warmup=2, reps=8)
            walls = []
            for i in range(6):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                sets[i % 2].step(f)
                torch.cuda.synchronize()
                walls.append(time.perf_counter() - t0)
            rows.append(dict(local=local, rows=ROUTED_ROWS // local, path=name, gpu_s=gpu,
                             wall_s=statistics.median(walls[2:])))
        del sets
        torch.cuda.empty_cache()
    return rows


def eager_autograd(local):
    """The same layer as autograd runs it from Python (nn.Linear-free, parameters with .grad)."""
    rows = ROUTED_ROWS // local
    w1 = [(rand(2 * FFN, HIDDEN, seed=e) * 0.02).requires_grad_() for e in range(local)]
    w2 = [(rand(HIDDEN, FFN, seed=9 + e) * 0.02).requires_grad_() for e in range(local)]
    x = rand(ROUTED_ROWS, HIDDEN, seed=77).requires_grad_()
    dy = rand(ROUTED_ROWS, HIDDEN, seed=78) * 0.01
    walls = []
    for i in range(6):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        outs = []
        for e, xe in enumerate(x.split(rows)):
            a, b = F.linear(xe, w1[e]).chunk(2, dim=-1)
            outs.append(F.linear(F.gelu(a, approximate="tanh") * b, w2[e]))
        torch.cat(outs).backward(dy)
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls[2:])


def grouped_table():
    """The up projection of 4 or 2 local experts as one grouped GEMM (torch._grouped_mm, where
    this PyTorch has it) against the same experts' plain GEMMs one after another."""
    rows = []
    for local in (4, 2):
        r = ROUTED_ROWS // local
        x = rand(ROUTED_ROWS, HIDDEN, seed=5)
        w_kn = rand(local, HIDDEN, 2 * FFN, seed=6)
        w_nk = rand(local, 2 * FFN, HIDDEN, seed=7)
        offs = torch.arange(1, local + 1, device="cuda", dtype=torch.int32) * r
        seq = timed(lambda _: [torch.mm(xe, w_kn[e]) for e, xe in enumerate(x.split(r))], [0])
        row = dict(local=local, rows=r, sequential_s=seq)
        for layout, w in (("b row-major", w_kn), ("b column-major", w_nk.transpose(-2, -1))):
            try:
                got = torch._grouped_mm(x, w, offs=offs)
                want = torch.mm(x[:r].double(), w[0].double())
                err = (torch.linalg.vector_norm(got[:r].double() - want) /
                       torch.linalg.vector_norm(want)).item()
                if not err < 1e-2:
                    raise RuntimeError("error %.3g" % err)
                row[layout] = timed(lambda _: torch._grouped_mm(x, w, offs=offs), [0])
            except Exception as e:
                row[layout] = "refused: %s" % str(e).splitlines()[0][:160]
        rows.append(row)
    return rows


def sustained(seconds, path):
    ex = Experts(4, 7)
    f = WGRAD[path]
    before = smi()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, t_end = [], time.time() + seconds
    while time.time() < t_end:
        start.record()
        for _ in range(5):
            ex.step(f)
        stop.record()
        stop.synchronize()
        samples.append((time.time(), start.elapsed_time(stop) * 1e-3 / 5))
    after = smi()
    t0 = samples[0][0]
    first = [s for t, s in samples if t - t0 < 2.0]
    last = [s for t, s in samples if samples[-1][0] - t < 3.0]
    return dict(path=path, seconds=seconds, layers=5 * len(samples),
                first_s=statistics.median(first), last_s=statistics.median(last),
                smi_before=before, smi_after=after)


def square_gemm(dtype, size=8192):
    """A launch of a size^3 GEMM in BF16, or in FP8 as Transformer Engine runs it (E4M3 inputs
    with per-tensor scales, BF16 output, split accumulation), over 3 rotating input sets."""
    sets = []
    for i in range(3):
        a, w = rand(size, size, seed=200 + i), rand(size, size, seed=300 + i)
        if dtype == "fp8":
            a, w = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        sets.append((a, w))
    one = torch.tensor(0.5, device="cuda")
    if dtype == "fp8":
        return sets, lambda s: torch._scaled_mm(s[0], s[1].t(), scale_a=one, scale_b=one,
                                                out_dtype=torch.bfloat16, use_fast_accum=False)
    return sets, lambda s: torch.mm(s[0], s[1].t())


def sustained_gemm(seconds):
    """Each precision's square GEMM timed in bursts (behind a GPU sleep, as the database is) and
    then without pause for `seconds`: the share of the burst rate the GPU sustains."""
    rows = []
    for dtype in ("bf16", "fp8"):
        sets, launch = square_gemm(dtype)
        burst = timed(launch, sets, warmup=5, reps=20)
        before = smi()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, t_end, i = [], time.time() + seconds, 0
        while time.time() < t_end:
            start.record()
            for _ in range(20):
                launch(sets[i % 3])
                i += 1
            stop.record()
            stop.synchronize()
            samples.append((time.time(), start.elapsed_time(stop) * 1e-3 / 20))
        after = smi()
        last = statistics.median([x for t, x in samples if samples[-1][0] - t < 3.0])
        rows.append(dict(dtype=dtype, burst_s=burst, sustained_s=last,
                         tflops_burst=2 * 8192 ** 3 / burst / 1e12,
                         tflops_sustained=2 * 8192 ** 3 / last / 1e12,
                         sustained_share=burst / last, smi_before=before, smi_after=after))
        del sets
        torch.cuda.empty_cache()
        time.sleep(5)  # let the clocks recover before the next precision
    return rows


def print_sustained_gemm(rows):
    for r in rows:
        print("sustained gemm %s 8192^3: burst %.0f TF/s, after %.0f s without pause %.0f TF/s "
              "(share %.3f) | before %s | after %s" % (
                  r["dtype"], r["tflops_burst"], SUSTAIN_GEMM, r["tflops_sustained"],
                  r["sustained_share"], r["smi_before"], r["smi_after"]), flush=True)


def print_kernels(rows):
    for r in rows:
        flops = 2.0 * r["m"] * r["n"] * r["k"]
        print("kernel %-10s %-26s m=%5d n=%5d k=%5d %8.3f ms %5.0f TF/s" % (
            r["what"], r["path"], r["m"], r["n"], r["k"], 1e3 * r["seconds"],
            flops / r["seconds"] / 1e12), flush=True)


def print_chain(rows):
    for r in rows:
        print("chain local=%d rows=%d %-26s gpu %7.3f ms wall %7.3f ms" % (
            r["local"], r["rows"], r["path"], 1e3 * r["gpu_s"], 1e3 * r["wall_s"]), flush=True)


def print_sustained(s):
    print("sustained %s: %d layers, first 2 s %.3f ms, last 3 s %.3f ms per layer" % (
        s["path"], s["layers"], 1e3 * s["first_s"], 1e3 * s["last_s"]))
    print("smi before:", s["smi_before"])
    print("smi after :", s["smi_after"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sustain", type=float, default=60.0)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    result = dict(device=props.name, torch=torch.__version__, cuda=torch.version.cuda,
                  smi_idle=smi())
    result["checks"] = check_paths()
    paths = [p for p, e in result["checks"].items() if isinstance(e, float)]
    print("device", props.name, "torch", torch.__version__, "| idle", result["smi_idle"],
          "| checks", result["checks"], flush=True)
    sustain_path = next((p for p in paths if p.startswith("fp32 accumulate")), paths[0])
    sections = [("kernels", lambda: kernel_table(paths, l2), print_kernels),
                ("chain", lambda: chain_table(paths), print_chain),
                ("eager", lambda: {str(n): eager_autograd(n) for n in (4, 2, 1)}, print),
                ("grouped", grouped_table, print),
                ("sustained", lambda: sustained(args.sustain, sustain_path), print_sustained),
                ("sustained_gemm", lambda: sustained_gemm(SUSTAIN_GEMM), print_sustained_gemm)]
    for name, run, show in sections:
        try:
            result[name] = run()
            show(result[name])
        except Exception as e:  # one section's failure must not lose the others
            result[name] = "failed: %r" % e
            print(name, result[name], flush=True)
        torch.cuda.empty_cache()
        write(args.out, result)  # a temporary file, then renamed: a kill leaves the last one


if __name__ == "__main__":
    main()
