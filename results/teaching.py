#!/usr/bin/env python3
"""The teaching set: each lesson's comparison as text and its pipeline diagrams in results/teaching/,
and scenarios/teaching/README.md, which shows them (rewritten here, so that it shows what the code
gives now).

    results/teaching.py [path/to/trainsim]     (also run by results/regenerate.sh)
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "results", "teaching")
T = "scenarios/teaching"


def run(args, out=None):
    """Runs trainsim; returns its stdout (exit 1, diagnostics found, is expected for failures)."""
    r = subprocess.run([BIN] + args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit("trainsim %s failed: %s" % (" ".join(args), r.stderr))
    if out:
        with open(os.path.join(OUT, out), "w") as f:
            f.write(r.stdout)
    return r.stdout.rstrip("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    a = ["--engine", "analytic"]
    text = {}
    text["schedules"] = run(["compare", T + "/schedules.json", "--set", "schedule=gpipe", "--set",
                             "schedule=interleaved,vp=2", "--set", "schedule=zb-h1"] + a,
                            "schedules.txt")
    for s in ["gpipe", "1f1b", "zb-h1"]:
        run(["run", T + "/schedules.json", "--schedule", s, "--svg",
             os.path.join(OUT, "schedule-%s.svg" % s)] + a)
    run(["run", T + "/schedules.json", "--schedule", "interleaved", "--vp", "2", "--svg",
         os.path.join(OUT, "schedule-interleaved.svg")] + a)
    text["tp_nodes"] = run(["compare", T + "/tp-nodes.json", "--set", "tp=16,dp=1"] + a,
                           "tp-nodes.txt")
    run(["run", T + "/tp-nodes.json", "--svg", os.path.join(OUT, "tp-8-in-node.svg")] + a)
    run(["run", T + "/tp-nodes.json", "--tp", "16", "--dp", "1", "--svg",
         os.path.join(OUT, "tp-16-across-nodes.svg")] + a)
    text["memory"] = run(["compare", T + "/memory.json", "--set", "recompute=selective", "--set",
                          "recompute=full", "--set", "zero=1", "--set", "zero=2", "--set",
                          "zero=3", "--set", "zero=2,recompute=full"] + a, "memory.txt")
    text["nanotron_108"] = run(["check", "scenarios/seeds/nanotron-108.json"], "nanotron-108.txt")
    text["nanotron_106"] = run(["reshard", "--model", "scenarios/seeds/models/nanotron-108-tiny.json",
                                "--framework", "nanotron", "--from", "tp=2,pp=1,dp=1", "--to",
                                "tp=1,pp=1,dp=2"], "nanotron-106.txt")
    text["colossalai_6108"] = run(["check", "scenarios/seeds/colossalai-6108.json"],
                                  "colossalai-6108.txt")
    with open(os.path.join(ROOT, T, "README.md"), "w") as f:
        f.write(README.format(**text))
    print("wrote results/teaching/ and scenarios/teaching/README.md")


README = """# Teaching set: parallelism trade-offs you can look at

Each lesson is a scenario here, a command, its numbers and its pictures. Every output below is
written into `results/teaching/` by `python3 results/teaching.py` (run by `results/regenerate.sh`),
which also writes this file. The pictures are `trainsim run ... --svg`, one row per pipeline stage, forward passes blue, backward
green (its input-gradient part light green, its weight-gradient part purple), the bubbles blank,
communication in thin rows under each stage. `trainsim compare ... --html page.html` puts a
lesson's diagrams on one time axis in one page.

## 1. Pipeline schedules: GPipe, 1F1B, interleaved 1F1B, ZB-H1

`schedules.json`: Llama 3.1 8B on 8 H100s, tp 2, four stages, eight micro-batches.

```
trainsim compare scenarios/teaching/schedules.json --set schedule=gpipe \\
    --set schedule=interleaved,vp=2 --set schedule=zb-h1 --engine analytic
```

```
{schedules}
```

