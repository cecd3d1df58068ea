#!/usr/bin/python3
# Independent Hugging Face reference (stdlib + torch only): tiny HF checkpoints, float64 forward passes, comparisons.
"""Verifies `lmzoo import` / `lmzoo export --format hf` without transformers or the safetensors package.

  make ARCH OUT_DIR [--seed N] [--vocab V] [--context N]
                                      a tiny random HF model directory (config.json + safetensors, as
                                      transformers' save_pretrained writes them); V rows (default 97)
  logits ARCH MODEL_DIR IDS_JSON      float64 reference outputs as JSON, from the published formulas
  compare ARCH MODEL_DIR LMZOO_TORCHSCRIPT IDS_JSON [--tol 1e-5]
                                      reference vs an lmzoo TorchScript export; prints `ARCH max_abs_diff=X`
  check-roundtrip HF_DIR EXPORTED_DIR [--allow-extra]
                                      every tensor of HF_DIR bit-for-bit in EXPORTED_DIR (names normalised)
  greedy ARCH MODEL_DIR IDS_JSON [--new N]
                                      greedy continuation (N tokens, default 20) of each row of input_ids, as
                                      JSON (decoder-only ARCHs)
  selftest                            checks of this file itself

ARCH: gpt2 gpt2-legacy bert-mlm bert-legacy bert-model bert-cls t5-v1_0 t5-v1_1 llama llama-sharded qwen2 mistral
smollm2 (qwen2, mistral and smollm2, a tied Llama, use Llama's tensor names: the "llama" family here)
phi3 (Phi3ForCausalLM: q/k/v fused in qkv_proj, gate/up in gate_up_proj, a window of 5)
gpt-neox (parallel residual, rotary_pct 0.25, as 4.48 writes it) gpt-neox-seq (sequential residual, rotary_pct 1,
tied, a Pythia-hub-style config and the old attention.bias / masked_bias / rotary_emb.inv_freq buffers).
IDS_JSON: a file or a literal JSON object {"input_ids": [[...]], "decoder_input_ids": [[...]] (T5),
"attention_mask": [[...]] (BERT/T5, optional), "token_type_ids": [[...]] (BERT, optional)}.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import argparse
import json
import math
import os
import struct
import sys
import tempfile

import torch

ARCHS = ["gpt2", "gpt2-legacy", "bert-mlm", "bert-legacy", "bert-model", "bert-cls",
         "t5-v1_0", "t5-v1_1", "llama", "llama-sharded", "qwen2", "mistral", "smollm2"]
TRANSFORMERS_VERSION = "4.46.3"
ARCHS += ["gpt-neox", "gpt-neox-seq"]  # GPT-NeoX (Pythia): its block below
ARCHS += ["phi3"]  # Phi-3: Llama's formulas over fused qkv_proj / gate_up_proj, a sliding window

# ---------------------------------------------------------------------------------------------------------------
# safetensors: dtype -> (struct format of one element, bytes per element); BF16 is decoded by hand.
ST_FORMATS = {"F64": ("d", 8), "F32": ("f", 4), "F16": ("e", 2), "BF16": (None, 2), "I64": ("q", 8),
              "I32": ("i", 4), "I16": ("h", 2), "I8": ("b", 1), "U8": ("B", 1), "BOOL": ("?", 1)}


def numel(shape):
    n = 1
    for size in shape:
        n *= size
    return n


def tensor_bytes(t):
    """Little-endian float32 bytes of a tensor, in row-major order."""
    values = t.detach().to(torch.float32).contiguous().reshape(-1).tolist()
    return struct.pack("<%df" % len(values), *values)


def write_safetensors(path, tensors):
    """tensors: {name: float tensor}, stored F32. Data in name order (all one dtype), as safetensors sorts it."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        chunk = tensor_bytes(tensors[name])
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(chunk)]}
        chunks.append(chunk)
        offset += len(chunk)
    text = json.dumps(dict([("__metadata__", {"format": "pt"})] + sorted(header.items())), separators=(",", ":"))
    text = text.encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    return offset


