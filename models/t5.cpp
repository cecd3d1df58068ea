// T5 encoder-decoder with HF T5PreTrainedModel._init_weights (factor 1.0): q scaled by (d * hs)^-0.5,
// which stands in for the missing 1/sqrt(hs) on the scores.
// Shapes: B batch, S encoder positions, T decoder positions, P cached decoder positions, C d_model,
// nh heads, V vocabulary.
#include "models/t5.h"

#include <cmath>

namespace lmzoo {

T5StackImpl::T5StackImpl(const ModelConfig& config, bool decoder) : decoder_(decoder), position_(config.position) {
  const PositionScheme positions = position_scheme(config.position);
  if (positions.fixed_tables) position_tables = register_module("position_tables", PositionTables(config));
  h = register_module("h", torch::nn::ModuleList());
  const int64_t n = decoder ? config.decoder_layers() : config.n_layer;
  for (int64_t i = 0; i < n; ++i) {
    if (decoder) {
      h->push_back(DecoderBlock(config, position_tables));
    } else {
      h->push_back(TransformerBlock(config, position_tables));
    }
  }
  // A score bias is one module per stack. HF's T5 names its relative table stack.rel_bias (no AttentionBias around
  // it): that layout is kept for that scheme.
  if (positions.score_bias && config.position == Position::kRelative) {
    rel_bias = register_module("rel_bias", RelativePositionBias(config.n_head, config.relative_buckets,
                                                                config.relative_max_distance, !decoder));
  } else if (positions.score_bias) {
    attn_bias = register_module("attn_bias", AttentionBias(config, !decoder, position_tables));
  }
  if (positions.learned_table) wpe = register_module("wpe", torch::nn::Embedding(config.max_seq_len, config.d_model));
  table_length_ = positions.bounded_by_table ? config.max_seq_len : 0;
  if (config.final_norm) ln_f = register_module("ln_f", make_norm(config));
  dropout = register_module("dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor T5StackImpl::forward(const torch::Tensor& x, const torch::Tensor& blocked, const torch::Tensor& memory,
                                   const torch::Tensor& memory_blocked, T5Cache* cache) {
  const int64_t T = x.size(1), P = cache ? cache->length() : 0;
  TORCH_CHECK(table_length_ == 0 || P + T <= table_length_, (decoder_ ? "decoder" : "encoder"), " length ", P + T,
              " exceeds the ", table_length_, " positions of the model (max_seq_len)");
  // relative / alibi: (1, nh, T, P+T) score bias; undefined otherwise.
  torch::Tensor position_bias = rel_bias    ? rel_bias(T, P + T, P)
                                : attn_bias ? attn_bias(T, P + T, P, x.device())
                                            : torch::Tensor();
  // T5's token embeddings are N(0, 1) already: a sinusoid is added unscaled.
  auto y = dropout(add_position_encoding(position_, x, wpe, position_tables, P, 1.0));  // (B, T, C)
  if (!decoder_) {
    for (size_t i = 0; i < h->size(); ++i) {
      y = checkpoints(i, cache) ? checkpointed_encoder_block(i, y, blocked, position_bias)
                                : h->at<TransformerBlockImpl>(i).forward(y, {blocked, false}, nullptr, position_bias);
    }
    return dropout(ln_f ? ln_f(y) : y);
  }
  auto options = torch::TensorOptions().dtype(torch::kLong).device(x.device());
  auto causal = torch::arange(P, P + T, options).view({T, 1}) < torch::arange(P + T, options).view({1, P + T});
  const AttentionMask self_mask{blocked.defined() ? (causal | blocked) : causal,  // (T, P+T) or broadcast
                                /*causal=*/P == 0 && !blocked.defined()};
  for (size_t i = 0; i < h->size(); ++i) {
    y = checkpoints(i, cache)
            ? checkpointed_decoder_block(i, y, self_mask, position_bias, memory, memory_blocked)
            : h->at<DecoderBlockImpl>(i).forward(y, self_mask, position_bias, memory, memory_blocked,
                                                 cache ? &cache->self[i] : nullptr, cache ? &cache->cross[i] : nullptr);
  }
  return dropout(ln_f ? ln_f(y) : y);
}

bool T5StackImpl::checkpoints(size_t block, const T5Cache* cache) const {
  return !cache && is_training() && checkpointing_.covers(int64_t(block));
}

// Inputs of the checkpointed blocks: y, then the position bias when there is one (the relative bias comes from
// rel_bias's parameters); the decoder's also the encoder output (memory) after y. Masks stay in the closures.
torch::Tensor T5StackImpl::checkpointed_encoder_block(size_t i, const torch::Tensor& y, const torch::Tensor& blocked,
                                                      const torch::Tensor& position_bias) {
  auto block = h->ptr<TransformerBlockImpl>(i);
  auto run = [block, blocked](const std::vector<torch::Tensor>& in) {
    return block->forward(in[0], {blocked, false}, nullptr, in.size() > 1 ? in[1] : torch::Tensor());
  };
  return checkpointed(run, position_bias.defined() ? std::vector<torch::Tensor>{y, position_bias}
                                                   : std::vector<torch::Tensor>{y},
                      block->parameters());
}

torch::Tensor T5StackImpl::checkpointed_decoder_block(size_t i, const torch::Tensor& y, const AttentionMask& self_mask,
                                                      const torch::Tensor& position_bias, const torch::Tensor& memory,
                                                      const torch::Tensor& memory_blocked) {
  auto block = h->ptr<DecoderBlockImpl>(i);
  auto run = [block, self_mask, memory_blocked](const std::vector<torch::Tensor>& in) {
    return block->forward(in[0], self_mask, in.size() > 2 ? in[2] : torch::Tensor(), in[1], memory_blocked);
  };
  return checkpointed(run, position_bias.defined() ? std::vector<torch::Tensor>{y, memory, position_bias}
                                                   : std::vector<torch::Tensor>{y, memory},
                      block->parameters());
}

T5Impl::T5Impl(const ModelConfig& config) : config_(config) {
  config_.validate();
  TORCH_CHECK(config_.arch == Arch::kT5, "T5 needs a config with arch t5, got ", enum_name(config_.arch));
  shared = register_module("shared", torch::nn::Embedding(config.padded_vocab(), config.d_model));
  encoder = register_module("encoder", T5Stack(config, false));
  decoder = register_module("decoder", T5Stack(config, true));
  if (!config.tie_embeddings) {
    lm_head = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.padded_vocab()).bias(false)));
  }
  init_weights();
}