GPipe runs every forward, then every backward: the same bubble as 1F1B ((p - 1) / (m + p - 1) of
the ideal step), but every micro-batch's activations are held at once, hence its memory. 1F1B
starts each micro-batch's backward as soon as it can and holds at most p micro-batches.
Interleaving gives each GPU two chunks of the model, so the warm-up and cool-down are in passes
half as long: the bubble shrinks, for twice the pipeline messages. ZB-H1 splits each backward into
its input gradient (what the previous stage waits for) and its weight gradient (which can wait),
and fills the cool-down with weight gradients.

GPipe: ![GPipe](../../results/teaching/schedule-gpipe.svg)

1F1B: ![1F1B](../../results/teaching/schedule-1f1b.svg)

Interleaved 1F1B, vp 2: ![interleaved](../../results/teaching/schedule-interleaved.svg)

ZB-H1: ![ZB-H1](../../results/teaching/schedule-zb-h1.svg)

## 2. Tensor parallelism inside a node, then across nodes

`tp-nodes.json`: Llama 2 7B on two H100 nodes, tp 8 inside each node and dp 2 across them,
against tp 16 over both nodes.

```
trainsim compare scenarios/teaching/tp-nodes.json --set tp=16,dp=1 --engine analytic
```

```
{tp_nodes}
```

Every layer's tensor-parallel collectives sit on the critical path; inside a node they run over
NVLink, across nodes over one InfiniBand NIC per GPU, several times slower. `trainsim check
scenarios/teaching/tp-nodes.json --tp 16 --dp 1` says so (`tp-across-nodes`) and prices the fix.

tp 8 in a node: ![tp 8](../../results/teaching/tp-8-in-node.svg)

tp 16 across two nodes: ![tp 16](../../results/teaching/tp-16-across-nodes.svg)

## 3. Recomputation and ZeRO: time for memory

`memory.json`: Llama 3.1 8B on 8 H100s, data parallel 8, 4k tokens per micro-batch.

```
trainsim compare scenarios/teaching/memory.json --set recompute=selective --set recompute=full \\
    --set zero=1 --set zero=2 --set zero=3 --set zero=2,recompute=full --engine analytic
```

```
{memory}
```

Without ZeRO every GPU holds the whole model state: BF16 weights, FP32 gradients, FP32 master
weights and two Adam moments, 18 bytes a parameter, 144 GB for 8B parameters. Recomputation only
trims the activations (selective recomputation saves nothing here: flash attention already keeps
no s x s scores), so no plan fits until ZeRO shards the state over the 8 replicas: stage 1 the
master weights and moments (81 GiB, just over; `tight`: only the 5 % allocator fragmentation the
platform assumes takes it past 80 GiB, so it may run), stage 2 the gradients too (56 GiB, fits, as
fast), stage 3 the weights as well (44 GiB) at the price of gathering them every pass.

## 4. The three failures trainsim was built on

**nanotron #108, a pipeline stage with no parameters.** nanotron's partition weighs the LM head
by its vocabulary, so a tiny model with a large vocabulary leaves a stage with nothing to train:

```
trainsim check scenarios/seeds/nanotron-108.json
```

```
{nanotron_108}
```

**nanotron #106, a TP 2 checkpoint that cannot resume at TP 1.** The vocabulary is padded
differently at the two layouts, so the embedding shards do not merge row for row:

```
trainsim reshard --model scenarios/seeds/models/nanotron-108-tiny.json --framework nanotron \\
    --from tp=2,pp=1,dp=1 --to tp=1,pp=1,dp=2
```

```
{nanotron_106}
```

**ColossalAI #6108, Llama 3.1 70B's embedding saved as one TP shard.** At tp 8 ColossalAI pads the
128,256-word vocabulary to 128,512 rows, 16,064 per rank; a save path that forgets the padding
writes one shard's [16064, 8192] as the whole table:

```
trainsim check scenarios/seeds/colossalai-6108.json
```

```
{colossalai_6108}
```
"""

if __name__ == "__main__":
    BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "trainsim")
    main()
