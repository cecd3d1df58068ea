#!/usr/bin/python3
# Golden logits for tests/test_t5.cpp: an independent float64 T5 written from HF modeling_t5 (T5Attention with
# _relative_position_bucket, T5LayerNorm, T5DenseActDense / T5DenseGatedActDense, T5Stack, tied-head rescale)
# on deterministic weights named as lmzoo names them. Run: /usr/bin/python3 tests/t5_reference.py
import math, sys, torch
torch.set_default_dtype(torch.float64)

from hf_reference import t5_bucket as bucket  # HF's _relative_position_bucket, written once


def weight(name, shape):
    n = 1
    for s in shape: n *= s
    s = sum(map(ord, name)) % 97
    v = torch.sin(1.7 * torch.arange(n, dtype=torch.float64) + s).reshape(shape)
    if len(shape) == 1: return 1.0 + 0.1 * v
    if name in ("shared.weight", "lm_head.weight"): return v
    if name.endswith("rel_bias.weight"): return 0.5 * v
    return 0.5 / math.sqrt(shape[1]) * v

def run(gated):
    V, d, nh, hs, ff, L, Ld = 99, 32, (3 if gated else 4), 8, 64, 2, (3 if gated else 2)
    A = nh * hs
    nb, md, eps = 8, 20, 1e-6
    W = lambda name, shape: weight(name, shape)
    def norm(x, name):
        var = x.pow(2).mean(-1, keepdim=True)
        return W(name, [d]) * (x * torch.rsqrt(var + eps))
    def heads(x):  # (B, T, A) -> (B, nh, T, hs)
        return x.view(x.size(0), -1, nh, hs).transpose(1, 2)
    def attention(q, k, v, bias, mask):
        scores = torch.matmul(q, k.transpose(3, 2)) + bias + mask
        w = torch.softmax(scores, dim=-1)
        return torch.matmul(w, v).transpose(1, 2).reshape(q.size(0), -1, A)
    def act(x): return torch.nn.functional.gelu(x, approximate="tanh") if gated else torch.relu(x)
    def ffn(x, p):
        if gated:
            h = act(x @ W(p + "mlp.c_fc.weight", [ff, d]).t()) * (x @ W(p + "mlp.c_fc_lin.weight", [ff, d]).t())
        else:
            h = act(x @ W(p + "mlp.c_fc.weight", [ff, d]).t())
        return h @ W(p + "mlp.c_proj.weight", [d, ff]).t()
    def compute_bias(stack, T, S, bidirectional):
        ctx = torch.arange(T)[:, None]; mem = torch.arange(S)[None, :]
        b = bucket(mem - ctx, bidirectional, nb, md)
        table = W(stack + ".rel_bias.weight", [nb, nh])
        return table[b].permute(2, 0, 1).unsqueeze(0)
    ids = torch.tensor([[11, 25, 37, 42, 58, 63, 71, 88, 90, 14], [12, 13, 99 - 1, 47, 5, 6, 0, 0, 0, 0]])
    mask = torch.tensor([[1] * 10, [1] * 6 + [0] * 4])
    dec = torch.tensor([[0, 31, 32, 33, 34, 35], [0, 17, 18, 19, 20, 21]])
    shared = W("shared.weight", [V, d])
    ext = (1.0 - mask[:, None, None, :].double()) * torch.finfo(torch.float64).min
    # encoder
    x = shared[ids]
    bias = compute_bias("encoder", 10, 10, True)
    for i in range(L):
        p = "encoder.h.%d." % i
        h = norm(x, p + "ln_1.weight")
        qkv = W(p + "attn.c_attn.weight", [3 * A, d])
        q, k, v = (heads(h @ qkv[j * A:(j + 1) * A].t()) for j in range(3))
        x = x + attention(q, k, v, bias, ext) @ W(p + "attn.c_proj.weight", [d, A]).t()
        x = x + ffn(norm(x, p + "ln_2.weight"), p)
    enc = norm(x, "encoder.ln_f.weight")
    # decoder
    T = dec.size(1)
    x = shared[dec]
    bias = compute_bias("decoder", T, T, False)
    causal = torch.triu(torch.full((T, T), torch.finfo(torch.float64).min), 1)[None, None]
    for i in range(Ld):
        p = "decoder.h.%d." % i
        h = norm(x, p + "ln_1.weight")
        qkv = W(p + "attn.c_attn.weight", [3 * A, d])
        q, k, v = (heads(h @ qkv[j * A:(j + 1) * A].t()) for j in range(3))
        x = x + attention(q, k, v, bias, causal) @ W(p + "attn.c_proj.weight", [d, A]).t()
        h = norm(x, p + "ln_2.weight")
        q = heads(h @ W(p + "cross_attn.c_q.weight", [A, d]).t())
        kv = W(p + "cross_attn.c_kv.weight", [2 * A, d])
        k, v = heads(enc @ kv[:A].t()), heads(enc @ kv[A:].t())
        x = x + attention(q, k, v, 0.0, ext) @ W(p + "cross_attn.c_proj.weight", [d, A]).t()
        x = x + ffn(norm(x, p + "ln_3.weight"), p)
    out = norm(x, "decoder.ln_f.weight")
    if gated:
        logits = out @ W("lm_head.weight", [V, d]).t()
    else:
        logits = (out * d ** -0.5) @ shared.t()
    return logits

for gated in (False, True):
    lg = run(gated)
    print("gated", gated, "sum", repr(lg.sum().item()), "abs", repr(lg.abs().sum().item()))
    print(" [0,2,:4]", [round(v, 6) for v in lg[0, 2, :4].tolist()], " [1,5,90:94]", [round(v, 6) for v in lg[1, 5, 90:94].tolist()])