// HF T5PreTrainedModel._init_weights with factor 1.0: embeddings and the untied head N(0, 1); q
// N(0, (d * hs)^-0.5); k, v N(0, d^-0.5); attention outputs N(0, (nh * hs)^-0.5); relative bias N(0, d^-0.5);
// FFN inputs N(0, d^-0.5), output N(0, ff^-0.5); norm gains 1, biases (if any) 0.
void T5Impl::init_weights() {
  torch::NoGradGuard no_grad;
  const double d = double(config_.d_model), a = double(config_.attn_dim()), ff = double(config_.ff_dim());
  const int64_t A = config_.attn_dim();
  const double q_std = 1.0 / std::sqrt(d * config_.head_size()), in_std = 1.0 / std::sqrt(d);
  const double out_std = 1.0 / std::sqrt(a), ff_out_std = 1.0 / std::sqrt(ff);
  auto init_linear = [](torch::nn::Linear& l, double std) {
    if (!l) return;
    l->weight.normal_(0.0, std);
    if (l->bias.defined()) l->bias.zero_();
  };
  auto init_self = [&](SelfAttention& attn) {
    init_linear(attn->c_attn, in_std);
    attn->c_attn->weight.slice(0, 0, A).normal_(0.0, q_std);  // rows [q; k; v]
    init_linear(attn->c_proj, out_std);
  };
  auto init_mlp = [&](FeedForward& mlp) {
    init_linear(mlp->c_fc, in_std);
    init_linear(mlp->c_fc_lin, in_std);
    init_linear(mlp->c_proj, ff_out_std);
  };
  shared->weight.normal_(0.0, 1.0);
  if (lm_head) lm_head->weight.normal_(0.0, 1.0);
  for (auto* stack : {encoder.get(), decoder.get()}) {
    if (stack->rel_bias) stack->rel_bias->weight.normal_(0.0, in_std);
    if (stack->wpe) stack->wpe->weight.normal_(0.0, 1.0);  // as the token embeddings
    for (size_t i = 0; i < stack->h->size(); ++i) {
      if (auto* block = stack->h[i]->as<TransformerBlockImpl>()) {
        init_self(block->attn);
        init_mlp(block->mlp);
      } else if (auto* block = stack->h[i]->as<DecoderBlockImpl>()) {
        init_self(block->attn);
        init_linear(block->cross_attn->c_q, q_std);
        init_linear(block->cross_attn->c_kv, in_std);
        init_linear(block->cross_attn->c_proj, out_std);
        init_mlp(block->mlp);
      }
    }
  }
  // Norm gains stay 1 and biases 0 from their constructors.
}

