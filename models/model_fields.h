// ModelConfig's fields, each declared once: FIELD(type, name, default, flag, shape, help). The struct
// (config.h), its JSON (config.cpp) and lmzoo train's model flags with their help (tools/cli/cmd_train.cpp) are all
// generated from this list. flag: the command-line name ("": no flag of its own); shape: whether the flag changes
// the model's tensors (refused when fine-tuning an --init checkpoint); help: an expression giving --help's text,
// evaluated only where flags are built. The order is --help's.
#pragma once

#define LMZOO_MODEL_CONFIG_FIELDS(FIELD)                                                                              \
  /* 2: T5 fields; 3: variant fields, d_ff 0 meaning 8/3 d_model for gated feed-forwards. Older files load. */      \
  FIELD(int, format_version, kModelConfigFormatVersion, "", false, "")                                                \
  FIELD(Arch, arch, Arch::kGpt, "", false, "")                                                                        \
  FIELD(int64_t, vocab_size, 0, "", false, "") /* 0: taken from the tokenizer */                                      \
  FIELD(int64_t, n_layer, 4, "n-layer", true, "number of blocks (t5: both stacks unless --n-decoder-layer is given)") \
  FIELD(int64_t, n_decoder_layer, 0, "n-decoder-layer", true, "t5: decoder blocks")                                   \
  FIELD(int64_t, n_head, 4, "n-head", true, "attention heads (t5: head size becomes d_model / n_head)")                \
  FIELD(int64_t, d_model, 128, "d-model", true,                                                                        \
        "model width (the feed-forward width is derived again unless --d-ff is given; t5: head size d_model / n_head)") \
  FIELD(int64_t, max_seq_len, 64, "seq-len", true,                                                                     \
        "context length (t5: encoder input length of span corruption, prefix window, pair cut-off)")                   \
  FIELD(int64_t, n_kv_heads, 0, "n-kv-heads", true,                                                                    \
        "key/value heads: grouped-query attention (must divide n_head; 1: multi-query; default n_head)")               \
  FIELD(int64_t, d_ff, 0, "d-ff", true,                                                                                \
        "feed-forward width (default 4 * d_model; 8/3 * d_model rounded up to 64 for swiglu|geglu)")                   \
  FIELD(Position, position, Position::kLearned, "position", true, enum_choices<Position>() + " (t5: relative)")       \
  FIELD(double, rope_base, 10000.0, "rope-base", true, "rope: frequency base")                                        \
  FIELD(double, rope_fraction, 1.0, "rope-fraction", true,                                                             \
        "rope: fraction of each head's dimensions rotated, the rest pass through (GPT-NeoX / Pythia: 0.25)")          \
  FIELD(NormKind, norm, NormKind::kLayerNorm, "norm", true, enum_choices<NormKind>())                                 \
  FIELD(NormPosition, norm_position, NormPosition::kPre, "norm-position", true, enum_help<NormPosition>())            \
  FIELD(double, norm_eps, 1e-5, "norm-eps", true, "epsilon of the norms")                                              \
  FIELD(bool, final_norm, true, "final-norm", true, "a norm after the last block (--final-norm=false: none)")          \
  /* Gated (geglu: T5 v1.1's "gated-gelu", swiglu): act(c_fc x) * c_fc_lin x -> c_proj. */                            \
  FIELD(Activation, activation, Activation::kGelu, "activation", true, enum_choices<Activation>())                    \
  FIELD(bool, tie_embeddings, true, "tie-embeddings", true,                                                           \
        "output head shares the token embeddings (--tie-embeddings=false: untied)")                                    \
  FIELD(int64_t, vocab_multiple, 1, "vocab-multiple", true,                                                           \
        "pad embedding and output rows to a multiple of this (e.g. 64) for speed; the vocabulary stays the "           \
        "tokenizer's")                                                                                                 \
  FIELD(double, dropout, 0.0, "dropout", false, "attention, residual and embedding dropout probability")              \
  FIELD(bool, bias, false, "bias", true, "biases in linear layers and norms (--bias=false: none)")                    \
  FIELD(bool, qkv_bias, false, "qkv-bias", true, "gpt: biases on the query/key/value projection even without --bias (Qwen2)") \
  FIELD(bool, parallel_residual, false, "parallel-residual", true,                                                     \
        "gpt: x + attn(ln_1 x) + mlp(ln_2 x) in each block, both sublayers reading the block input (GPT-NeoX, GPT-J)") \
  FIELD(int64_t, attention_window, 0, "attention-window", true,                                                        \
        "gpt: each position attends to at most this many positions, itself included (Mistral's sliding window; "     \
        "0: the whole context)")                                                                                       \
  /* Per-head size (T5's d_kv); 0: d_model / n_head. Other values: t5 only. */                                        \
  FIELD(int64_t, head_dim, 0, "", false, "")                                                                          \
  FIELD(int64_t, type_vocab_size, 2, "", false, "") /* bert: token-type (segment) embeddings; 0: none (DistilBERT) */ \
  /* bert, learned positions: table rows before position 0's (RoBERTa: pad_token_id + 1), kept so HF's table fits */ \
  FIELD(int64_t, position_offset, 0, "", false, "")                                                                   \
  FIELD(int64_t, relative_buckets, 32, "", false, "") /* relative position buckets (t5) */                            \
  FIELD(int64_t, relative_max_distance, 128, "", false, "") /* distances from here on share the last bucket */        \
  FIELD(InitScheme, init, InitScheme::kGpt2, "", false, "") /* lmzoo train --init: a scheme or a checkpoint */        \
  FIELD(std::vector<std::string>, labels, {}, "", false, "") /* bert: non-empty makes a sequence classifier */
