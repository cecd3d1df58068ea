# The GPT model shared by tools/bench_reference.py and tools/gpu_reference.py, parameterised by what differs.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# Shapes: B batch, T time, C d_model, nh heads, hs = C / nh head size, V vocab.
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")  # torch >= 2.0


class BiaslessLayerNorm(nn.Module):
    """LayerNorm with a gain and no bias (torch 1.13's nn.LayerNorm cannot drop the bias)."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


def layer_norm(dim, bias):
    return nn.LayerNorm(dim) if bias else BiaslessLayerNorm(dim)


class CausalSelfAttention(nn.Module):
    """sdpa: F.scaled_dot_product_attention(is_causal=True) where this torch has it; otherwise (and
    always with sdpa=False) an explicit causal mask and softmax."""

    def __init__(self, d_model, n_head, block_size, bias, sdpa):
        super().__init__()
        self.n_head = n_head
        self.sdpa = sdpa and HAS_SDPA
        self.c_attn = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.c_proj = nn.Linear(d_model, d_model, bias=bias)
        if not self.sdpa:
            mask = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
            self.register_buffer("causal", mask.view(1, 1, block_size, block_size), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # (B, nh, T, T)
            scores = scores.masked_fill(~self.causal[:, :, :T, :T], float("-inf"))
            y = F.softmax(scores, dim=-1) @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d_model, bias, gelu):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model, bias=bias)
        self.gelu = nn.GELU(approximate=gelu)  # "none": exact erf form; "tanh": GPT-2's approximation
        self.c_proj = nn.Linear(4 * d_model, d_model, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    """Pre-LN residual block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d_model, n_head, block_size, bias, gelu, sdpa):
        super().__init__()
        self.ln_1 = layer_norm(d_model, bias)
        self.attn = CausalSelfAttention(d_model, n_head, block_size, bias, sdpa)
        self.ln_2 = layer_norm(d_model, bias)
        self.mlp = MLP(d_model, bias, gelu)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """GPT-2 shaped: learned positions, pre-LN blocks, no dropout, tied LM head (never a bias).
    bias: biases in the linear layers and LayerNorms; gelu: nn.GELU's approximate ("none" or "tanh");
    sdpa: attention through F.scaled_dot_product_attention where available (see CausalSelfAttention)."""

    def __init__(self, vocab_size, block_size, n_layer, n_head, d_model, *, bias, gelu, sdpa):
        super().__init__()
        if d_model % n_head != 0:
            raise ValueError(f"d_model {d_model} is not a multiple of n_head {n_head}")
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(block_size, d_model)
        self.h = nn.ModuleList(Block(d_model, n_head, block_size, bias, gelu, sdpa) for _ in range(n_layer))
        self.ln_f = layer_norm(d_model, bias)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied input / output embedding

        # GPT-2 init: N(0, 0.02) weights, zero biases (LayerNorms keep their ones / zeros).
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        # Residual-stream output projections get a depth-scaled std.
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def num_params(self):
        # Tied weights are counted once; position embeddings are excluded (as in MFU's N).
        return sum(p.numel() for p in self.parameters()) - self.wpe.weight.numel()

    def forward(self, idx):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)  # (T)
        x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))  # (B, T, V)


def loss_fn(logits, targets):
    """Mean cross-entropy over all positions; reshape, as targets may be a non-contiguous slice."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
