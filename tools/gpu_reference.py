#!/usr/bin/env python3
"""PyTorch reference for lmzoo's GPU benchmark: a GPT-2 (124M-shaped) model trained on lmzoo's token shards.

A re-implementation (not nanoGPT's code) of nanoGPT's GPT-2 small training step, its model shared with
tools/bench_reference.py (tools/reference_gpt.py):
12 layers, 12 heads, d_model 768, context 1024, batch 16, vocabulary from the data's manifest;
pre-LN blocks with biases, learned positions, GELU (tanh approximation), tied LM head, no dropout,
GPT-2 init (N(0, 0.02), residual projections 0.02 / sqrt(2 * n_layer)); bf16 autocast, TF32 matmuls,
attention through F.scaled_dot_product_attention(is_causal=True), AdamW(fused=True) at lr 6e-4 with
betas (0.9, 0.95), weight decay 0.1 on >= 2-D tensors only, clip_grad_norm_ 1.0; optional torch.compile.
Batches are random windows of the train split (a seeded torch.Generator), pinned and copied with
non_blocking=True on CUDA. Each iteration is timed between two torch.cuda.synchronize() calls.
Leaves out: evaluation, the learning-rate schedule (timing only), checkpoints, sampling, distributed
training, gradient accumulation.

With an older torch (Debian 12's python3-torch 1.13) the attention falls back to a masked softmax and
the optimizer to plain AdamW, so a tiny CPU smoke test runs anywhere:
    /usr/bin/python3 tools/gpu_reference.py --data DIR --device cpu --n-layer 2 --n-head 2 --d-model 64 \\
        --seq-len 32 --batch-size 2 --iters 5 --skip 1 --precision fp32 --json
On a GPU (pip torch 2.x), the comparison run of tools/gpu_check.sh:
    python3 tools/gpu_reference.py --data DIR --batch-size 16 --iters 30 --skip 10 --json [--compile]
The last stdout line of --json is one JSON object whose keys follow `lmzoo bench --json`.
"""
import argparse
import bisect
import contextlib
import inspect
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_gpt import GPT, HAS_SDPA, loss_fn  # noqa: E402  (tools/reference_gpt.py, shared with bench_reference.py)


def fail(message):
    sys.exit(f"gpu_reference: {message}")


# ---------------------------------------------------------------------------- data
class TokenShards:
    """One split of an lmzoo prepared data directory: its .bin shards (little-endian uint16 or uint32
    tokens, listed in manifest.json) memory-mapped and read as one contiguous token stream."""

    DTYPES = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}

    def __init__(self, data_dir, split):
        path = os.path.join(data_dir, "manifest.json")
        if not os.path.isfile(path):
            fail(f"no manifest.json in {data_dir} (create it with: lmzoo prepare)")
        try:
            with open(path, encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"invalid manifest {path}: {e}")
        if manifest.get("format_version") != 1:
            fail(f"unsupported manifest {path} (expected format_version 1)")
        if manifest.get("kind") == "pairs":
            fail(f"{data_dir} holds prepared pairs; this reference trains on token shards (lmzoo prepare --input)")
        dtype = self.DTYPES.get(manifest.get("dtype"))
        if dtype is None:
            fail(f"unknown dtype {manifest.get('dtype')!r} in {path}")
        splits = manifest.get("splits", {})
        if split not in splits:
            fail(f"split '{split}' not found in {path} (available: {', '.join(splits)})")
        self.vocab_size = int(manifest["vocab_size"])
        self.shards = []
        self.offsets = [0]  # first token of each shard in the stream, then the total
        for entry in splits[split]["shards"]:
            file = os.path.join(data_dir, entry["file"])
            tokens = int(entry["tokens"])
            if not os.path.isfile(file):
                fail(f"missing shard {file}")
            size = os.path.getsize(file)
            if size != tokens * dtype.itemsize:
                fail(f"shard {file} has {size} bytes, manifest says {tokens} tokens ({tokens * dtype.itemsize} bytes)")
            if tokens > 0:
                self.shards.append(np.memmap(file, dtype=dtype, mode="r", shape=(tokens,)))
                self.offsets.append(self.offsets[-1] + tokens)
        if self.offsets[-1] != int(splits[split]["tokens"]):
            fail(f"split '{split}' in {path} lists shards of {self.offsets[-1]} tokens but says {splits[split]['tokens']}")

    def __len__(self):
        return self.offsets[-1]

    def window(self, start, count):
        """Tokens [start, start + count) as int64, read across shard boundaries."""
        out = np.empty(count, dtype=np.int64)
        done = 0
        shard = bisect.bisect_right(self.offsets, start) - 1
        while done < count:
            begin = start + done - self.offsets[shard]
            take = min(count - done, len(self.shards[shard]) - begin)
            out[done : done + take] = self.shards[shard][begin : begin + take]
            done += take
            shard += 1
        return out


