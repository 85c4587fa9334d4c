#!/usr/bin/env python3
"""Times fused attention, forward and backward, as training runs it: PyTorch's
scaled_dot_product_attention on cuDNN's SDPA kernels (the backend Transformer Engine and
PyTorch use on Hopper; PyTorch builds the cuDNN graphs with the cuDNN frontend, which is not a
Debian package and so not in the C++ suite), falling back to PyTorch's FlashAttention-2 where
cuDNN refuses a shape. Writes a kernel-timing database (the format trainsim reads) that
`trainsim_kernels --merge` joins with the C++ suite's.

    trainsim_kernels --list --json --ops attention > shapes.json
    python3 kernels/torch/attention.py --shapes shapes.json --out attention.json

Method, as the C++ suite: each kernel (pass, head size, GQA ratio, mask) is first checked on a
small shape against a float64 reference of the same inputs (outputs and all three input
gradients); then warm-up launches, then timed launches, one CUDA event pair each, queued behind
a GPU sleep so that no host time is counted, on input sets rotated over more than twice the L2.
The forward is timed with inputs that require gradients (it then also writes the softmax
statistics the backward reads); the backward is autograd's call of the SDPA backward kernel(s)
for a saved forward, dQ, dK and dV all computed. Stops after the current shape on SIGINT or
SIGTERM and writes what was measured; rewrites the database every --checkpoint seconds.
"""
import argparse
import datetime
import json
import math
import os
import signal
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

STOP = False
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
SOURCES = {"cudnn": "torch-cudnn-sdpa", "flash": "torch-flash-attention-2"}
SLEEP_SECONDS = 500e-6  # longer than autograd takes to enqueue a backward


def on_stop(_signum, _frame):
    global STOP
    STOP = True


def quantile(sorted_values, q):
    """numpy's default 'linear' method, as kernels/host/stats.cpp."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])


def label(s):
    return "attention %s %s b=%d s=%d h=%d kv=%d d=%d %s" % (
        s["pass"], s["dtype"], s["batch"], s["seq"], s["heads"], s["kv_heads"], s["head_dim"],
        "causal" if s["causal"] else "full")


def check_key(s):
    return (s["pass"], s["head_dim"], s["heads"] // s["kv_heads"], s["causal"])


def make_inputs(s, seed, device="cuda"):
    """Q, K, V in [batch, heads, seq, dim] views of [batch, seq, heads, dim] storage (the bshd
    layout Megatron-LM and Transformer Engine hand to the kernel), uniform in [-1, 1)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)

    def one(heads):
        x = torch.rand((s["batch"], s["seq"], heads, s["head_dim"]), generator=g, device=device,
                       dtype=torch.float32) * 2 - 1
        return x.to(torch.bfloat16).transpose(1, 2).requires_grad_(True)

    return one(s["heads"]), one(s["kv_heads"]), one(s["kv_heads"])


def sdpa(backend, q, k, v, causal):
    gqa = q.shape[1] != k.shape[1]
    with sdpa_kernel([BACKENDS[backend]]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)


def reference(q, k, v, dout, causal):
    """Float64 attention and its input gradients, from the same BF16 inputs."""
    group = q.shape[1] // k.shape[1]
    q64, k64, v64 = (t.detach().double().requires_grad_(True) for t in (q, k, v))
    kk = k64.repeat_interleave(group, dim=1)
    vv = v64.repeat_interleave(group, dim=1)
    scores = q64 @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = scores.shape[-1]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vv
    grads = torch.autograd.grad(out, (q64, k64, v64), dout.double())
    return out, grads


def rel_error(got, want):
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()


def check(backend, s):
    """Raises when the backend's outputs or gradients differ from the float64 reference on a
    small shape of this kernel (head size, GQA ratio, mask)."""
    group = s["heads"] // s["kv_heads"]
    small = dict(s, batch=1, seq=256, kv_heads=2, heads=2 * group)
    q, k, v = make_inputs(small, 7)
    out = sdpa(backend, q, k, v, s["causal"])
    dout = (torch.rand_like(out, dtype=torch.float32) * 2 - 1).to(torch.bfloat16)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    want_out, want_grads = reference(q, k, v, dout, s["causal"])
    errors = [rel_error(out, want_out)] + [rel_error(g, w) for g, w in zip(grads, want_grads)]
    worst = max(errors)
    if not worst < 2e-2:
        names = ["O", "dQ", "dK", "dV"]
        raise RuntimeError("%s on %s: relative error %s against the float64 reference" % (
            backend, label(small), ", ".join("%s %.3g" % p for p in zip(names, errors))))