def read_safetensors_raw(path):
    """{name: (dtype, shape, bytes)} of one file; checks the layout strictly."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError("%s: header length %d past the end of the file" % (path, n))
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    data = blob[8 + n:]
    out, end = {}, 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        dtype, shape = entry["dtype"], entry["shape"]
        begin, stop = entry["data_offsets"]
        if dtype not in ST_FORMATS:
            raise ValueError("%s: %s has unsupported dtype %s" % (path, name, dtype))
        if begin != end or stop - begin != numel(shape) * ST_FORMATS[dtype][1]:
            raise ValueError("%s: %s has bad data_offsets %s" % (path, name, entry["data_offsets"]))
        out[name] = (dtype, list(shape), data[begin:stop])
        end = stop
    if end != len(data):
        raise ValueError("%s: %d of %d data bytes covered" % (path, end, len(data)))
    return out


def decode_tensor(dtype, shape, chunk):
    """float64 tensor from raw safetensors bytes."""
    fmt, size = ST_FORMATS[dtype]
    n = len(chunk) // size
    if dtype == "BF16":
        halves = struct.unpack("<%dH" % n, chunk)
        values = [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]
    else:
        values = struct.unpack("<%d%s" % (n, fmt), chunk)
    return torch.tensor(values, dtype=torch.float64).reshape(shape)


def safetensors_files(model_dir):
    """(files, weight_map): model.safetensors and None, else the shards of model.safetensors.index.json and its map."""
    single = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.isfile(single):
        return [single], None
    if os.path.isfile(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        return [os.path.join(model_dir, name) for name in sorted(set(weight_map.values()))], weight_map
    raise FileNotFoundError("%s holds neither model.safetensors nor model.safetensors.index.json" % model_dir)


def read_dir_raw(model_dir):
    """{name: (dtype, shape, bytes)} over all safetensors files of a directory; checks the index when sharded."""
    files, weight_map = safetensors_files(model_dir)
    out, owner = {}, {}
    for path in files:
        for name, value in read_safetensors_raw(path).items():
            if name in out:
                raise ValueError("%s is in both %s and %s" % (name, owner[name], path))
            out[name], owner[name] = value, os.path.basename(path)
    if weight_map is not None and weight_map != owner:
        raise ValueError("%s: weight_map does not match the shards' contents" % model_dir)
    return out


def load_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


# ---------------------------------------------------------------------------------------------------------------
# Parameter lists, canonical HF names. Kinds: linear [out, in], conv1d [in, out], embed, norm, bias, relbias.
def gpt2_params(cfg):
    C, V, P, L = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"], cfg["n_layer"]
    F = cfg.get("n_inner") or 4 * C
    p = [("transformer.wte.weight", [V, C], "embed"), ("transformer.wpe.weight", [P, C], "embed")]
    for i in range(L):
        h = "transformer.h.%d." % i
        p += [(h + "ln_1.weight", [C], "norm"), (h + "ln_1.bias", [C], "bias"),
              (h + "attn.c_attn.weight", [C, 3 * C], "conv1d"), (h + "attn.c_attn.bias", [3 * C], "bias"),
              (h + "attn.c_proj.weight", [C, C], "conv1d"), (h + "attn.c_proj.bias", [C], "bias"),
              (h + "ln_2.weight", [C], "norm"), (h + "ln_2.bias", [C], "bias"),
              (h + "mlp.c_fc.weight", [C, F], "conv1d"), (h + "mlp.c_fc.bias", [F], "bias"),
              (h + "mlp.c_proj.weight", [F, C], "conv1d"), (h + "mlp.c_proj.bias", [C], "bias")]
    return p + [("transformer.ln_f.weight", [C], "norm"), ("transformer.ln_f.bias", [C], "bias")]


def linear(name, out_f, in_f, bias=True):
    p = [(name + ".weight", [out_f, in_f], "linear")]
    return p + ([(name + ".bias", [out_f], "bias")] if bias else [])


def layer_norm(name, size):
    return [(name + ".weight", [size], "norm"), (name + ".bias", [size], "bias")]


def bert_encoder_params(cfg, prefix):
    C, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    e = prefix + "embeddings."
    p = [(e + "word_embeddings.weight", [V, C], "embed"),
         (e + "position_embeddings.weight", [cfg["max_position_embeddings"], C], "embed"),
         (e + "token_type_embeddings.weight", [cfg["type_vocab_size"], C], "embed")] + layer_norm(e + "LayerNorm", C)
    for i in range(cfg["num_hidden_layers"]):
        h = prefix + "encoder.layer.%d." % i
        for proj in ("query", "key", "value"):
            p += linear(h + "attention.self." + proj, C, C)
        p += linear(h + "attention.output.dense", C, C) + layer_norm(h + "attention.output.LayerNorm", C)
        p += linear(h + "intermediate.dense", F, C) + linear(h + "output.dense", C, F)
        p += layer_norm(h + "output.LayerNorm", C)
    return p


def bert_params(cfg, arch):
    C = cfg["hidden_size"]
    if arch == "bert-model":
        return bert_encoder_params(cfg, "") + linear("pooler.dense", C, C)
    if arch == "bert-cls":
        return bert_encoder_params(cfg, "bert.") + linear("bert.pooler.dense", C, C) + \
            linear("classifier", len(cfg["id2label"]), C)
    return bert_encoder_params(cfg, "bert.") + [("cls.predictions.bias", [cfg["vocab_size"]], "bias")] + \
        linear("cls.predictions.transform.dense", C, C) + layer_norm("cls.predictions.transform.LayerNorm", C)


def t5_params(cfg):
    C, V, F = cfg["d_model"], cfg["vocab_size"], cfg["d_ff"]
    A, nh, nb = cfg["num_heads"] * cfg["d_kv"], cfg["num_heads"], cfg["relative_attention_num_buckets"]
    gated = cfg["feed_forward_proj"].startswith("gated-")

    def attention(name, with_bias):
        p = [(name + "." + x + ".weight", [A, C], "linear") for x in ("q", "k", "v")]
        p.append((name + ".o.weight", [C, A], "linear"))
        return p + ([(name + ".relative_attention_bias.weight", [nb, nh], "relbias")] if with_bias else [])

    def ffn(name):
        wi = [(name + ".wi_0.weight", [F, C], "linear"), (name + ".wi_1.weight", [F, C], "linear")] if gated \
            else [(name + ".wi.weight", [F, C], "linear")]
        return wi + [(name + ".wo.weight", [C, F], "linear")]

    p = [("shared.weight", [V, C], "embed")]
    for i in range(cfg["num_layers"]):
        b = "encoder.block.%d.layer." % i
        p += attention(b + "0.SelfAttention", i == 0) + [(b + "0.layer_norm.weight", [C], "norm")]
        p += ffn(b + "1.DenseReluDense") + [(b + "1.layer_norm.weight", [C], "norm")]
    p.append(("encoder.final_layer_norm.weight", [C], "norm"))
    for i in range(cfg["num_decoder_layers"]):
        b = "decoder.block.%d.layer." % i
        p += attention(b + "0.SelfAttention", i == 0) + [(b + "0.layer_norm.weight", [C], "norm")]
        p += attention(b + "1.EncDecAttention", False) + [(b + "1.layer_norm.weight", [C], "norm")]
        p += ffn(b + "2.DenseReluDense") + [(b + "2.layer_norm.weight", [C], "norm")]
    p.append(("decoder.final_layer_norm.weight", [C], "norm"))
    if not cfg.get("tie_word_embeddings", True):
        p.append(("lm_head.weight", [V, C], "linear"))
    return p


def llama_params(cfg):
    C, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    hd = cfg.get("head_dim") or C // cfg["num_attention_heads"]
    q_out, kv_out = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    p = [("model.embed_tokens.weight", [V, C], "embed")]
    for i in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % i
        if cfg["model_type"] == "qwen2":  # biases on q, k and v only
            p += [(h + "self_attn.q_proj.bias", [q_out], "bias"), (h + "self_attn.k_proj.bias", [kv_out], "bias"),
                  (h + "self_attn.v_proj.bias", [kv_out], "bias")]
        p += [(h + "self_attn.q_proj.weight", [q_out, C], "linear"), (h + "self_attn.k_proj.weight", [kv_out, C], "linear"),
              (h + "self_attn.v_proj.weight", [kv_out, C], "linear"), (h + "self_attn.o_proj.weight", [C, q_out], "linear"),
              (h + "mlp.gate_proj.weight", [F, C], "linear"), (h + "mlp.up_proj.weight", [F, C], "linear"),
              (h + "mlp.down_proj.weight", [C, F], "linear"),
              (h + "input_layernorm.weight", [C], "norm"), (h + "post_attention_layernorm.weight", [C], "norm")]
    p.append(("model.norm.weight", [C], "norm"))
    if not cfg.get("tie_word_embeddings", False):
        p.append(("lm_head.weight", [V, C], "linear"))
    return p


def phi3_params(cfg):
    """Phi3ForCausalLM (HF modeling_phi3): qkv_proj rows [q; k; v], gate_up_proj rows [gate; up], no biases."""
    C, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    hd = C // cfg["num_attention_heads"]
    q_out, kv_out = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    p = [("model.embed_tokens.weight", [V, C], "embed")]
    for i in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % i
        p += [(h + "self_attn.qkv_proj.weight", [q_out + 2 * kv_out, C], "linear"),
              (h + "self_attn.o_proj.weight", [C, q_out], "linear"),
              (h + "mlp.gate_up_proj.weight", [2 * F, C], "linear"), (h + "mlp.down_proj.weight", [C, F], "linear"),
              (h + "input_layernorm.weight", [C], "norm"), (h + "post_attention_layernorm.weight", [C], "norm")]
    p.append(("model.norm.weight", [C], "norm"))
    if not cfg.get("tie_word_embeddings", False):
        p.append(("lm_head.weight", [V, C], "linear"))
    return p


def phi3_unfused(cfg, W):
    """Phi-3's fused tensors as Llama's: qkv_proj split by rows into q/k/v_proj, gate_up_proj chunked in two."""
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    q_out, kv_out = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    out = dict(W)
    for i in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % i
        q, k, v = out.pop(h + "self_attn.qkv_proj.weight").split([q_out, kv_out, kv_out], dim=0)
        gate, up = out.pop(h + "mlp.gate_up_proj.weight").chunk(2, dim=0)
        out.update({h + "self_attn.q_proj.weight": q, h + "self_attn.k_proj.weight": k,
                    h + "self_attn.v_proj.weight": v, h + "mlp.gate_proj.weight": gate, h + "mlp.up_proj.weight": up})
    return out


# ---------------------------------------------------------------------------------------------------------------
# config.json as transformers 4.x save_pretrained writes it (to_diff_dict: class fields always, PretrainedConfig
# fields only where they differ from the defaults), keys sorted.
def gpt2_config(legacy):
    cfg = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
           "bos_token_id": 96, "embd_pdrop": 0.1, "eos_token_id": 96, "initializer_range": 0.02,
           "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_inner": None,
           "n_layer": 2, "n_positions": 32, "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
           "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True, "summary_activation": None,
           "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
           "summary_use_proj": True, "use_cache": True, "vocab_size": 97}
    if legacy:  # as the original hub gpt2 config.json: n_ctx, no torch_dtype, no tie_word_embeddings (default true)
        cfg["n_ctx"] = 32
    else:
        cfg.update({"tie_word_embeddings": True, "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION})
    return cfg


def bert_config(arch):
    cfg = {"architectures": [{"bert-model": "BertModel", "bert-cls": "BertForSequenceClassification"}.get(
               arch, "BertForMaskedLM")],
           "attention_probs_dropout_prob": 0.1, "classifier_dropout": None, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.1, "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
           "layer_norm_eps": 1e-12, "max_position_embeddings": 32, "model_type": "bert", "num_attention_heads": 4,
           "num_hidden_layers": 2, "pad_token_id": 0, "position_embedding_type": "absolute",
           "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION, "type_vocab_size": 2,
           "use_cache": True, "vocab_size": 97}
    if arch == "bert-cls":
        cfg["id2label"] = {str(i): "LABEL_%d" % i for i in range(3)}
        cfg["label2id"] = {"LABEL_%d" % i: i for i in range(3)}
    if arch == "bert-legacy":  # an old config: fewer fields (position_embedding_type defaults to "absolute")
        for key in ("classifier_dropout", "position_embedding_type", "torch_dtype", "transformers_version", "use_cache"):
            del cfg[key]
    return cfg


def t5_config(v1_1):
    cfg = {"architectures": ["T5ForConditionalGeneration"], "classifier_dropout": 0.0, "d_ff": 64,
           "d_kv": 16 if v1_1 else 8, "d_model": 32, "decoder_start_token_id": 0,
           "dense_act_fn": "gelu_new" if v1_1 else "relu", "dropout_rate": 0.1, "eos_token_id": 1,
           "feed_forward_proj": "gated-gelu" if v1_1 else "relu", "initializer_factor": 1.0,
           "is_encoder_decoder": True, "is_gated_act": v1_1, "layer_norm_epsilon": 1e-06, "model_type": "t5",
           "num_decoder_layers": 2, "num_heads": 4, "num_layers": 2, "pad_token_id": 0,
           "relative_attention_max_distance": 128, "relative_attention_num_buckets": 32,
           "tie_word_embeddings": not v1_1, "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION,
           "use_cache": True, "vocab_size": 97}
    return cfg


def llama_config(arch="llama"):
    cfg = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": 1, "eos_token_id": 2, "head_dim": 8, "hidden_act": "silu", "hidden_size": 32,
           "initializer_range": 0.02, "intermediate_size": 88, "max_position_embeddings": 32, "mlp_bias": False,
           "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
           "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 500000.0,
           "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION,
           "use_cache": True, "vocab_size": 97}
    if arch in ("qwen2", "mistral"):
        for key in ("attention_bias", "mlp_bias", "pretraining_tp", "head_dim"):
            del cfg[key]
    if arch == "qwen2":  # as Qwen2Config writes it: sliding_window null unless use_sliding_window; tied like 0.5B
        cfg.update({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "max_window_layers": 2,
                    "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": True,
                    "rope_theta": 1000000.0})
    if arch == "smollm2":  # SmolLM2: a Llama with tied embeddings, bos = eos = <|endoftext|> 0
        cfg.update({"tie_word_embeddings": True, "rope_theta": 100000.0, "bos_token_id": 0, "eos_token_id": 0})
    if arch == "mistral":  # a window of 5 binds within the 8-token test inputs
        cfg.update({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 5,
                    "head_dim": 8})
    if arch == "phi3":  # as Phi3Config (4.48) writes it; a window of 5 binds within the 8-token test inputs
        for key in ("attention_bias", "mlp_bias", "pretraining_tp", "head_dim"):
            del cfg[key]
        cfg.update({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "embd_pdrop": 0.0,
                    "resid_pdrop": 0.0, "original_max_position_embeddings": 32, "rms_norm_eps": 1e-05,
                    "rope_theta": 10000.0, "sliding_window": 5, "pad_token_id": 2})
    return cfg


def family(arch):
    if arch in ("qwen2", "mistral", "smollm2", "phi3"):
        return "llama"  # Llama's tensor names and formulas, with q/k/v biases or a sliding window
    if arch.startswith("gpt-neox"):
        return "gpt_neox"
    for name in ("gpt2", "bert", "t5", "llama", "roberta", "distilbert"):
        if arch.startswith(name):
            return name
    raise SystemExit("unknown ARCH %r (one of %s)" % (arch, " ".join(ARCHS)))


def config_for(arch):
    return {"gpt2": lambda: gpt2_config(arch == "gpt2-legacy"), "bert": lambda: bert_config(arch),
            "t5": lambda: t5_config(arch == "t5-v1_1"), "llama": lambda: llama_config(arch),
            "gpt_neox": lambda: neox_config(arch), "roberta": lambda: roberta_config(arch),
            "distilbert": lambda: distilbert_config(arch)}[family(arch)]()


def params_for(arch, cfg):
    if arch == "phi3":
        return phi3_params(cfg)
    return {"gpt2": lambda: gpt2_params(cfg), "bert": lambda: bert_params(cfg, arch),
            "t5": lambda: t5_params(cfg), "llama": lambda: llama_params(cfg),
            "gpt_neox": lambda: neox_params(cfg), "roberta": lambda: roberta_params(cfg, arch),
            "distilbert": lambda: distilbert_params(cfg, arch)}[family(arch)]()


# ---------------------------------------------------------------------------------------------------------------
# make
def random_tensor(gen, shape, kind, embed_std):
    noise = torch.randn(shape, generator=gen, dtype=torch.float32)
    if kind == "norm":
        return 1.0 + 0.1 * noise
    if kind == "bias":
        return 0.05 * noise
    if kind == "embed":
        return embed_std * noise
    if kind == "relbias":
        return 0.5 * noise
    fan_in = shape[0] if kind == "conv1d" else shape[1]
    return noise * (0.8 / math.sqrt(fan_in))


def random_weights(arch, cfg, seed):
    """{canonical HF name: float32 tensor}; the same seed gives the same values for every variant of a family."""
    gen = torch.Generator().manual_seed(seed)
    embed_std = 1.0 if family(arch) == "t5" else 0.3
    return {name: random_tensor(gen, shape, kind, embed_std) for name, shape, kind in params_for(arch, cfg)}


def legacy_names(arch, weights, cfg):
    """gpt2-legacy: no `transformer.` prefix plus the attn.bias / attn.masked_bias buffers; bert-legacy: gamma/beta."""
    out = {}
    for name, t in weights.items():
        if arch == "gpt2-legacy":
            out[name[len("transformer."):]] = t
        elif arch == "bert-legacy" and ".LayerNorm." in name:
            stem, last = name.rsplit(".", 1)
            out[stem + "." + {"weight": "gamma", "bias": "beta"}[last]] = t
        else:
            out[name] = t
    out.update(bertfam_extra_tensors(arch, weights, cfg))
    if arch == "gpt2-legacy":
        P = cfg["n_positions"]
        causal = torch.tril(torch.ones(P, P)).reshape(1, 1, P, P)  # (1, 1, P, P)
        for i in range(cfg["n_layer"]):
            out["h.%d.attn.bias" % i] = causal
            out["h.%d.attn.masked_bias" % i] = torch.tensor(-1e4)
    return out


def write_sharded(out_dir, weights):
    """Two shards in name order and model.safetensors.index.json, as save_pretrained(max_shard_size=...) writes."""
    names = sorted(weights)
    half = len(names) // 2
    shards = [names[:half], names[half:]]
    weight_map, total = {}, 0
    for k, part in enumerate(shards):
        file = "model-%05d-of-%05d.safetensors" % (k + 1, len(shards))
        total += write_safetensors(os.path.join(out_dir, file), {n: weights[n] for n in part})
        weight_map.update({n: file for n in part})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")


def make(arch, out_dir, seed, vocab=None, context=None):
    cfg = config_for(arch)
    if vocab:  # sized to a tokenizer the importer reads beside the weights
        cfg["vocab_size"] = vocab
    if context:  # room for whole conversations (Llama-family configs only)
        cfg["max_position_embeddings"] = context
    weights = legacy_names(arch, random_weights(arch, cfg, seed), cfg)
    if arch == "gpt-neox-seq":
        weights.update(neox_legacy_buffers(cfg))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    if arch == "llama-sharded":
        write_sharded(out_dir, weights)
    else:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), weights)


# ---------------------------------------------------------------------------------------------------------------
# Loading weights under canonical names (float64), whatever variant wrote them.
def canonical_name(model_type, name):
    """The canonical HF name of NAME, or None for buffers that are not weights."""
    parts = name.split(".")
    if model_type == "gpt2":
        if parts[-2:] in (["attn", "bias"], ["attn", "masked_bias"]):
            return None  # the causal-mask buffers of old GPT-2 checkpoints
        return name if parts[0] in ("transformer", "lm_head") else "transformer." + name
    if model_type == "bert":
        if parts[-1] == "position_ids":
            return None
        if len(parts) >= 2 and parts[-2] == "LayerNorm" and parts[-1] in ("gamma", "beta"):
            name = ".".join(parts[:-1] + [{"gamma": "weight", "beta": "bias"}[parts[-1]]])
        return "bert." + name if parts[0] in ("embeddings", "encoder", "pooler") else name
    if model_type == "gpt_neox":
        return neox_canonical_name(name)
    if model_type in ("roberta", "distilbert"):
        return bertfam_canonical_name(model_type, name)
    return name


def load_weights(model_dir, model_type):
    out = {}
    for name, (dtype, shape, chunk) in read_dir_raw(model_dir).items():
        key = canonical_name(model_type, name)
        if key is not None:
            out[key] = decode_tensor(dtype, shape, chunk)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Forward passes in float64.
def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


ACTIVATIONS = {"gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu": gelu_erf, "relu": torch.relu,
               "silu": lambda x: x * torch.sigmoid(x)}


def activation(name):
    if name not in ACTIVATIONS:
        raise SystemExit("unsupported activation %r" % name)
    return ACTIVATIONS[name]


def ln(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def split_heads(x, n):
    B, T, A = x.shape
    return x.reshape(B, T, n, A // n).transpose(1, 2)  # (B, T, A) -> (B, n, T, A/n)


def merge_heads(x):
    B, n, T, hs = x.shape
    return x.transpose(1, 2).reshape(B, T, n * hs)  # (B, n, T, hs) -> (B, T, n*hs)


def causal_mask(T):
    return torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)  # (T, T), -inf above


def key_mask(attention_mask):
    """(B, S) of 1/0 -> additive (B, 1, 1, S): 0 to attend, -inf to skip."""
    blocked = attention_mask.to(torch.float64) == 0
    return torch.zeros(blocked.shape, dtype=torch.float64).masked_fill(blocked, float("-inf"))[:, None, None, :]


def attend(q, k, v, additive):
    """Softmax attention; q (B, nh, T, hs), k/v (B, nh, S, hs), additive broadcast to (B, nh, T, S)."""
    w = torch.softmax(q @ k.transpose(-1, -2) + additive, dim=-1)
    return w @ v


def gpt2_forward(cfg, W, ids):
    nh, eps = cfg["n_head"], cfg["layer_norm_epsilon"]
    act = activation(cfg["activation_function"])
    B, T = ids.shape
    x = W["transformer.wte.weight"][ids] + W["transformer.wpe.weight"][:T][None]  # (B, T, C)
    for i in range(cfg["n_layer"]):
        p = "transformer.h.%d." % i
        h = ln(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = h @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]  # Conv1D: (B, T, 3C)
        q, k, v = (split_heads(t, nh) for t in qkv.chunk(3, dim=-1))
        a = attend(q / math.sqrt(q.shape[-1]), k, v, causal_mask(T))
        x = x + merge_heads(a) @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        h = ln(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        h = act(h @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"])
        x = x + h @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = ln(x, W["transformer.ln_f.weight"], W["transformer.ln_f.bias"], eps)
    head = W["transformer.wte.weight"] if cfg.get("tie_word_embeddings", True) else W["lm_head.weight"]
    return {"logits": x @ head.t()}


def dense(W, name, x):
    return x @ W[name + ".weight"].t() + W[name + ".bias"]


def bert_encode(cfg, W, ids, attention_mask, token_type_ids):
    nh, eps = cfg["num_attention_heads"], cfg["layer_norm_eps"]
    act = activation(cfg["hidden_act"])
    T = ids.shape[1]
    e = "bert.embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:T][None] + \
        W[e + "token_type_embeddings.weight"][token_type_ids]  # (B, T, C)
    x = ln(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)
    mask = key_mask(attention_mask)
    for i in range(cfg["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % i
        q, k, v = (split_heads(dense(W, p + "attention.self." + n, x), nh) for n in ("query", "key", "value"))
        a = merge_heads(attend(q / math.sqrt(q.shape[-1]), k, v, mask))
        x = ln(dense(W, p + "attention.output.dense", a) + x,
               W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        h = act(dense(W, p + "intermediate.dense", x))
        x = ln(dense(W, p + "output.dense", h) + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    return x


def bert_forward(cfg, W, ids, attention_mask, token_type_ids, arch):
    x = bert_encode(cfg, W, ids, attention_mask, token_type_ids)
    if arch in ("bert-model", "bert-cls"):
        pooled = torch.tanh(dense(W, "bert.pooler.dense", x[:, 0]))  # (B, C)
        if arch == "bert-model":
            return {"last_hidden_state": x, "pooler_output": pooled}
        return {"logits": dense(W, "classifier", pooled)}
    t = "cls.predictions.transform."
    h = activation(cfg["hidden_act"])(dense(W, t + "dense", x))
    h = ln(h, W[t + "LayerNorm.weight"], W[t + "LayerNorm.bias"], cfg["layer_norm_eps"])
    decoder = W.get("cls.predictions.decoder.weight", W["bert.embeddings.word_embeddings.weight"])
    return {"logits": h @ decoder.t() + W["cls.predictions.bias"]}


def t5_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """HF T5Attention._relative_position_bucket (relative_position = memory position - query position)."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, relative_position, large)


