// GPT-style decoder-only model with GPT-2 initialisation (scaled residual projections).
// Shapes: B batch, T new positions, P cached positions, C d_model, V vocabulary.
#include "models/gpt.h"

#include <cmath>

#include "models/kernels/linear_kernel.h"

namespace lmzoo {

GPTImpl::GPTImpl(const ModelConfig& config) : config_(config) {
  config_.validate();
  wte = register_module("wte", torch::nn::Embedding(config.padded_vocab(), config.d_model));
  const PositionScheme positions = position_scheme(config.position);
  if (positions.learned_table) wpe = register_module("wpe", torch::nn::Embedding(config.max_seq_len, config.d_model));
  if (positions.fixed_tables) position_tables = register_module("position_tables", PositionTables(config));
  if (positions.score_bias) attn_bias = register_module("attn_bias", AttentionBias(config, false, position_tables));
  emb_dropout = register_module("emb_dropout", torch::nn::Dropout(config.dropout));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layer; ++i) h->push_back(TransformerBlock(config, position_tables));
  if (config.final_norm) ln_f = register_module("ln_f", make_norm(config));
  if (!config.tie_embeddings) {
    lm_head = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.padded_vocab()).bias(false)));
  }
  init_weights();
}

void GPTImpl::init_weights() {
  torch::NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * config_.n_layer);
  for (auto& item : named_parameters()) {
    const auto& name = item.key();
    auto& p = item.value();
    if (p.dim() < 2) continue;  // norm weights stay 1, biases 0 from their constructors
    if (name.find("rel_bias") != std::string::npos) {
      p.normal_(0.0, 1.0 / std::sqrt(double(config_.d_model)));  // T5's relative bias init
      continue;
    }
    const bool residual_projection = config_.init == InitScheme::kGpt2 && name.size() > 13 &&
                                     name.compare(name.size() - 13, 13, "c_proj.weight") == 0;
    p.normal_(0.0, residual_projection ? residual_std : 0.02);
  }
  for (auto& b : named_parameters()) {
    if (b.key().size() > 5 && b.key().compare(b.key().size() - 5, 5, ".bias") == 0 &&
        b.key().find("ln_") == std::string::npos) {
      b.value().zero_();
    }
  }
}

namespace {

// (B, T) int64: each token's distance from the first token of its segment (a run of equal ids in a row).
torch::Tensor positions_in_segments(const torch::Tensor& segment_ids) {
  const int64_t T = segment_ids.size(1);
  auto index = torch::arange(T, segment_ids.options()).expand_as(segment_ids);  // (B, T)
  auto starts = torch::ones_like(segment_ids, torch::kBool);                     // (B, T): true where one begins
  if (T > 1) starts.slice(1, 1) = segment_ids.slice(1, 1) != segment_ids.slice(1, 0, T - 1);
  auto segment_start = std::get<0>(torch::cummax(torch::where(starts, index, torch::zeros_like(index)), 1));
  return index - segment_start;
}

}  // namespace

torch::Tensor GPTImpl::blocked_keys(int64_t P, int64_t T, const torch::Device& device) const {
  const auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto query = torch::arange(P, P + T, options).view({T, 1});  // (T, 1) positions of the new tokens
  auto key = torch::arange(P + T, options).view({1, P + T});   // (1, P+T) positions of every key
  auto blocked = key > query;                                  // (T, P+T): the future
  if (config_.attention_window > 0) blocked = blocked | (key <= query - config_.attention_window);
  return blocked;
}

torch::Tensor GPTImpl::hidden_states(const torch::Tensor& idx, KVCache* cache, const torch::Tensor& prefix_len,
                                     const torch::Tensor& segment_ids) {
  const int64_t T = idx.size(1);
  const int64_t P = cache && !cache->empty() ? (*cache)[0].length() : 0;
  TORCH_CHECK(P + T <= config_.max_seq_len, "sequence length ", P + T, " exceeds the model's context length ",
              config_.max_seq_len);
  TORCH_CHECK(!segment_ids.defined() || (cache == nullptr && !prefix_len.defined()),
              "segment ids cannot be combined with a KV cache or a prefix");
  const torch::Tensor positions = segment_ids.defined() ? positions_in_segments(segment_ids) : torch::Tensor();
  // (B, T, C). Vaswani et al.: a sinusoid is added to token embeddings scaled by sqrt(C).
  auto x = add_position_encoding(config_.position, wte(idx), wpe, position_tables, P,
                                 std::sqrt(double(config_.d_model)), positions);
  x = emb_dropout(x);
  auto blocked = blocked_keys(P, T, idx.device());  // (T, P+T)
  if (prefix_len.defined()) {
    TORCH_CHECK(P == 0, "prefix-LM attention cannot be combined with a KV cache");
    auto pos = torch::arange(T, idx.options());
    auto key_in_prefix = pos.view({1, 1, T}) < prefix_len.view({-1, 1, 1});    // (B, 1, T)
    auto query_in_prefix = pos.view({1, T, 1}) < prefix_len.view({-1, 1, 1});  // (B, T, 1)
    blocked = (blocked.unsqueeze(0) & ~(key_in_prefix & query_in_prefix)).unsqueeze(1);  // (B, 1, T, T)
  }
  if (segment_ids.defined()) {
    auto other_segment = segment_ids.unsqueeze(2) != segment_ids.unsqueeze(1);  // (B, T, T)
    blocked = (blocked.unsqueeze(0) | other_segment).unsqueeze(1);             // (B, 1, T, T)
  }
  // alibi / relative: (1, nh, T, P+T) score bias; undefined otherwise. Both depend on query - key only, which
  // within a segment is the same as between the segment's own positions.
  auto position_bias = attn_bias ? attn_bias(T, P + T, P, idx.device()) : torch::Tensor();
  const bool window_open = config_.attention_window == 0 || T <= config_.attention_window;
  const AttentionMask mask{blocked, /*causal=*/P == 0 && !prefix_len.defined() && !segment_ids.defined() && window_open,
                           positions};
  for (size_t i = 0; i < h->size(); ++i) x = run_block(i, x, mask, cache ? &(*cache)[i] : nullptr, position_bias);
  return ln_f ? ln_f(x) : x;
}

torch::Tensor GPTImpl::run_block(size_t i, const torch::Tensor& x, const AttentionMask& mask, LayerKVCache* cache,
                                 const torch::Tensor& position_bias) {
  auto block = h->ptr<TransformerBlockImpl>(i);
  if (cache || !is_training() || !checkpointing_.covers(int64_t(i))) return block->forward(x, mask, cache, position_bias);
  // inputs: x, then the position bias when there is one (relative positions compute it from parameters).
  auto run = [block, mask](const std::vector<torch::Tensor>& in) {
    return block->forward(in[0], mask, nullptr, in.size() > 1 ? in[1] : torch::Tensor());
  };
  return checkpointed(run, position_bias.defined() ? std::vector<torch::Tensor>{x, position_bias}
                                                   : std::vector<torch::Tensor>{x},
                      block->parameters());
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx, KVCache* cache, const torch::Tensor& prefix_len,
                               const torch::Tensor& segment_ids) {
  auto x = hidden_states(idx, cache, prefix_len, segment_ids);  // (B, T, C)
  auto logits = fast_linear(x, lm_head_weight());   // (B, T, padded V)
  if (config_.padded_vocab() == config_.vocab_size) return logits;
  return logits.narrow(-1, 0, config_.vocab_size).contiguous();  // (B, T, V)
}

}  // namespace lmzoo