class Timed:
    """Rotating input sets of one shape, forward run once per set for the backward."""

    def __init__(self, backend, s, l2_bytes, budget_bytes):
        self.backend, self.s = backend, s
        elems = s["batch"] * s["seq"] * s["head_dim"]
        set_bytes = 2 * elems * (3 * s["heads"] + 2 * s["kv_heads"])
        wanted = math.ceil(2 * l2_bytes / set_bytes)
        self.count = max(1, min(wanted, int(budget_bytes // set_bytes), 64))
        self.sets = []
        for i in range(self.count):
            q, k, v = make_inputs(s, 1000 + i)
            item = {"q": q, "k": k, "v": v}
            if s["pass"] == "bwd":
                out = sdpa(backend, q, k, v, s["causal"])
                item["out"] = out
                item["dout"] = (torch.rand_like(out, dtype=torch.float32) * 2 - 1).to(
                    torch.bfloat16)
            self.sets.append(item)

    def launch(self, i):
        t = self.sets[i % self.count]
        if self.s["pass"] == "fwd":
            sdpa(self.backend, t["q"], t["k"], t["v"], self.s["causal"])
        else:
            torch.autograd.grad(t["out"], (t["q"], t["k"], t["v"]), t["dout"],
                                retain_graph=True)


def time_launches(timed, args, sleep_cycles):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def once(i):
        torch.cuda._sleep(sleep_cycles)
        start.record()
        timed.launch(i)
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e-3

    estimate = 0.0
    for i in range(args.warmup):
        estimate = once(i)
    reps = args.repetitions
    if estimate > 0:
        reps = max(args.min_repetitions, min(args.repetitions,
                                              math.ceil(args.time_per_shape / estimate)))
    return [once(args.warmup + r) for r in range(reps)]


def entry(s, samples, source):
    xs = sorted(samples)
    e = {k: s[k] for k in ("op", "pass", "dtype", "batch", "seq", "heads", "kv_heads",
                           "head_dim", "causal")}
    e.update(median_us=quantile(xs, 0.5) * 1e6, p10_us=quantile(xs, 0.1) * 1e6,
             p90_us=quantile(xs, 0.9) * 1e6, repetitions=len(xs), source=source)
    return e


def driver_version():
    """The kernel driver's version (the first word of /proc/driver/nvidia/version that looks like
    one), with the CUDA version PyTorch was built for."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            words = f.read().split()
        found = [w for w in words if "." in w and w.replace(".", "").isdigit()]
        if found:
            return "%s (CUDA %s)" % (found[0], torch.version.cuda)
    except OSError:
        pass
    return "CUDA " + str(torch.version.cuda)


def database(args, entries, notes):
    props = torch.cuda.get_device_properties(0)
    cudnn = torch.backends.cudnn.version() or 0
    return {
        "format": "trainsim-kernel-db",
        "version": 1,
        "kind": "measured",
        "gpu": {"name": props.name, "sm_count": props.multi_processor_count,
                "l2_MiB": props.L2_cache_size / 2**20},
        "measurement": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "suite_version": args.suite_version,
            "driver": driver_version(),
            "cuda_runtime": str(torch.version.cuda),
            "cudnn": "%d.%d.%d" % (cudnn // 10000, cudnn % 10000 // 100, cudnn % 100),
            "method": "kernels/torch/attention.py (PyTorch %s): %d warm-up launches, then %d to "
                      "%d timed (about %d ms per shape), one CUDA event pair per launch behind "
                      "a GPU sleep; inputs rotated over more than 2x L2; outputs and gradients "
                      "checked against float64 first" % (
                          torch.__version__, args.warmup, args.min_repetitions,
                          args.repetitions, args.time_per_shape * 1000),
        },
        "notes": notes,
        "entries": entries,
    }


def write(path, db):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(db, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", required=True, help="JSON from trainsim_kernels --list --json")
    ap.add_argument("--out", required=True, help="the database to write")
    ap.add_argument("--backends", default="cudnn,flash",
                    help="in order of preference, per kernel: cudnn, flash (default cudnn,flash)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repetitions", type=int, default=50)
    ap.add_argument("--min-repetitions", type=int, default=10)
    ap.add_argument("--time-per-shape", type=float, default=0.2)
    ap.add_argument("--time-budget", type=float, default=0,
                    help="shapes not started after this many seconds are skipped (0: no limit)")
    ap.add_argument("--checkpoint", type=float, default=30)
    ap.add_argument("--suite-version", default="")
    ap.add_argument("--resume", action="store_true",
                    help="keep the entries --out already holds and time only the other shapes")
    args = ap.parse_args()
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in BACKENDS:
            sys.exit("attention.py: --backends: unknown backend %r (cudnn, flash)" % b)
    with open(args.shapes) as f:
        shapes = [s for s in json.load(f) if s["op"] == "attention"]

    props = torch.cuda.get_device_properties(0)
    free, _ = torch.cuda.mem_get_info()
    sleep_cycles = int(SLEEP_SECONDS * props.clock_rate * 1e3) if hasattr(
        props, "clock_rate") else int(SLEEP_SECONDS * 2e9)
    print("attention.py: %s, PyTorch %s, cuDNN %s; %d shapes" % (
        props.name, torch.__version__, torch.backends.cudnn.version(), len(shapes)),
        file=sys.stderr, flush=True)

    chosen, failures, entries, notes = {}, [], [], []
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            entries = json.load(f)["entries"]
    done = {label(e) for e in entries}
    started = last_write = time.monotonic()
    skipped = 0
    for s in shapes:
        if label(s) in done:
            continue
        if STOP or (args.time_budget > 0 and time.monotonic() - started > args.time_budget):
            skipped += 1
            continue
        key = check_key(s)
        if key not in chosen:
            reasons = []
            chosen[key] = None
            for b in backends:
                try:
                    check(b, s)
                    chosen[key] = b
                    break
                except Exception as e:  # a backend that refuses or fails: try the next one
                    reasons.append("%s: %s" % (b, str(e).splitlines()[0][:300]))
            if chosen[key] is None:
                failures.append("%s: %s" % (label(s), "; ".join(reasons)))
            elif reasons:
                notes.append("%s (pass %s, d %d, group %d, %s): %s" % (
                    SOURCES[chosen[key]], s["pass"], s["head_dim"], key[2],
                    "causal" if s["causal"] else "full", "; ".join(reasons)))
        backend = chosen[key]
        if backend is None:
            continue
        try:
            timed = Timed(backend, s, props.L2_cache_size, 0.25 * free)
            samples = time_launches(timed, args, sleep_cycles)
            del timed
        except Exception as e:
            failures.append("%s: %s" % (label(s), str(e).splitlines()[0][:300]))
            continue
        entries.append(entry(s, samples, SOURCES[backend]))
        e = entries[-1]
        flops = 4 * s["batch"] * s["seq"] ** 2 * s["heads"] * s["head_dim"]
        flops *= (0.5 if s["causal"] else 1) * (2.5 if s["pass"] == "bwd" else 1)
        print("%-70s %10.1f us %7.1f TFLOP/s  %s" % (label(s), e["median_us"],
                                                     flops / e["median_us"] / 1e6, e["source"]),
              flush=True)
        if time.monotonic() - last_write > args.checkpoint:
            write(args.out, database(args, entries, notes + ["not timed, failed its check: " + f
                                                             for f in failures]))
            last_write = time.monotonic()
    write(args.out, database(args, entries, notes + ["not timed, failed its check: " + f
                                                     for f in failures]))
    print("attention.py: %d of %d shapes timed, %d failed, %d not started; wrote %s" % (
        len(entries), len(shapes), len(failures), skipped, args.out), file=sys.stderr)
    for f in failures:
        print("  failed: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