def t5_position_bias(cfg, table, T, S, bidirectional):
    ctx = torch.arange(T)[:, None]
    mem = torch.arange(S)[None, :]
    b = t5_bucket(mem - ctx, bidirectional, cfg["relative_attention_num_buckets"], cfg["relative_attention_max_distance"])
    return table[b].permute(2, 0, 1)[None]  # (T, S, nh) -> (1, nh, T, S)


def t5_attention(cfg, W, name, x, memory, additive):
    nh = cfg["num_heads"]
    q = split_heads(x @ W[name + ".q.weight"].t(), nh)
    k = split_heads(memory @ W[name + ".k.weight"].t(), nh)
    v = split_heads(memory @ W[name + ".v.weight"].t(), nh)
    return merge_heads(attend(q, k, v, additive)) @ W[name + ".o.weight"].t()  # no 1/sqrt(d_kv) in T5


def t5_ffn(cfg, W, name, x):
    act = activation(cfg.get("dense_act_fn") or cfg["feed_forward_proj"].split("-")[-1])
    if cfg["feed_forward_proj"].startswith("gated-"):
        h = act(x @ W[name + ".wi_0.weight"].t()) * (x @ W[name + ".wi_1.weight"].t())
    else:
        h = act(x @ W[name + ".wi.weight"].t())
    return h @ W[name + ".wo.weight"].t()