T5Cache T5Impl::new_cache() const {
  T5Cache cache;
  cache.self.resize(config_.decoder_layers());
  cache.cross.resize(config_.decoder_layers());
  return cache;
}

void T5Impl::set_activation_checkpointing(CheckpointPolicy policy) {
  encoder->set_activation_checkpointing(policy);
  decoder->set_activation_checkpointing(policy);
}

torch::Tensor T5Impl::memory_blocked(const torch::Tensor& attention_mask, int64_t batch, int64_t length) const {
  if (!attention_mask.defined()) return torch::Tensor();  // attend everywhere
  TORCH_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == batch && attention_mask.size(1) == length,
              "attention_mask must be (B, S) = (", batch, ", ", length, "), got ", attention_mask.sizes());
  return (attention_mask == 0).view({batch, 1, 1, length});  // (B, 1, 1, S): pad keys, every head and query
}

torch::Tensor T5Impl::encode(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be (B, S), got ", input_ids.sizes());
  auto x = shared(input_ids);  // (B, S, C)
  return encoder(x, memory_blocked(attention_mask, input_ids.size(0), input_ids.size(1)));
}

torch::Tensor T5Impl::decoder_hidden_states(const torch::Tensor& decoder_input_ids,
                                            const torch::Tensor& encoder_hidden,
                                            const torch::Tensor& attention_mask, T5Cache* cache) {
  TORCH_CHECK(decoder_input_ids.dim() == 2, "decoder_input_ids must be (B, T), got ", decoder_input_ids.sizes());
  torch::Tensor memory = encoder_hidden;
  if (cache) {
    TORCH_CHECK(cache->self.size() == size_t(config_.decoder_layers()) && cache->cross.size() == cache->self.size(),
                "T5 cache has ", cache->self.size(), " layers, the decoder ", config_.decoder_layers(),
                " (use new_cache())");
    if (cache->encoder_hidden.defined()) {
      TORCH_CHECK(!encoder_hidden.defined() || encoder_hidden.is_same(cache->encoder_hidden),
                  "this T5 cache belongs to another encoder output; start a new cache");
      memory = cache->encoder_hidden;
    } else {
      TORCH_CHECK(encoder_hidden.defined(), "the first decode() with a new cache needs the encoder output");
      cache->encoder_hidden = encoder_hidden;
    }
  }
  TORCH_CHECK(memory.defined() && memory.dim() == 3, "encoder_hidden must be (B, S, C)");
  auto x = shared(decoder_input_ids);  // (B, T, C)
  return decoder(x, torch::Tensor(), memory, memory_blocked(attention_mask, memory.size(0), memory.size(1)), cache);
}

torch::Tensor T5Impl::lm_head_input(const torch::Tensor& hidden) const {
  // Tied: rescale so the N(0, 1) embedding matrix gives logits of unit scale (Mesh TensorFlow).
  return lm_head ? hidden : hidden * std::pow(double(config_.d_model), -0.5);  // (B, T, C)
}

torch::Tensor T5Impl::lm_logits(const torch::Tensor& hidden) {
  auto x = lm_head_input(hidden);                                                  // (B, T, C)
  auto logits = torch::matmul(x, lm_head_weight().t());                           // (B, T, padded V)
  if (config_.padded_vocab() == config_.vocab_size) return logits;
  return logits.narrow(-1, 0, config_.vocab_size).contiguous();  // (B, T, V)
}

torch::Tensor T5Impl::decode(const torch::Tensor& decoder_input_ids, const torch::Tensor& encoder_hidden,
                             const torch::Tensor& attention_mask, T5Cache* cache) {
  return lm_logits(decoder_hidden_states(decoder_input_ids, encoder_hidden, attention_mask, cache));
}

torch::Tensor T5Impl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                              const torch::Tensor& decoder_input_ids) {
  return decode(decoder_input_ids, encode(input_ids, attention_mask), attention_mask);
}

}  // namespace lmzoo
