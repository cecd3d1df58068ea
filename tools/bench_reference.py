#!/usr/bin/python3
"""PyTorch reference for lmzoo's CPU benchmark: the nanoGPT "baby" character-level GPT.

A re-implementation (not nanoGPT's code) of the small CPU configuration, its model shared with
tools/gpu_reference.py (tools/reference_gpt.py):
4 layers, 4 heads, d_model 128, context 64, batch 12, no biases, no dropout, pre-LN
GPT-2 blocks with learned positions, exact (erf) GELU, tied LM head; AdamW lr 1e-3 with
100 linear warmup steps then cosine decay to 1e-4 at step 2000, betas (0.9, 0.99),
weight decay 0.1 on >=2-D tensors only, gradient clipping at 1.0.
Leaves out: checkpoints, sampling, distributed training, mixed precision.

Run with Debian's interpreter (it has python3-torch 1.13):
    /usr/bin/python3 tools/bench_reference.py --text kjv.txt --iters 30 --time-only --json
Timing figures depend on OPENBLAS_CORETYPE (reported in the JSON line).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_gpt import GPT, loss_fn  # noqa: E402  (tools/reference_gpt.py, shared with gpu_reference.py)


# ---------------------------------------------------------------------------- data
class CharData:
    """Character vocabulary (sorted set of the text's characters), 90/10 contiguous split."""

    def __init__(self, path, block_size, batch_size, seed):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if len(text) < 10 * (block_size + 1):
            sys.exit(f"bench_reference: {path} is too short ({len(text)} chars)")
        self.chars = sorted(set(text))
        index = {c: i for i, c in enumerate(self.chars)}
        ids = torch.tensor([index[c] for c in text], dtype=torch.long)
        cut = int(0.9 * len(ids))
        self.splits = {"train": ids[:cut], "val": ids[cut:]}
        self.block_size = block_size
        self.batch_size = batch_size
        self.gen = torch.Generator().manual_seed(seed)
        # Evaluation draws from its own stream so eval settings never change training batches.
        self.eval_gen = torch.Generator().manual_seed(seed + 1)

    @property
    def vocab_size(self):
        return len(self.chars)

    def batch(self, split, gen=None):
        """Random windows: x (B, T) and its one-step-shifted targets y (B, T)."""
        data = self.splits[split]
        T = self.block_size
        starts = torch.randint(len(data) - T - 1, (self.batch_size,), generator=gen or self.gen)
        x = torch.stack([data[s : s + T] for s in starts.tolist()])
        y = torch.stack([data[s + 1 : s + T + 1] for s in starts.tolist()])
        return x, y


# ------------------------------------------------------------------------ training
def make_optimizer(model, lr, weight_decay, betas):
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def lr_at(step, args):
    """Linear warmup to --lr, then cosine decay to --min-lr at --lr-decay-iters, then flat."""
    if step < args.warmup_iters:
        return args.lr * (step + 1) / args.warmup_iters
    if step >= args.lr_decay_iters:
        return args.min_lr
    progress = (step - args.warmup_iters) / (args.lr_decay_iters - args.warmup_iters)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (args.lr - args.min_lr)


@torch.no_grad()
def estimate_loss(model, data, eval_iters, device):
    model.eval()
    out = {}
    for split in ("train", "val"):
        total = 0.0
        for _ in range(eval_iters):
            x, y = data.batch(split, data.eval_gen)
            total += loss_fn(model(x.to(device)), y.to(device)).item()
        out[split] = total / eval_iters
    model.train()
    return out


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text", required=True, help="raw UTF-8 text file")
    p.add_argument("--iters", type=int, default=2000, help="optimizer steps")
    p.add_argument("--eval-interval", type=int, default=250, help="eval every N steps (0: final only)")
    p.add_argument("--eval-iters", type=int, default=200, help="batches per split per eval")
    p.add_argument("--time-only", action="store_true", help="skip evaluation; time the steps")
    p.add_argument("--warmup-timing", type=int, default=10, help="steps left out of the timing median")
    p.add_argument("--json", action="store_true", help="print one final JSON line on stdout")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--device", default="cpu")
    p.add_argument("--log-interval", type=int, default=100)
    # Model (defaults: nanoGPT's CPU "baby" configuration).
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=12)
    # Optimisation.
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup-iters", type=int, default=100)
    p.add_argument("--lr-decay-iters", type=int, default=2000)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0)
    return p.parse_args()


def set_openblas_threads(n):
    """torch.set_num_threads does not reach OpenBLAS's own thread pool: pin it too, as lmzoo does.
    Returns OpenBLAS's thread count afterwards (None when torch does not use OpenBLAS)."""
    import ctypes

    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None
    lib.openblas_set_num_threads(n)
    return lib.openblas_get_num_threads()


def main():
    args = parse_args()
    log = sys.stderr if args.json else sys.stdout
    torch.set_num_threads(args.threads)
    blas_threads = set_openblas_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    data = CharData(args.text, args.block_size, args.batch_size, args.seed)
    # nanoGPT's baby GPT: no biases, exact (erf) GELU, attention as an explicit masked softmax.
    model = GPT(
        data.vocab_size, args.block_size, args.n_layer, args.n_head, args.d_model, bias=False, gelu="none", sdpa=False
    ).to(device)
    opt = make_optimizer(model, args.lr, args.weight_decay, (args.beta1, args.beta2))
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, OpenBLAS threads {blas_threads}, "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
        f"vocab {data.vocab_size}, params {model.num_params() / 1e6:.3f}M",
        file=log,
        flush=True,
    )

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    step_ms = []
    losses = None
    last_loss = float("nan")
    for step in range(args.iters + 1):
        # Evaluate before step 0, every --eval-interval steps and after the last step.
        if not args.time_only and (
            step == args.iters or (args.eval_interval > 0 and step % args.eval_interval == 0)
        ):
            losses = estimate_loss(model, data, args.eval_iters, device)
            print(f"step {step}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}", file=log, flush=True)
        if step == args.iters:
            break

        sync()
        t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        x, y = data.batch("train")
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        last_loss = loss.item()  # also synchronises
        sync()
        step_ms.append((time.perf_counter() - t0) * 1000.0)
        if args.log_interval > 0 and step % args.log_interval == 0:
            print(f"iter {step}: loss {last_loss:.4f}, {step_ms[-1]:.2f} ms", file=log, flush=True)

    timed = step_ms[args.warmup_timing :] or step_ms
    median_ms = statistics.median(timed)
    tokens_per_s = args.batch_size * args.block_size / (median_ms / 1000.0)
    print(
        f"median {median_ms:.2f} ms/iter over {len(timed)} iters, {tokens_per_s:.0f} tokens/s",
        file=log,
        flush=True,
    )
    if args.json:
        result = {
            "ms_per_iter_median": round(median_ms, 3),
            "tokens_per_s": round(tokens_per_s, 1),
            "final_val_loss": None if losses is None else round(losses["val"], 4),
            # With evaluation: the estimated train loss; with --time-only: the last batch's loss.
            "final_train_loss": round(losses["train"] if losses is not None else last_loss, 4),
            "iters": args.iters,
            "threads": torch.get_num_threads(),
            "openblas_threads": blas_threads,
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
            "params": model.num_params(),
            "torch": torch.__version__,
        }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