def t5_forward(cfg, W, ids, attention_mask, decoder_ids):
    eps = cfg["layer_norm_epsilon"]
    shared = W["shared.weight"] if "shared.weight" in W else W["encoder.embed_tokens.weight"]
    S, T = ids.shape[1], decoder_ids.shape[1]
    enc_mask = key_mask(attention_mask)  # (B, 1, 1, S)
    x = shared[ids]  # (B, S, C)
    bias = t5_position_bias(cfg, W["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"], S, S, True)
    for i in range(cfg["num_layers"]):
        p = "encoder.block.%d.layer." % i
        h = rms(x, W[p + "0.layer_norm.weight"], eps)
        x = x + t5_attention(cfg, W, p + "0.SelfAttention", h, h, bias + enc_mask)
        x = x + t5_ffn(cfg, W, p + "1.DenseReluDense", rms(x, W[p + "1.layer_norm.weight"], eps))
    memory = rms(x, W["encoder.final_layer_norm.weight"], eps)
    y = shared[decoder_ids]  # (B, T, C)
    bias = t5_position_bias(cfg, W["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"], T, T, False)
    self_mask = bias + causal_mask(T)
    for i in range(cfg.get("num_decoder_layers") or cfg["num_layers"]):
        p = "decoder.block.%d.layer." % i
        h = rms(y, W[p + "0.layer_norm.weight"], eps)
        y = y + t5_attention(cfg, W, p + "0.SelfAttention", h, h, self_mask)
        h = rms(y, W[p + "1.layer_norm.weight"], eps)
        y = y + t5_attention(cfg, W, p + "1.EncDecAttention", h, memory, enc_mask)
        y = y + t5_ffn(cfg, W, p + "2.DenseReluDense", rms(y, W[p + "2.layer_norm.weight"], eps))
    y = rms(y, W["decoder.final_layer_norm.weight"], eps)
    if cfg.get("tie_word_embeddings", True):
        return {"logits": (y * cfg["d_model"] ** -0.5) @ shared.t()}
    return {"logits": y @ W["lm_head.weight"].t()}


