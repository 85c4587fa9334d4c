#!/usr/bin/env python3
"""What Megatron-Core's vocabulary-parallel cross-entropy costs on the GPU, fused and unfused.

trainsim times the loss as the kernel suite's one cross_entropy kernel each way (read the BF16
logits, write the FP32 softmax; read it back, write the BF16 gradient). Megatron-Core runs it as
several passes over the [tokens, vocabulary / TP] logits in FP32: the unfused path (its default,
and NeMo's LoRA recipes) as eager PyTorch operations, the fused path (--cross-entropy-loss-fusion,
NeMo's default, `cross_entropy_fusion_impl` native) as four functions under torch.compile. This
times both, written here after Megatron-Core's core_r0.12 `tensor_parallel/cross_entropy.py` and
`fusions/fused_cross_entropy.py` at TP 1 (no all-reduce; the same passes per rank at any TP):

  unfused   cast to FP32, max, subtract in place, gather the target logits, exp in place, sum,
            normalise in place; backward: subtract one at the targets, scale by the loss's
            gradient, and autograd's cast back to BF16
  fused     the same steps in the four compiled functions Megatron-Core groups them into

For each [tokens, vocabulary] shape: the forward and the backward of each path (CUDA events
behind a GPU sleep, median of the timed launches after warm-up and compilation), both checked
first against float64 cross-entropy and its gradient on a small shape. The results set against
the kernel database's cross_entropy entries say how much the database's kernel undercounts.

    python3 kernels/torch/cross_entropy_paths.py --out cross_entropy_paths.json
"""
import argparse
import math

import torch
import torch.nn.functional as F

import expert_mlp
from attention import write
from expert_mlp import rand, smi, timed

expert_mlp.SLEEP_CYCLES = 20_000_000  # about 10 ms: longer than a pass takes to enqueue
# [tokens, vocabulary per rank]: Llama 3's 128,256 words at TP 1, 2, 4 and 8; Nemotron-4's
# 256,000 at TP 2 and 4; a 32,000-word vocabulary; 4,096 and 8,192 tokens.
SHAPES = [(4096, 128256), (4096, 64128), (4096, 32064), (4096, 16032), (4096, 128000),
          (4096, 64000), (4096, 32000), (8192, 128256), (8192, 64000)]


def logits_max(x):
    x = x.float()
    return x, torch.max(x, dim=-1)[0]


def predicted_logits(x, target, mx):
    x -= mx.unsqueeze(dim=-1)
    arange = torch.arange(x.size(0), device=x.device)
    predicted = x[arange, target].clone()
    exp = x
    torch.exp(x, out=exp)
    return predicted, exp.sum(dim=-1), exp


def loss_and_softmax(exp, predicted, sum_exp):
    loss = torch.log(sum_exp) - predicted
    exp.div_(sum_exp.unsqueeze(dim=-1))
    return exp, loss


def gradients(softmax, grad_output, target):
    grad = softmax
    arange = torch.arange(grad.size(0), device=grad.device)
    grad[arange, target] -= 1.0
    grad.mul_(grad_output.unsqueeze(dim=-1))
    return grad


def fused_gradients(softmax, grad_output, target):
    return gradients(softmax, grad_output, target).to(torch.bfloat16)


def make_path(fused):
    """An autograd function of (BF16 logits [T, V], targets [T]) -> loss [T] running Megatron's
    passes, compiled as its fused path groups them or eagerly."""
    wrap = torch.compile if fused else (lambda f: f)
    f_max, f_pred, f_loss = wrap(logits_max), wrap(predicted_logits), wrap(loss_and_softmax)
    f_grad = wrap(fused_gradients) if fused else gradients

    class Path(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target):
            x, mx = f_max(logits)
            predicted, sum_exp, exp = f_pred(x, target, mx)
            softmax, loss = f_loss(exp, predicted, sum_exp)
            ctx.save_for_backward(softmax, target)
            return loss

        @staticmethod
        def backward(ctx, grad_output):
            softmax, target = ctx.saved_tensors
            # Unfused, the FP32 gradient of a BF16 input: autograd casts it back.
            return f_grad(softmax, grad_output, target), None

    return Path.apply


def check(path):
    """Loss and logits gradient against float64 on a small shape; the larger relative error."""
    logits = rand(64, 1000, seed=5) * 4
    target = torch.randint(0, 1000, (64,), device="cuda")
    x = logits.clone().requires_grad_()
    loss = path(x, target)
    loss.sum().backward()
    ref = logits.double().requires_grad_()
    want = F.cross_entropy(ref, target, reduction="none")
    want.sum().backward()
    err = lambda a, b: (torch.linalg.vector_norm(a.double() - b) /
                        torch.linalg.vector_norm(b)).item()
    return max(err(loss, want.detach()), err(x.grad, ref.grad))


def measure(path, tokens, vocab):
    sets = []
    for i in range(2):
        logits = (rand(tokens, vocab, seed=10 + i) * 4).requires_grad_()
        target = torch.randint(0, vocab, (tokens,), device="cuda")
        sets.append((logits, target, torch.ones(tokens, device="cuda")))

    def fwd(s):
        return path(s[0], s[1])

    def fwd_bwd(s):
        path(s[0], s[1]).backward(s[2])
        s[0].grad = None

    f = timed(fwd, sets, warmup=3, reps=10)
    fb = timed(fwd_bwd, sets, warmup=3, reps=10)
    return f, fb - f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    paths = {"unfused": make_path(False), "fused": make_path(True)}
    result = dict(device=props.name, torch=torch.__version__, cuda=torch.version.cuda,
                  smi_idle=smi(), checks={}, rows=[])
    for name, path in paths.items():
        try:
            result["checks"][name] = check(path)
        except Exception as e:  # a path that fails its check is not timed
            result["checks"][name] = "failed: %r" % e
    print("device", props.name, "torch", torch.__version__, "| checks", result["checks"],
          flush=True)
    good = [n for n, e in result["checks"].items()
            if isinstance(e, float) and math.isfinite(e) and e < 1e-2]
    for tokens, vocab in SHAPES:
        for name in good:
            try:
                f, b = measure(paths[name], tokens, vocab)
                row = dict(path=name, tokens=tokens, vocab=vocab, forward_s=f, backward_s=b)
                n = tokens * vocab
                print("%-8s tokens %5d vocab %6d: forward %7.3f ms, backward %7.3f ms "
                      "(%.2f and %.2f ps an element)" % (
                          name, tokens, vocab, 1e3 * f, 1e3 * b, 1e12 * f / n, 1e12 * b / n),
                      flush=True)
            except Exception as e:  # one shape's failure must not lose the others
                row = dict(path=name, tokens=tokens, vocab=vocab, failed=repr(e))
                print(name, tokens, vocab, "failed:", repr(e), flush=True)
            result["rows"].append(row)
            torch.cuda.empty_cache()
        write(args.out, result)  # a temporary file, then renamed: a kill leaves the last one


if __name__ == "__main__":
    main()
