#!/usr/bin/env python3
"""How much slower a GEMM runs while a communication kernel holds some of the GPU's SMs, the
effect the platform's `overlap.compute_slowdown` stands for (README, Accuracy). NCCL's collectives
and Transformer Engine's userbuffers run as kernels of a few blocks, one per channel, each
holding an SM for the whole call; the GEMM beside them gets the rest. One GPU cannot run NCCL
between GPUs, so two stand-ins run on a second stream, each B blocks of one kernel (B = 2 to 32:
a few for userbuffers' and inter-node calls, NCCL's channel counts on NVLink at the top):
  spin  arithmetic only: what taking B SMs costs the GEMM;
  copy  a device-to-device copy over 512 MiB: the SMs and the HBM traffic a transfer's kernels
        make (NCCL reads the send buffer and the peer writes the receive buffer in local HBM).
For each GEMM (the default scenario's and the Llama 3.1 70B scenario's shapes, BF16 and FP8 as
Transformer Engine runs it) the time per GEMM of a batch is taken alone and with the stand-in
running the whole batch long (checked by events on both streams), each batch behind a GPU sleep
so that no host time counts; alone and beside alternate, and the slowdown is the median of 5
neighbouring pairs' ratios (the clocks drift between batches by more than the small effects).

    python3 kernels/torch/comm_interference.py --out comm_interference.json
    python3 kernels/torch/comm_interference.py --render A.json [B.json ...]   # markdown, no GPU
"""
import argparse
import functools
import json
import os
import statistics
import subprocess
import sys

BLOCKS = (2, 4, 8, 16, 24, 32)
# (m, n, k, dtype): Nemotron-4 340B at tp 8, 4,096 tokens (MLP up and down), Llama 3.1 70B at
# tp 4, 8,192 tokens (MLP up), a square one; FP8 as Transformer Engine runs it.
GEMMS = ((4096, 9216, 18432, "bf16"), (4096, 18432, 9216, "bf16"), (8192, 14336, 8192, "bf16"),
         (8192, 8192, 8192, "bf16"), (4096, 9216, 18432, "fp8"), (8192, 8192, 8192, "fp8"))
COPY_BYTES = 512 << 20   # per buffer, ten times the L2
SLEEP_CYCLES = 2_000_000  # about 1 ms: longer than any enqueue below
BATCH_MS = 40.0           # GPU time of one timed batch of GEMMs
REPS = 5


def smi():
    q = "name,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu"
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # nvidia-smi missing or hung: say so, keep measuring
        return "nvidia-smi: %s" % e