def affine(x, W, name):
    """x @ W[name.weight]^T (+ W[name.bias] where the checkpoint has one)."""
    y = x @ W[name + ".weight"].t()
    return y + W[name + ".bias"] if name + ".bias" in W else y


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_forward(cfg, W, ids):
    nh, nkv, eps = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // nh
    if cfg.get("rope_scaling"):
        raise SystemExit("rope_scaling is not supported by this reference")
    T = ids.shape[1]
    inv_freq = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None]  # (T, hd/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, hd)
    cos, sin = emb.cos(), emb.sin()
    act = activation(cfg.get("hidden_act", "silu"))
    mask = causal_mask(T)
    windowed = cfg["model_type"] in ("mistral", "phi3") or cfg.get("use_sliding_window")
    window = cfg.get("sliding_window") if windowed else None
    if window:  # Mistral: query i sees keys i - window + 1 .. i
        mask = mask.masked_fill(torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-window), float("-inf"))
    x = W["model.embed_tokens.weight"][ids]  # (B, T, C)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms(x, W[p + "input_layernorm.weight"], eps)
        q = split_heads(affine(h, W, p + "self_attn.q_proj"), nh)  # (B, nh, T, hd)
        k = split_heads(affine(h, W, p + "self_attn.k_proj"), nkv)  # (B, nkv, T, hd)
        v = split_heads(affine(h, W, p + "self_attn.v_proj"), nkv)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)  # repeat_kv: (B, nh, T, hd)
        a = attend(q / math.sqrt(hd), k, v, mask)
        x = x + merge_heads(a) @ W[p + "self_attn.o_proj.weight"].t()
        h = rms(x, W[p + "post_attention_layernorm.weight"], eps)
        g = act(h @ W[p + "mlp.gate_proj.weight"].t()) * (h @ W[p + "mlp.up_proj.weight"].t())
        x = x + g @ W[p + "mlp.down_proj.weight"].t()
    x = rms(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else W["lm_head.weight"]
    return {"logits": x @ head.t()}


# ---------------------------------------------------------------------------------------------------------------
# GPT-NeoX (Pythia), from the GPT-NeoX paper (Black et al. 2022) and HF's GPTNeoX documentation: query_key_value
# rows grouped per head as [q_h; k_h; v_h]; rotary over the first rotary_ndims = int(head_size * rotary_pct) dims of
# each head (rotate-half layout, inverse frequencies base^(-2i / rotary_ndims)), the rest passed through; parallel
# residual x + attn(ln_1 x) + mlp(ln_2 x), or sequential; final LayerNorm; embed_out (untied by default).
def neox_config(arch):
    if arch == "gpt-neox":  # as transformers 4.48 save_pretrained writes a GPTNeoXConfig
        return {"architectures": ["GPTNeoXForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
                "bos_token_id": 0, "classifier_dropout": 0.1, "eos_token_id": 0, "hidden_act": "gelu",
                "hidden_dropout": 0.0, "hidden_size": 48, "initializer_range": 0.02, "intermediate_size": 80,
                "layer_norm_eps": 1e-05, "max_position_embeddings": 64, "model_type": "gpt_neox",
                "num_attention_heads": 3, "num_hidden_layers": 2, "partial_rotary_factor": 0.25,
                "rope_scaling": None, "rope_theta": 10000, "rotary_emb_base": 10000, "rotary_pct": 0.25,
                "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.48.0",
                "use_cache": True, "use_parallel_residual": True, "vocab_size": 97}
    # gpt-neox-seq: the fields of a Pythia hub config.json (no rope_theta, partial_rotary_factor, attention_bias)
    return {"architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu_new",
            "hidden_size": 48, "initializer_range": 0.02, "intermediate_size": 96, "layer_norm_eps": 1e-05,
            "max_position_embeddings": 64, "model_type": "gpt_neox", "num_attention_heads": 3,
            "num_hidden_layers": 2, "rotary_emb_base": 500, "rotary_pct": 1.0, "tie_word_embeddings": True,
            "torch_dtype": "float16", "transformers_version": "4.24.0", "use_cache": True,
            "use_parallel_residual": False, "vocab_size": 97}


def neox_params(cfg):
    C, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    p = [("gpt_neox.embed_in.weight", [V, C], "embed")]
    for i in range(cfg["num_hidden_layers"]):
        h = "gpt_neox.layers.%d." % i
        p += [(h + "input_layernorm.weight", [C], "norm"), (h + "input_layernorm.bias", [C], "bias"),
              (h + "post_attention_layernorm.weight", [C], "norm"), (h + "post_attention_layernorm.bias", [C], "bias"),
              (h + "attention.query_key_value.weight", [3 * C, C], "linear"),
              (h + "attention.query_key_value.bias", [3 * C], "bias"),
              (h + "attention.dense.weight", [C, C], "linear"), (h + "attention.dense.bias", [C], "bias"),
              (h + "mlp.dense_h_to_4h.weight", [F, C], "linear"), (h + "mlp.dense_h_to_4h.bias", [F], "bias"),
              (h + "mlp.dense_4h_to_h.weight", [C, F], "linear"), (h + "mlp.dense_4h_to_h.bias", [C], "bias")]
    p += [("gpt_neox.final_layer_norm.weight", [C], "norm"), ("gpt_neox.final_layer_norm.bias", [C], "bias")]
    if not cfg.get("tie_word_embeddings", False):
        p.append(("embed_out.weight", [V, C], "linear"))
    return p


def neox_rotary_ndims(cfg):
    return int(cfg["hidden_size"] // cfg["num_attention_heads"] * cfg.get("rotary_pct", 0.25))


def neox_legacy_buffers(cfg):
    """The buffers older GPT-NeoX files hold per layer: the causal mask, masked_bias and rotary inv_freq."""
    P, rd = cfg["max_position_embeddings"], neox_rotary_ndims(cfg)
    out = {}
    for i in range(cfg["num_hidden_layers"]):
        a = "gpt_neox.layers.%d.attention." % i
        out[a + "bias"] = torch.tril(torch.ones(P, P)).reshape(1, 1, P, P)  # (1, 1, P, P)
        out[a + "masked_bias"] = torch.tensor(-1e9)
        out[a + "rotary_emb.inv_freq"] = 1.0 / (cfg["rotary_emb_base"] ** (torch.arange(0, rd, 2).float() / rd))
    return out


def neox_canonical_name(name):
    parts = name.split(".")
    if parts[-1] in ("bias", "masked_bias") and len(parts) >= 2 and parts[-2] == "attention":
        return None  # the causal-mask buffers of older files
    if parts[-2:] == ["rotary_emb", "inv_freq"]:
        return None
    return name if parts[0] in ("gpt_neox", "embed_out") else "gpt_neox." + name


def neox_forward(cfg, W, ids):
    C, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    hs, rd = C // nh, neox_rotary_ndims(cfg)
    eps, act = cfg.get("layer_norm_eps", 1e-5), activation(cfg.get("hidden_act", "gelu"))
    if cfg.get("rope_scaling"):
        raise SystemExit("rope_scaling is not supported by this reference")
    B, T = ids.shape
    base = cfg.get("rotary_emb_base", 10000)
    inv_freq = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))  # (rd/2,)
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None]  # (T, rd/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, rd)
    cos, sin = emb.cos(), emb.sin()

    def rotary(t):  # (B, nh, T, hs): the first rd dims rotated, the rest passed through
        rot, rest = t[..., :rd], t[..., rd:]
        return torch.cat((rot * cos + rotate_half(rot) * sin, rest), dim=-1)

    def mlp(p, h):
        return dense(W, p + "mlp.dense_4h_to_h", act(dense(W, p + "mlp.dense_h_to_4h", h)))

    x = W["gpt_neox.embed_in.weight"][ids]  # (B, T, C)
    for i in range(cfg["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % i
        h = ln(x, W[p + "input_layernorm.weight"], W[p + "input_layernorm.bias"], eps)
        qkv = dense(W, p + "attention.query_key_value", h)  # (B, T, 3C), per head [q_h; k_h; v_h]
        qkv = qkv.reshape(B, T, nh, 3 * hs).transpose(1, 2)  # (B, nh, T, 3 hs)
        q, k, v = qkv[..., :hs], qkv[..., hs:2 * hs], qkv[..., 2 * hs:]
        a = attend(rotary(q) / math.sqrt(hs), rotary(k), v, causal_mask(T))
        attn = dense(W, p + "attention.dense", merge_heads(a))
        if cfg.get("use_parallel_residual", True):
            x = x + attn + mlp(p, ln(x, W[p + "post_attention_layernorm.weight"], W[p + "post_attention_layernorm.bias"], eps))
        else:
            x = x + attn
            x = x + mlp(p, ln(x, W[p + "post_attention_layernorm.weight"], W[p + "post_attention_layernorm.bias"], eps))
    x = ln(x, W["gpt_neox.final_layer_norm.weight"], W["gpt_neox.final_layer_norm.bias"], eps)
    head = W["gpt_neox.embed_in.weight"] if cfg.get("tie_word_embeddings", False) else W["embed_out.weight"]
    return {"logits": x @ head.t()}


def selftest_neox(results, tmp):
    """The per-head qkv layout against an explicit loop; partial rotary leaves the passed dims alone."""
    d = os.path.join(tmp, "gpt-neox")
    cfg, W = load_config(d), load_weights(d, "gpt_neox")
    C, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    hs = C // nh
    w = W["gpt_neox.layers.0.attention.query_key_value.weight"]
    q_rows = torch.cat([w[h * 3 * hs:h * 3 * hs + hs] for h in range(nh)])  # head h's q: rows 3 hs h .. 3 hs h + hs
    x = torch.randn(1, 1, C, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    mine = (x @ w.t()).reshape(1, 1, nh, 3 * hs)[..., :hs].reshape(1, 1, C)
    check(results, "gpt-neox query_key_value: q of head h in rows 3 hs h ..", torch.allclose(mine, x @ q_rows.t()))
    ids = selftest_inputs("gpt-neox")["input_ids"]
    full = neox_forward(cfg, W, ids)["logits"]
    check(results, "gpt-neox rotary_ndims is a quarter of the head", neox_rotary_ndims(cfg) == hs // 4)
    seq = dict(cfg, use_parallel_residual=False)
    check(results, "gpt-neox parallel != sequential residual", not torch.allclose(full, neox_forward(seq, W, ids)["logits"]))
    whole = dict(cfg, rotary_pct=1.0)
    check(results, "gpt-neox partial != whole rotary", not torch.allclose(full, neox_forward(whole, W, ids)["logits"]))


def read_ids(arg):
    """IDS_JSON as a file path or a literal object -> {key: int64 tensor}."""
    text = arg if arg.lstrip().startswith("{") else open(arg).read()
    return {key: torch.tensor(value, dtype=torch.long) for key, value in json.loads(text).items()}


def reference(arch, model_dir, inputs):
    """{output name: float64 tensor} of the HF model in MODEL_DIR."""
    cfg = load_config(model_dir)
    fam = family(arch)
    W = load_weights(model_dir, fam)
    if cfg.get("model_type") == "phi3":
        W = phi3_unfused(cfg, W)
    ids = inputs["input_ids"]
    mask = inputs.get("attention_mask", torch.ones_like(ids))
    if fam == "gpt2":
        return gpt2_forward(cfg, W, ids)
    if fam == "bert":
        return bert_forward(cfg, W, ids, mask, inputs.get("token_type_ids", torch.zeros_like(ids)), arch)
    if fam == "t5":
        return t5_forward(cfg, W, ids, mask, inputs["decoder_input_ids"])
    if fam == "gpt_neox":
        return neox_forward(cfg, W, ids)
    if fam in BERTFAM_FORWARDS:
        return BERTFAM_FORWARDS[fam](cfg, W, ids, mask, inputs.get("token_type_ids", torch.zeros_like(ids)))
    return llama_forward(cfg, W, ids)


def cmd_greedy(args):
    """Greedy decoding with full forward passes (no cache): the reference of `lmzoo generate --temperature 0`."""
    ids = read_ids(args.ids_json)["input_ids"]
    for _ in range(args.new):
        logits = reference(args.arch, args.model_dir, {"input_ids": ids})["logits"]
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    print(json.dumps(ids[:, -args.new:].tolist() if args.new else [[] for _ in ids]))


def cmd_logits(args):
    out = reference(args.arch, args.model_dir, read_ids(args.ids_json))
    print(json.dumps({name: t.tolist() for name, t in out.items()}))


# ---------------------------------------------------------------------------------------------------------------
# compare
def lmzoo_outputs(arch, module, inputs):
    """{output name: tensor} of an lmzoo TorchScript export, named as reference() names them."""
    ids = inputs["input_ids"]
    fam = family(arch)
    mask = inputs.get("attention_mask")
    if fam in ("gpt2", "llama", "gpt_neox"):
        return {"logits": module.forward(ids)}
    if fam == "t5":
        return {"logits": module.forward(ids, mask, inputs["decoder_input_ids"])}
    types = inputs.get("token_type_ids")
    if arch == "bert-model":
        hidden, pooled = module.encode(ids, mask, types)
        return {"last_hidden_state": hidden, "pooler_output": pooled}
    return {"logits": module.forward(ids, mask, types)}


def max_abs_diff(ref, got):
    """Max |ref - got| over ref's columns (lmzoo may pad the vocabulary); None when the shapes disagree."""
    if got.dim() != ref.dim() or list(got.shape[:-1]) != list(ref.shape[:-1]) or got.shape[-1] < ref.shape[-1]:
        return None
    got = got[..., :ref.shape[-1]].to(torch.float64)
    return (ref - got).abs().max().item()


def cmd_compare(args):
    inputs = read_ids(args.ids_json)
    ref = reference(args.arch, args.model_dir, inputs)
    module = torch.jit.load(args.torchscript, map_location="cpu")
    module.eval()
    try:
        with torch.no_grad():
            got = lmzoo_outputs(args.arch, module, inputs)
    except RuntimeError as e:  # a method or signature other than lmzoo's TorchScript interface
        print("%s: calling the TorchScript module failed: %s" % (args.arch, str(e).strip().splitlines()[0]))
        return 1
    worst = 0.0
    for name, r in ref.items():
        d = max_abs_diff(r, got[name])
        if d is None or not math.isfinite(d):
            print("%s %s: shape %s from lmzoo, %s expected (or non-finite values)"
                  % (args.arch, name, list(got[name].shape), list(r.shape)))
            return 1
        worst = max(worst, d)
    print("%s max_abs_diff=%.3g" % (args.arch, worst))
    return 1 if worst > args.tol else 0


# ---------------------------------------------------------------------------------------------------------------
# check-roundtrip
def normalised_raw(model_dir, model_type):
    out = {}
    for name, value in read_dir_raw(model_dir).items():
        key = canonical_name(model_type, name)
        if key is not None:
            out[key] = value
    return out


def cmd_check_roundtrip(args):
    model_type = load_config(args.hf_dir).get("model_type", "")
    want = normalised_raw(args.hf_dir, model_type)
    got = normalised_raw(args.exported_dir, model_type)
    problems = []
    for name in sorted(want):
        if name not in got:
            problems.append("missing %s" % name)
            continue
        (wd, ws, wb), (gd, gs, gb) = want[name], got[name]
        if (wd, ws) != (gd, gs):
            problems.append("differs %s: %s %s exported, %s %s expected" % (name, gd, gs, wd, ws))
        elif wb != gb:
            diff = (decode_tensor(wd, ws, wb) - decode_tensor(gd, gs, gb)).abs().max().item()
            problems.append("differs %s: bytes differ (max abs diff %.3g)" % (name, diff))
    extra = sorted(set(got) - set(want))
    problems += [("extra %s" % name) + (" (allowed)" if args.allow_extra else "") for name in extra]
    for line in problems:
        print(line)
    failed = [p for p in problems if not p.endswith("(allowed)")]
    print("check-roundtrip: %d tensors compared, %d missing, %d differ, %d extra: %s"
          % (len(want), sum(p.startswith("missing") for p in problems), sum(p.startswith("differs") for p in problems),
             len(extra), "FAIL" if failed else "PASS"))
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------------------------
# selftest
SELFTEST_IDS = {"gpt2": {"input_ids": [[5, 17, 42, 96, 0, 33, 71, 8], [1, 2, 3, 4, 5, 6, 7, 8]]},
                "llama": {"input_ids": [[5, 17, 42, 96, 0, 33, 71, 8], [1, 2, 3, 4, 5, 6, 7, 8]]},
                "gpt_neox": {"input_ids": [[5, 17, 42, 96, 0, 33, 71, 8], [1, 2, 3, 4, 5, 6, 7, 8]]},
                "bert": {"input_ids": [[2, 17, 42, 96, 33, 71, 3], [2, 5, 6, 7, 8, 9, 3]]},
                "t5": {"input_ids": [[13, 17, 42, 96, 33, 71, 1], [5, 6, 7, 8, 9, 10, 1]],
                       "decoder_input_ids": [[0, 23, 54, 11, 64], [0, 7, 8, 9, 10]]}}


def selftest_inputs(arch):
    return {k: torch.tensor(v, dtype=torch.long) for k, v in SELFTEST_IDS[family(arch)].items()}


def check(results, label, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", label, (": " + detail) if detail else ""))


def selftest_safetensors(results, tmp):
    gen = torch.Generator().manual_seed(3)
    tensors = {"b": torch.randn(3, 5, generator=gen), "a.weight": torch.randn(7, generator=gen), "s": torch.tensor(2.5)}
    path = os.path.join(tmp, "t.safetensors")
    write_safetensors(path, tensors)
    raw = read_safetensors_raw(path)
    same = set(raw) == set(tensors) and all(
        raw[n][0] == "F32" and raw[n][1] == list(t.shape) and torch.equal(decode_tensor(*raw[n]).float(), t)
        for n, t in tensors.items())
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        meta = json.loads(f.read(n).decode("utf-8")).get("__metadata__")
    check(results, "safetensors write/read round trip", same and n % 8 == 0 and meta == {"format": "pt"})


def selftest_buckets(results):
    rel = torch.tensor([0, -1, 1, -7, -8, -15, -128, 128, -1000])
    got = t5_bucket(rel, True, 32, 128).tolist()  # hand-computed from HF's formula
    check(results, "T5 bidirectional buckets", got == [0, 1, 17, 7, 8, 9, 15, 31, 15], str(got))
    rel = torch.tensor([0, -1, 1, 5, -15, -16, -20, -127, -200])
    got = t5_bucket(rel, False, 32, 128).tolist()
    check(results, "T5 unidirectional buckets", got == [0, 1, 0, 0, 15, 16, 17, 31, 31], str(got))


def make_and_run(tmp, arch, seed=7):
    d = os.path.join(tmp, arch)
    make(arch, d, seed)
    return d, reference(arch, d, selftest_inputs(arch))


def same_outputs(a, b):
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


def selftest_variants(results, tmp):
    outs = {}
    for arch in ARCHS:
        d, outs[arch] = make_and_run(tmp, arch)
        values = torch.cat([t.reshape(-1) for t in outs[arch].values()])
        spread = values.std().item()
        check(results, "%s output is finite and O(1)" % arch,
              bool(torch.isfinite(values).all()) and 0.1 < spread < 10, "std %.3f" % spread)
        stored = set(read_dir_raw(d))
        tied = {"lm_head.weight", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias",
                "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}
        if family(arch) in ("llama", "t5") and not load_config(d).get("tie_word_embeddings", True):
            tied.discard("lm_head.weight")  # an untied head is stored
        if family(arch) == "gpt_neox" and load_config(d).get("tie_word_embeddings", False):
            tied.add("embed_out.weight")  # GPT-NeoX's head, left out when tied
        check(results, "%s stores no tied weight" % arch, not stored & tied, " ".join(sorted(stored & tied)))
    check(results, "llama == llama-sharded (same seed)", same_outputs(outs["llama"], outs["llama-sharded"]))
    check(results, "gpt2 == gpt2-legacy (same seed)", same_outputs(outs["gpt2"], outs["gpt2-legacy"]))
    check(results, "bert-mlm == bert-legacy (same seed)", same_outputs(outs["bert-mlm"], outs["bert-legacy"]))
    check(results, "gpt2 != llama outputs (seeds are not all alike)", not same_outputs(outs["gpt2"], outs["llama"]))


def selftest_causality(results, tmp):
    for arch, key in (("gpt2", "input_ids"), ("llama", "input_ids"), ("qwen2", "input_ids"), ("mistral", "input_ids"),
                      ("gpt-neox", "input_ids"), ("gpt-neox-seq", "input_ids"), ("t5-v1_0", "decoder_input_ids"),
                      ("t5-v1_1", "decoder_input_ids")):
        d = os.path.join(tmp, arch)
        a = selftest_inputs(arch)
        b = {k: v.clone() for k, v in a.items()}
        b[key][:, -1] = (b[key][:, -1] + 11) % 97
        ra, rb = reference(arch, d, a)["logits"], reference(arch, d, b)["logits"]
        earlier = torch.equal(ra[:, :-1], rb[:, :-1])
        last = not torch.equal(ra[:, -1:], rb[:, -1:])
        check(results, "%s causal: a new last token changes only the last logits" % arch, earlier and last)


def selftest_window(results, tmp):
    """Mistral's window: the first `window` positions see every earlier key anyway; later ones see fewer."""
    d = os.path.join(tmp, "mistral")
    cfg, W = load_config(d), load_weights(d, "llama")
    ids = selftest_inputs("mistral")["input_ids"]
    windowed = llama_forward(cfg, W, ids)["logits"]
    whole = llama_forward(dict(cfg, sliding_window=None), W, ids)["logits"]
    w = cfg["sliding_window"]
    check(results, "mistral window: positions < window unchanged, later ones changed",
          torch.equal(windowed[:, :w], whole[:, :w]) and not torch.allclose(windowed[:, w:], whole[:, w:]))


def selftest_bert_heads(results, tmp):
    inputs = selftest_inputs("bert-model")
    model = reference("bert-model", os.path.join(tmp, "bert-model"), inputs)
    ok = list(model["last_hidden_state"].shape) == [2, 7, 32] and list(model["pooler_output"].shape) == [2, 32]
    cls = reference("bert-cls", os.path.join(tmp, "bert-cls"), inputs)["logits"]
    check(results, "bert-model / bert-cls output shapes", ok and list(cls.shape) == [2, 3])
    masked = dict(inputs, attention_mask=torch.tensor([[1] * 7, [1] * 5 + [0] * 2]))
    changed = dict(masked, input_ids=masked["input_ids"].clone())
    changed["input_ids"][1, 5:] = torch.tensor([40, 41])
    ra = reference("bert-mlm", os.path.join(tmp, "bert-mlm"), masked)["logits"]
    rb = reference("bert-mlm", os.path.join(tmp, "bert-mlm"), changed)["logits"]
    check(results, "bert attention_mask hides padded keys", torch.allclose(ra[1, :5], rb[1, :5], atol=1e-12, rtol=0))


def selftest_against_torch_nn(results, tmp):
    """BERT's encoder against nn.TransformerEncoderLayer (post-LN, erf GELU); RoPE's relative-position property."""
    d = os.path.join(tmp, "bert-legacy")
    cfg, W = load_config(d), load_weights(d, "bert")
    inputs = selftest_inputs("bert-legacy")
    ids, types = inputs["input_ids"], torch.tensor([[0] * 4 + [1] * 3, [0] * 7])
    e = "bert.embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:ids.shape[1]][None] + \
        W[e + "token_type_embeddings.weight"][types]
    x = torch.nn.functional.layer_norm(x, x.shape[-1:], W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], 1e-12)
    for i in range(cfg["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % i
        layer = torch.nn.TransformerEncoderLayer(cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"],
                                                 dropout=0.0, activation="gelu", layer_norm_eps=1e-12, batch_first=True)
        layer = layer.double().eval()
        q, k, v = (p + "attention.self." + n for n in ("query", "key", "value"))
        layer.self_attn.in_proj_weight.copy_(torch.cat([W[q + ".weight"], W[k + ".weight"], W[v + ".weight"]]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([W[q + ".bias"], W[k + ".bias"], W[v + ".bias"]]))
        for module, name in ((layer.self_attn.out_proj, "attention.output.dense"), (layer.linear1, "intermediate.dense"),
                             (layer.linear2, "output.dense"), (layer.norm1, "attention.output.LayerNorm"),
                             (layer.norm2, "output.LayerNorm")):
            module.weight.copy_(W[p + name + ".weight"])
            module.bias.copy_(W[p + name + ".bias"])
        x = layer(x)
    mine = bert_encode(cfg, W, ids, torch.ones_like(ids), types)
    check(results, "bert encoder == nn.TransformerEncoderLayer", torch.allclose(x, mine, atol=1e-10, rtol=0),
          "max diff %.3g" % (x - mine).abs().max().item())
    hd, gen = 8, torch.Generator().manual_seed(5)
    q, k = (torch.randn(2, 6, hd, generator=gen, dtype=torch.float64) for _ in range(2))

    def rope(t, start):
        inv_freq = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        emb = torch.cat([torch.arange(start, start + 6, dtype=torch.float64)[:, None] * inv_freq[None]] * 2, dim=-1)
        return t * emb.cos() + rotate_half(t) * emb.sin()

    near, far = rope(q, 0) @ rope(k, 0).transpose(-1, -2), rope(q, 9) @ rope(k, 9).transpose(-1, -2)
    check(results, "rotary scores depend on relative positions only", torch.allclose(near, far, atol=1e-12, rtol=0))


def cmd_selftest(args):
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        selftest_safetensors(results, tmp)
        selftest_buckets(results)
        selftest_variants(results, tmp)
        selftest_causality(results, tmp)
        selftest_window(results, tmp)
        selftest_bert_heads(results, tmp)
        selftest_against_torch_nn(results, tmp)
        selftest_neox(results, tmp)
        selftest_bertfam(results, tmp)
        round_trip = cmd_quiet_roundtrip(os.path.join(tmp, "gpt2-legacy"), os.path.join(tmp, "gpt2"))
        check(results, "check-roundtrip gpt2-legacy vs gpt2 (same seed) passes", round_trip == 0)
    print("selftest: %d of %d passed: %s" % (sum(results), len(results), "PASS" if all(results) else "FAIL"))
    return 0 if all(results) else 1


def cmd_quiet_roundtrip(hf_dir, exported_dir):
    ns = argparse.Namespace(hf_dir=hf_dir, exported_dir=exported_dir, allow_extra=False)
    stdout = sys.stdout
    try:
        sys.stdout = open(os.devnull, "w")
        return cmd_check_roundtrip(ns)
    finally:
        sys.stdout.close()
        sys.stdout = stdout


# ---------------------------------------------------------------------------------------------------------------
# RoBERTa (RobertaForMaskedLM) and DistilBERT (DistilBertForMaskedLM), from the published formulas:
#   RoBERTa: BERT's post-LN encoder; position ids from the input ids, real tokens padding_idx + 1 + their index
#   among real tokens (cumsum), pads padding_idx (fairseq's make_positions); LM head dense -> erf GELU ->
#   LayerNorm -> tied decoder + lm_head.bias.
#   DistilBERT: word + position embeddings (no token types), LayerNorm eps 1e-12, per layer
#   sa_layer_norm(out_lin(attention) + x), output_layer_norm(lin2(act(lin1(h))) + h); head vocab_transform ->
#   act -> vocab_layer_norm -> vocab_projector (tied weight, own bias).
# Variants: roberta (as save_pretrained writes RobertaForMaskedLM), roberta-hub (as FacebookAI/roberta-base's file:
# a pooler, the tied lm_head.decoder copies and the position_ids buffer), distilbert, distilbert-untied.
BERTFAM_ARCHS = ["roberta", "roberta-hub", "distilbert", "distilbert-untied"]
ARCHS += BERTFAM_ARCHS
SELFTEST_IDS["roberta"] = {"input_ids": [[0, 17, 42, 96, 33, 71, 2], [0, 5, 6, 7, 8, 9, 2]]}
SELFTEST_IDS["distilbert"] = {"input_ids": [[2, 17, 42, 96, 33, 71, 3], [2, 5, 6, 7, 8, 9, 3]]}


def roberta_config(arch):
    return {"architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
            "classifier_dropout": None, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64, "layer_norm_eps": 1e-05,
            "max_position_embeddings": 34, "model_type": "roberta", "num_attention_heads": 4,
            "num_hidden_layers": 2, "pad_token_id": 1, "position_embedding_type": "absolute",
            "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION, "type_vocab_size": 1,
            "use_cache": True, "vocab_size": 97}


def distilbert_config(arch):
    cfg = {"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1, "dim": 32,
           "dropout": 0.1, "hidden_dim": 64, "initializer_range": 0.02, "max_position_embeddings": 32,
           "model_type": "distilbert", "n_heads": 4, "n_layers": 2, "pad_token_id": 0, "qa_dropout": 0.1,
           "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True,
           "torch_dtype": "float32", "transformers_version": TRANSFORMERS_VERSION, "vocab_size": 97}
    if arch == "distilbert-untied":
        cfg.update({"activation": "relu", "tie_word_embeddings": False})
    return cfg


def roberta_params(cfg, arch):
    C = cfg["hidden_size"]
    p = bert_encoder_params(cfg, "roberta.") + linear("lm_head.dense", C, C) + layer_norm("lm_head.layer_norm", C)
    p.append(("lm_head.bias", [cfg["vocab_size"]], "bias"))
    return p + (linear("roberta.pooler.dense", C, C) if arch == "roberta-hub" else [])


def distilbert_params(cfg, arch):
    C, V, F = cfg["dim"], cfg["vocab_size"], cfg["hidden_dim"]
    e = "distilbert.embeddings."
    p = [(e + "word_embeddings.weight", [V, C], "embed"),
         (e + "position_embeddings.weight", [cfg["max_position_embeddings"], C], "embed")] + layer_norm(e + "LayerNorm", C)
    for i in range(cfg["n_layers"]):
        h = "distilbert.transformer.layer.%d." % i
        for proj in ("q_lin", "k_lin", "v_lin", "out_lin"):
            p += linear(h + "attention." + proj, C, C)
        p += layer_norm(h + "sa_layer_norm", C) + linear(h + "ffn.lin1", F, C) + linear(h + "ffn.lin2", C, F)
        p += layer_norm(h + "output_layer_norm", C)
    p += linear("vocab_transform", C, C) + layer_norm("vocab_layer_norm", C) + [("vocab_projector.bias", [V], "bias")]
    if not cfg.get("tie_word_embeddings", True):
        p.append(("vocab_projector.weight", [V, C], "linear"))
    return p


def bertfam_extra_tensors(arch, weights, cfg):
    """roberta-hub: the tied copies and buffer a converted hub file holds beside the weights."""
    if arch != "roberta-hub":
        return {}
    return {"lm_head.decoder.weight": weights["roberta.embeddings.word_embeddings.weight"].clone(),
            "lm_head.decoder.bias": weights["lm_head.bias"].clone(),
            "roberta.embeddings.position_ids": torch.arange(cfg["max_position_embeddings"])[None]}


def bertfam_canonical_name(model_type, name):
    parts = name.split(".")
    if parts[-1] in ("position_ids", "token_type_ids"):
        return None
    if model_type == "roberta":
        if parts[0] == "lm_head" and parts[1] == "decoder":
            return None  # the tied copies of the word embeddings and lm_head.bias
        return "roberta." + name if parts[0] in ("embeddings", "encoder", "pooler") else name
    return "distilbert." + name if parts[0] in ("embeddings", "transformer") else name


def roberta_position_ids(ids, padding_idx):
    real = (ids != padding_idx).long()  # (B, T)
    return torch.cumsum(real, dim=1) * real + padding_idx


def roberta_forward(cfg, W, ids, attention_mask, token_type_ids):
    nh, eps, pad = cfg["num_attention_heads"], cfg["layer_norm_eps"], cfg["pad_token_id"]
    act = activation(cfg["hidden_act"])
    e = "roberta.embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][roberta_position_ids(ids, pad)] + \
        W[e + "token_type_embeddings.weight"][token_type_ids]  # (B, T, C)
    x = ln(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)
    mask = key_mask(attention_mask)
    for i in range(cfg["num_hidden_layers"]):
        p = "roberta.encoder.layer.%d." % i
        q, k, v = (split_heads(dense(W, p + "attention.self." + n, x), nh) for n in ("query", "key", "value"))
        a = merge_heads(attend(q / math.sqrt(q.shape[-1]), k, v, mask))
        x = ln(dense(W, p + "attention.output.dense", a) + x,
               W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        h = act(dense(W, p + "intermediate.dense", x))
        x = ln(dense(W, p + "output.dense", h) + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    h = ln(gelu_erf(dense(W, "lm_head.dense", x)), W["lm_head.layer_norm.weight"], W["lm_head.layer_norm.bias"], eps)
    return {"logits": h @ W[e + "word_embeddings.weight"].t() + W["lm_head.bias"]}


def distilbert_encode(cfg, W, ids, attention_mask):
    nh, eps = cfg["n_heads"], 1e-12
    act = activation(cfg["activation"])
    e = "distilbert.embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:ids.shape[1]][None]  # (B, T, C)
    x = ln(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)
    mask = key_mask(attention_mask)
    for i in range(cfg["n_layers"]):
        p = "distilbert.transformer.layer.%d." % i
        q, k, v = (split_heads(dense(W, p + "attention." + n, x), nh) for n in ("q_lin", "k_lin", "v_lin"))
        a = merge_heads(attend(q / math.sqrt(q.shape[-1]), k, v, mask))
        x = ln(dense(W, p + "attention.out_lin", a) + x, W[p + "sa_layer_norm.weight"], W[p + "sa_layer_norm.bias"], eps)
        h = dense(W, p + "ffn.lin2", act(dense(W, p + "ffn.lin1", x)))
        x = ln(h + x, W[p + "output_layer_norm.weight"], W[p + "output_layer_norm.bias"], eps)
    return x


def distilbert_forward(cfg, W, ids, attention_mask, token_type_ids):
    x = distilbert_encode(cfg, W, ids, attention_mask)
    h = activation(cfg["activation"])(dense(W, "vocab_transform", x))
    h = ln(h, W["vocab_layer_norm.weight"], W["vocab_layer_norm.bias"], 1e-12)
    projector = W.get("vocab_projector.weight", W["distilbert.embeddings.word_embeddings.weight"])
    return {"logits": h @ projector.t() + W["vocab_projector.bias"]}


BERTFAM_FORWARDS = {"roberta": roberta_forward, "distilbert": distilbert_forward}


def selftest_bertfam(results, tmp):
    ids = torch.tensor([[0, 5, 6, 2, 1, 1], [0, 7, 1, 8, 2, 1]])
    got = roberta_position_ids(ids, 1).tolist()  # hand-computed: pads at padding_idx 1, real tokens from 2
    check(results, "RoBERTa position ids", got == [[2, 3, 4, 5, 1, 1], [2, 3, 1, 4, 5, 1]], str(got))
    d = os.path.join(tmp, "distilbert")
    cfg, W = load_config(d), load_weights(d, "distilbert")
    ids = selftest_inputs("distilbert")["input_ids"]
    e = "distilbert.embeddings."
    x = W[e + "word_embeddings.weight"][ids] + W[e + "position_embeddings.weight"][:ids.shape[1]][None]
    x = torch.nn.functional.layer_norm(x, x.shape[-1:], W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], 1e-12)
    for i in range(cfg["n_layers"]):
        p = "distilbert.transformer.layer.%d." % i
        layer = torch.nn.TransformerEncoderLayer(cfg["dim"], cfg["n_heads"], cfg["hidden_dim"], dropout=0.0,
                                                 activation="gelu", layer_norm_eps=1e-12, batch_first=True)
        layer = layer.double().eval()
        q, k, v = (p + "attention." + n for n in ("q_lin", "k_lin", "v_lin"))
        layer.self_attn.in_proj_weight.copy_(torch.cat([W[q + ".weight"], W[k + ".weight"], W[v + ".weight"]]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([W[q + ".bias"], W[k + ".bias"], W[v + ".bias"]]))
        for module, name in ((layer.self_attn.out_proj, "attention.out_lin"), (layer.linear1, "ffn.lin1"),
                             (layer.linear2, "ffn.lin2"), (layer.norm1, "sa_layer_norm"),
                             (layer.norm2, "output_layer_norm")):
            module.weight.copy_(W[p + name + ".weight"])
            module.bias.copy_(W[p + name + ".bias"])
        x = layer(x)
    mine = distilbert_encode(cfg, W, ids, torch.ones_like(ids))
    check(results, "distilbert encoder == nn.TransformerEncoderLayer", torch.allclose(x, mine, atol=1e-10, rtol=0),
          "max diff %.3g" % (x - mine).abs().max().item())
    hub = reference("roberta-hub", os.path.join(tmp, "roberta-hub"), selftest_inputs("roberta"))
    plain = reference("roberta", os.path.join(tmp, "roberta"), selftest_inputs("roberta"))
    check(results, "roberta == roberta-hub (same seed; pooler and tied copies unused)", same_outputs(hub, plain))



# ---------------------------------------------------------------------------------------------------------------
def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make", help="write a tiny random HF model directory")
    p.add_argument("arch", choices=ARCHS)
    p.add_argument("out_dir")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab", type=int, default=None, help="vocabulary size (default 97)")
    p.add_argument("--context", type=int, default=None, help="max_position_embeddings (Llama family)")
    p = sub.add_parser("logits", help="print float64 reference outputs as JSON")
    p.add_argument("arch", choices=ARCHS)
    p.add_argument("model_dir")
    p.add_argument("ids_json")
    p = sub.add_parser("compare", help="reference vs an lmzoo TorchScript export")
    p.add_argument("arch", choices=ARCHS)
    p.add_argument("model_dir")
    p.add_argument("torchscript")
    p.add_argument("ids_json")
    p.add_argument("--tol", type=float, default=1e-5)
    p = sub.add_parser("check-roundtrip", help="HF_DIR's tensors bit-for-bit in EXPORTED_DIR")
    p.add_argument("hf_dir")
    p.add_argument("exported_dir")
    p.add_argument("--allow-extra", action="store_true", help="extra tensors in EXPORTED_DIR are not a failure")
    p = sub.add_parser("greedy", help="greedy continuation ids of a decoder, as JSON")
    p.add_argument("arch", choices=ARCHS)
    p.add_argument("model_dir")
    p.add_argument("ids_json")
    p.add_argument("--new", type=int, default=20)
    sub.add_parser("selftest", help="check this file's writer, reader and reference passes")
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    if args.command == "make":
        make(args.arch, args.out_dir, args.seed, args.vocab, args.context)
        return 0
    if args.command == "logits":
        cmd_logits(args)
        return 0
    return {"compare": cmd_compare, "check-roundtrip": cmd_check_roundtrip, "selftest": cmd_selftest,
            "greedy": cmd_greedy}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