class Batches:
    """Random windows of seq_len + 1 tokens: inputs x (B, T) and next-token targets y (B, T)."""

    def __init__(self, stream, batch_size, seq_len, seed, device):
        if len(stream) < seq_len + 2:
            fail(f"the train split has {len(stream)} tokens; --seq-len {seq_len} needs at least {seq_len + 2}")
        self.stream = stream
        self.batch_size = batch_size
        self.seq_len = seq_len
        self.gen = torch.Generator().manual_seed(seed)
        self.device = device

    def next(self):
        T = self.seq_len
        starts = torch.randint(len(self.stream) - T, (self.batch_size,), generator=self.gen)
        rows = np.stack([self.stream.window(s, T + 1) for s in starts.tolist()])  # (B, T + 1)
        xy = torch.from_numpy(rows)
        if self.device.type == "cuda":
            xy = xy.pin_memory().to(self.device, non_blocking=True)
        else:
            xy = xy.to(self.device)
        return xy[:, :-1], xy[:, 1:]  # (B, T), (B, T)


# ------------------------------------------------------------------------ training
def make_optimizer(model, device, lr, weight_decay, betas):
    """AdamW with weight decay on >= 2-D tensors only; fused where this torch and device have it.
    Returns the optimizer and its name for the report."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    if "fused" in inspect.signature(torch.optim.AdamW).parameters and device.type == "cuda":
        try:
            return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=True), "AdamW(fused)"
        except (RuntimeError, TypeError, ValueError):
            pass  # this build has no fused kernel for the device
    return torch.optim.AdamW(groups, lr=lr, betas=betas), "AdamW"


def configure_math(device, tf32):
    if device.type != "cuda":
        return
    if hasattr(torch.backends.cuda.matmul, "fp32_precision"):  # torch >= 2.9 (the allow_tf32 flags warn there)
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_peak_flops(device, dtype):
    """FLOP/s of a square GEMM on the device, as lmzoo bench measures its MFU denominator: 8192^3 on
    CUDA (5 batches of 5 after 2 warm-up batches), 512^3 on the CPU (10 of 1); the median batch."""
    cuda = device.type == "cuda"
    n, per_batch, batches = (8192, 5, 5) if cuda else (512, 1, 10)
    with torch.no_grad():
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        rates = []
        for i in range(batches + 2):
            sync(device)
            t0 = time.perf_counter()
            for _ in range(per_batch):
                torch.matmul(a, b)
            sync(device)
            if i >= 2:
                rates.append(2.0 * n**3 * per_batch / (time.perf_counter() - t0))
    return statistics.median(rates)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="lmzoo prepared data directory (manifest.json + shards)")
    p.add_argument("--iters", type=int, default=30, help="iterations in all, --skip included (as lmzoo bench --steps)")
    p.add_argument("--skip", type=int, default=10, help="first iterations left out of the timing (warm-up, compilation)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=1024, help="context length")
    p.add_argument("--n-layer", type=int, default=12)
    p.add_argument("--n-head", type=int, default=12)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (a smoke test)")
    p.add_argument("--precision", choices=("bf16", "fp32"), default="bf16", help="bf16: autocast")
    p.add_argument("--no-tf32", action="store_true", help="CUDA: full-fp32 matmuls instead of TF32")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (torch >= 2.0)")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--grad-clip", type=float, default=1.0, help="0: off")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--log-interval", type=int, default=10, help="iterations between progress lines (0: none)")
    p.add_argument("--json", action="store_true", help="progress on stderr; one final JSON line on stdout")
    args = p.parse_args()
    if args.iters <= args.skip:
        p.error("--iters must be larger than --skip")
    return args


def main():
    args = parse_args()
    log = sys.stderr if args.json else sys.stdout
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        fail("--device cuda, but this torch sees no GPU (torch.cuda.is_available() is False); try --device cpu")
    if args.compile and not hasattr(torch, "compile"):
        fail(f"--compile needs torch >= 2.0 (this is {torch.__version__})")
    torch.manual_seed(args.seed)
    configure_math(device, tf32=not args.no_tf32)
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32

    stream = TokenShards(args.data, "train")
    batches = Batches(stream, args.batch_size, args.seq_len, args.seed, device)
    if args.d_model % args.n_head != 0:
        fail(f"--d-model {args.d_model} is not a multiple of --n-head {args.n_head}")
    # GPT-2: biases, tanh GELU, attention through F.scaled_dot_product_attention where this torch has it.
    model = GPT(
        stream.vocab_size, args.seq_len, args.n_layer, args.n_head, args.d_model, bias=True, gelu="tanh", sdpa=True
    ).to(device)
    opt, opt_name = make_optimizer(model, device, args.lr, args.weight_decay, (args.beta1, args.beta2))
    step_model = torch.compile(model) if args.compile else model
    autocast = (
        (lambda: torch.autocast(device_type=device.type, dtype=torch.bfloat16))
        if args.precision == "bf16"
        else contextlib.nullcontext
    )
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    print(
        f"torch {torch.__version__} (CUDA {torch.version.cuda}), {gpu or 'cpu'}, {args.precision}, "
        f"attention {'sdpa' if HAS_SDPA else 'manual'}, {opt_name}, compiled {args.compile}, "
        f"vocab {stream.vocab_size}, params {model.num_params() / 1e6:.2f}M",
        file=log,
        flush=True,
    )

    # The GEMM peak is measured before and after the run and the higher kept (lmzoo bench does the same);
    # the memory peak covers the training iterations only.
    peak_before = measure_peak_flops(device, dtype)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)

    step_ms = []
    loss = None
    for it in range(args.iters):
        sync(device)
        t0 = time.perf_counter()
        x, y = batches.next()
        with autocast():
            loss = loss_fn(step_model(x), y)
        loss.backward()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(device)
        step_ms.append((time.perf_counter() - t0) * 1000.0)
        if args.log_interval > 0 and (it % args.log_interval == 0 or it == args.iters - 1):
            print(f"iter {it}: loss {loss.item():.4f}, {step_ms[-1]:.2f} ms", file=log, flush=True)

    peak_memory = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    peak = max(peak_before, measure_peak_flops(device, dtype))
    timed = step_ms[args.skip :]
    median_ms = statistics.median(timed)
    tokens_per_s = args.batch_size * args.seq_len / (median_ms / 1000.0)
    flops_per_token = 6.0 * model.num_params() + 12.0 * args.n_layer * args.d_model * args.seq_len
    print(
        f"median {median_ms:.2f} ms/iter over {len(timed)} iters, {tokens_per_s:.0f} tokens/s, "
        f"MFU {100 * flops_per_token * tokens_per_s / peak:.1f}% of a {peak / 1e9:.0f} GFLOP/s {args.precision} GEMM"
        + (f", peak memory {peak_memory / 2**30:.2f} GiB" if device.type == "cuda" else ""),
        file=log,
        flush=True,
    )
    if args.json:
        result = {
            "reference": "gpu_reference.py",
            "device": str(device),
            "gpu": gpu,
            "precision": args.precision,
            "compiled": bool(args.compile),
            "attention": "sdpa" if HAS_SDPA else "manual",
            "optimizer": opt_name,
            "ms_per_iter_median": round(median_ms, 3),
            "ms_per_iter_min": round(min(timed), 3),
            "tokens_per_s": round(tokens_per_s, 1),
            "mfu": flops_per_token * tokens_per_s / peak,
            "peak_gemm_gflops": peak / 1e9,
            "peak_memory_bytes": int(peak_memory),
            "model_gflops_per_s": flops_per_token * tokens_per_s / 1e9,
            "iters_timed": len(timed),
            "first_iter_ms": round(step_ms[0], 1),
            "final_train_loss": round(loss.item(), 4),
            "params": model.num_params(),
            "vocab_size": stream.vocab_size,
            "shape": {"n_layer": args.n_layer, "n_head": args.n_head, "d_model": args.d_model,
                      "seq_len": args.seq_len, "batch_size": args.batch_size},
            "torch": torch.__version__,
        }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