@functools.lru_cache(maxsize=None)
def kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(src, dst, n, reps, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        for _ in range(reps):
            for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
                tl.store(dst + start + offs, tl.load(src + start + offs))

    @triton.jit
    def spin_kernel(out, iters, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = offs.to(tl.float32) + tl.program_id(0)
        for _ in range(iters):
            x = x * 0.9999 + 0.0001
        tl.store(out + tl.program_id(0) * BLOCK + offs, x)

    return copy_kernel, spin_kernel


class StandIn:
    """B blocks of the copy or the spin kernel, sized to run for a given time."""

    def __init__(self, torch, kind, blocks):
        self.torch, self.kind, self.blocks = torch, kind, blocks
        self.copy, self.spin = kernels()
        n = COPY_BYTES // 4
        self.n = n
        if kind == "copy":
            self.src = torch.rand(n, device="cuda")
            self.dst = torch.empty_like(self.src)
        else:
            self.out = torch.empty(blocks * 1024, device="cuda")
        self.unit_ms = self.time(1 if kind == "copy" else 100_000)

    def launch(self, count):
        if self.kind == "copy":
            self.copy[(self.blocks,)](self.src, self.dst, self.n, count, BLOCK=4096, num_warps=8)
        else:
            self.spin[(self.blocks,)](self.out, count, BLOCK=1024, num_warps=8)

    def time(self, count):
        torch = self.torch
        self.launch(count)  # compiles on first use
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self.launch(count)
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / count

    def count_for(self, ms):
        return max(1, int(ms / self.unit_ms) + 1)

    def gb_per_s(self, ms_per_unit):
        return 2 * self.n * 4 / (ms_per_unit * 1e-3) / 1e9 if self.kind == "copy" else None


def gemm(torch, m, n, k, dtype):
    """A launch of C[m, n] = A[m, k] B[k, n] over 3 rotating input sets (more than the L2)."""
    sets = []
    for i in range(3):
        g = torch.Generator(device="cuda")
        g.manual_seed(100 + i)
        a = (torch.rand(m, k, generator=g, device="cuda") * 2 - 1).to(torch.bfloat16)
        w = (torch.rand(n, k, generator=g, device="cuda") * 2 - 1).to(torch.bfloat16)
        if dtype == "fp8":
            a, w = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        sets.append((a, w))
    one = torch.tensor(0.5, device="cuda")
    if dtype == "fp8":
        return sets, lambda s: torch._scaled_mm(s[0], s[1].t(), scale_a=one, scale_b=one,
                                                out_dtype=torch.bfloat16, use_fast_accum=False)
    return sets, lambda s: torch.mm(s[0], s[1].t())


def carveout(torch, sms):
    """cuBLASLt's SM count target, which Transformer Engine sets for the GEMMs its userbuffers
    overlap (the GEMM leaves `sms` SMs to the communication kernel); 0 is none."""
    torch._C._set_sm_carveout_experimental(sms if sms else None)


def batch_ms(torch, run, sets, count, beside=None, stand_in_count=0):
    """The GPU time per GEMM of one batch of `count`, behind a GPU sleep; with a stand-in, which
    starts first on its own stream and must outlast the batch (else None)."""
    side = torch.cuda.Stream()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    torch.cuda.synchronize()
    if beside is not None:
        with torch.cuda.stream(side):
            ev[2].record()
            beside.launch(stand_in_count)
            ev[3].record()
    torch.cuda._sleep(SLEEP_CYCLES)  # the stand-in, sized to cover it too, starts first
    ev[0].record()
    for i in range(count):
        run(sets[i % len(sets)])
    ev[1].record()
    torch.cuda.synchronize()
    if beside is not None and (ev[2].elapsed_time(ev[0]) < 0 or ev[1].elapsed_time(ev[3]) < 0):
        return None, None
    unit = ev[2].elapsed_time(ev[3]) / stand_in_count if beside is not None else None
    return ev[0].elapsed_time(ev[1]) / count, unit


def paired(torch, run, sets, count, beside, stand_in_count, margin=False):
    """REPS pairs of batches, alone and beside the stand-in (the GPU's clocks drift between
    measurements by more than small effects: each ratio compares neighbours); medians."""
    alone, with_it, ratios, units, dropped = [], [], [], [], 0
    for rep in range(REPS):  # the order alternates, so that a drift does not favour either
        if rep % 2:
            b, unit = beside_ms(torch, run, sets, count, beside, stand_in_count, margin)
        a, _ = batch_ms(torch, run, sets, count)
        if rep % 2 == 0:
            b, unit = beside_ms(torch, run, sets, count, beside, stand_in_count, margin)
        if b is None:
            dropped += 1
            continue
        alone.append(a)
        with_it.append(b)
        ratios.append(b / a)
        units.append(unit)
    if not ratios:
        return None
    return dict(alone_ms=statistics.median(alone), beside_ms=statistics.median(with_it),
                slowdown=statistics.median(ratios) - 1, dropped=dropped,
                stand_in_gb_per_s=beside.gb_per_s(statistics.median(units)))


def beside_ms(torch, run, sets, count, beside, stand_in_count, margin):
    if margin:
        carveout(torch, beside.blocks)
    try:
        return batch_ms(torch, run, sets, count, beside, stand_in_count)
    finally:
        if margin:
            carveout(torch, 0)


def measure(out_path, margin):
    import torch

    from attention import write  # beside this script: JSON through a temporary file and a rename
    assert torch.cuda.is_available(), "needs a GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    result = dict(device=torch.cuda.get_device_name(), sms=torch.cuda.get_device_properties(0)
                  .multi_processor_count, torch=torch.__version__, smi_before=smi(), rows=[],
                  stand_ins={})
    if margin and not hasattr(torch._C, "_set_sm_carveout_experimental"):
        sys.exit("this PyTorch has no SM carveout (torch._C._set_sm_carveout_experimental)")
    kinds = ("spin",) if margin else ("spin", "copy")
    stand_ins = {(kind, b): StandIn(torch, kind, b) for kind in kinds for b in BLOCKS}
    result["gemm_sm_margin"] = margin
    for (kind, b), s in stand_ins.items():
        alone = s.time(s.count_for(20.0))
        result["stand_ins"]["%s %d" % (kind, b)] = dict(unit_ms=alone, gb_per_s=s.gb_per_s(alone))
        print("stand-in %s x %d blocks: %.4f ms per unit%s" % (
            kind, b, alone, "" if kind == "spin" else ", %.0f GB/s alone" % s.gb_per_s(alone)),
            flush=True)
    for m, n, k, dtype in GEMMS:
        try:
            sets, run = gemm(torch, m, n, k, dtype)
            for i in range(3):
                run(sets[i])
            one, _ = batch_ms(torch, run, sets, 3)
            count = max(3, int(BATCH_MS / one))
            alone = statistics.median(batch_ms(torch, run, sets, count)[0] for _ in range(REPS))
        except Exception as e:  # e.g. FP8 unsupported by this PyTorch: say so, go on
            print("gemm %d x %d x %d %s: %s" % (m, n, k, dtype, e), flush=True)
            continue
        tflops = 2 * m * n * k / (alone * 1e-3) / 1e12
        print("gemm %d x %d x %d %s: %.3f ms alone (%.0f TFLOP/s), batch of %d" % (
            m, n, k, dtype, alone, tflops, count), flush=True)
        for (kind, b), s in stand_ins.items():
            got = paired(torch, run, sets, count, s, s.count_for(2.5 * alone * count + 10.0),
                         margin)
            row = dict(m=m, n=n, k=k, dtype=dtype, stand_in=kind, blocks=b, **(got or {}))
            if got:
                print("  beside %s x %2d: %.3f ms against %.3f alone (%+.1f %%)%s" % (
                    kind, b, got["beside_ms"], got["alone_ms"], 100 * got["slowdown"],
                    "" if kind == "spin" else ", copy at %.0f GB/s" % got["stand_in_gb_per_s"]),
                    flush=True)
            result["rows"].append(row)
    result["smi_after"] = smi()
    write(out_path, result)


def render_one(path):
    r = json.load(open(path))
    margin = r.get("gemm_sm_margin", False)
    print("## `%s`%s\n" % (os.path.basename(path), ": the GEMMs told to leave the stand-in's SMs"
                           if margin else ""))
    print("One %s (%d SMs, PyTorch %s). Before: %s. After: %s.%s\n" % (
        r["device"], r["sms"], r["torch"], r["smi_before"], r["smi_after"],
        " With `--margin`: cuBLASLt's SM count target set to the stand-in's blocks around each "
        "batch beside it (`torch._C._set_sm_carveout_experimental`)." if margin else ""))
    kinds = sorted({x["stand_in"] for x in r["rows"]}, reverse=True)
    print("| GEMM | alone | " + " | ".join("%s %d" % (k, b) for k in kinds for b in BLOCKS) + " |")
    print("|---" * (2 + len(kinds) * len(BLOCKS)) + "|")
    shapes = []
    for row in r["rows"]:
        key = (row["m"], row["n"], row["k"], row["dtype"])
        if key not in shapes:
            shapes.append(key)
    for key in shapes:
        rows = {(x["stand_in"], x["blocks"]): x for x in r["rows"]
                if (x["m"], x["n"], x["k"], x["dtype"]) == key}
        cells = []
        for kind in kinds:
            for b in BLOCKS:
                x = rows.get((kind, b))
                cells.append("-" if x is None or "slowdown" not in x else
                             "%+.1f %%" % (100 * x["slowdown"]))
        alone = statistics.median(x["alone_ms"] for x in rows.values() if "alone_ms" in x)
        print("| %d x %d x %d %s | %.3f ms | %s |" % (key + (alone, " | ".join(cells))))
    copies = [b for b in BLOCKS if "copy %d" % b in r["stand_ins"]]
    if copies:
        print("\nAlone, the copy stand-in moves " + ", ".join(
            "%.0f GB/s with %d blocks" % (r["stand_ins"]["copy %d" % b]["gb_per_s"], b)
            for b in copies) + " (read and written).")
    print()


def render(paths):
    print("# GEMMs beside a communication kernel's blocks\n")
    print("Measured on lent GPUs by `python3 kernels/torch/comm_interference.py --out FILE "
          "[--margin]`; this page by `python3 kernels/torch/comm_interference.py --render` of the "
          "files in `platforms/h100-sxm/measurements/` (run by `results/regenerate.sh`). Each "
          "cell: how much longer a GEMM takes with B blocks of a stand-in kernel running on a "
          "second stream for its whole batch, the median ratio of %d neighbouring pairs of "
          "batches (alone, beside), beside the median time alone. `spin` holds the SMs only; "
          "`copy` also moves HBM bytes. Two runs on one machine, then a third with the GEMMs told to "
          "leave the stand-in's SMs.\n" % REPS)
    for path in paths:
        render_one(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="measure on this machine's GPU, write the JSON here")
    ap.add_argument("--render", nargs="+", help="print the markdown page of measured JSONs")
    ap.add_argument("--margin", action="store_true",
                    help="the GEMMs beside the spin stand-in leave its SMs free (cuBLASLt's SM "
                         "count target, as Transformer Engine sets it for overlapped GEMMs)")
    args = ap.parse_args()
    if args.render:
        render(args.render)
    elif args.out:
        measure(args.out, args.margin)
    else:
        ap.error("give --out or --render")


if __name__ == "__main__":
    sys.exit(main())
