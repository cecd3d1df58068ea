// BERT encoder (RoBERTa and DistilBERT shapes too): embeddings -> norm -> blocks (post- or pre-norm) -> MLM head / pooler; BERT init.
// Shapes: B batch, T positions, C d_model, V vocabulary, nh heads.
#include "models/bert.h"

#include <cmath>

namespace lmzoo {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// RoBERTa's position ids (position_offset > 0), as HF's create_position_ids_from_input_ids computes them from the
// pad ids: a real token reads row OFFSET + its index among its row's real tokens, a pad row OFFSET - 1 (HF's
// padding_idx). MASK (B, T), 1 = real, or undefined (all real). Returns (B, T) or (1, T) int64.
torch::Tensor offset_position_ids(const torch::Tensor& mask, int64_t T, int64_t offset, torch::Device device) {
  if (!mask.defined()) return torch::arange(offset, offset + T, torch::TensorOptions(torch::kLong).device(device)).unsqueeze(0);
  auto real = (mask != 0).to(torch::kLong);       // (B, T)
  return torch::cumsum(real, 1) * real + (offset - 1);  // (B, T)
}
}  // namespace

BertImpl::BertImpl(const ModelConfig& config) : config_(config) {
  config_.validate();
  const int64_t d = config.d_model;
  auto linear = [&](int64_t in, int64_t out, bool bias) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  };
  word_embeddings = register_module("word_embeddings", torch::nn::Embedding(config.padded_vocab(), d));
  const PositionScheme positions = position_scheme(config.position);
  if (positions.learned_table) {
    // RoBERTa keeps position_offset rows before position 0's (its padding row among them).
    position_embeddings = register_module("position_embeddings",
                                          torch::nn::Embedding(config.max_seq_len + config.position_offset, d));
  }
  if (positions.fixed_tables) position_tables = register_module("position_tables", PositionTables(config));
  if (positions.score_bias) attn_bias = register_module("attn_bias", AttentionBias(config, true, position_tables));
  if (config.type_vocab_size > 0) {  // DistilBERT has none
    token_type_embeddings = register_module("token_type_embeddings", torch::nn::Embedding(config.type_vocab_size, d));
  }
  emb_ln = register_module("emb_ln", make_norm(config));
  emb_dropout = register_module("emb_dropout", torch::nn::Dropout(config.dropout));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layer; ++i) h->push_back(TransformerBlock(config, position_tables));
  if (config.norm_position == NormPosition::kPre && config.final_norm) ln_f = register_module("ln_f", make_norm(config));
  mlm_dense = register_module("mlm_dense", linear(d, d, config.bias));
  mlm_ln = register_module("mlm_ln", make_norm(config));
  if (!config.tie_embeddings) mlm_decoder = register_module("mlm_decoder", linear(d, config.padded_vocab(), false));
  mlm_bias = register_parameter("mlm_bias", torch::zeros({config.padded_vocab()}));
  pooler = register_module("pooler", linear(d, d, config.bias));
  init_weights();
}

// BERT: every matrix N(0, 0.02), biases 0, norm gains 1. init "gpt2" also scales the residual
// output projections (c_proj) by 1/sqrt(2 * n_layer).
void BertImpl::init_weights() {
  torch::NoGradGuard no_grad;
  const double residual_std = config_.init == InitScheme::kGpt2 ? 0.02 / std::sqrt(2.0 * config_.n_layer) : 0.02;
  for (auto& item : named_parameters()) {
    auto& p = item.value();
    if (ends_with(item.key(), "rel_bias.weight")) {
      p.normal_(0.0, 1.0 / std::sqrt(double(config_.d_model)));  // T5's relative bias init
    } else if (p.dim() >= 2) {
      p.normal_(0.0, ends_with(item.key(), "c_proj.weight") ? residual_std : 0.02);
    } else if (!ends_with(item.key(), "weight")) {
      p.zero_();  // biases; the only 1-D weights are norm gains, left at 1
    }
  }
}

torch::Tensor BertImpl::hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                      const torch::Tensor& token_type_ids) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be (B, T), got ", input_ids.sizes());
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  TORCH_CHECK(T <= config_.max_seq_len, "sequence length ", T, " exceeds the model's maximum ", config_.max_seq_len);
  TORCH_CHECK(!attention_mask.defined() || attention_mask.sizes() == input_ids.sizes(),
              "attention_mask must match input_ids ", input_ids.sizes(), ", got ", attention_mask.sizes());
  // (B, T, C). Vaswani et al.: a sinusoid is added to token embeddings scaled by sqrt(C).
  torch::Tensor x;
  if (config_.position_offset > 0) {
    const auto ids = offset_position_ids(attention_mask, T, config_.position_offset, input_ids.device());
    x = word_embeddings(input_ids) + position_embeddings(ids);  // (B, T, C)
  } else {
    x = add_position_encoding(config_.position, word_embeddings(input_ids), position_embeddings, position_tables, 0,
                              std::sqrt(double(config_.d_model)));
  }
  if (token_type_ids.defined()) {
    TORCH_CHECK(token_type_ids.sizes() == input_ids.sizes(), "token_type_ids must match input_ids ",
                input_ids.sizes(), ", got ", token_type_ids.sizes());
  }
  // One token type (RoBERTa) or none (DistilBERT): segment ids are ignored, as HF's tokenizers give them all 0.
  if (token_type_ids.defined() && config_.type_vocab_size > 1) {
    x = x + token_type_embeddings(token_type_ids);  // (B, T, C)
  } else if (config_.type_vocab_size > 0) {
    x = x + token_type_embeddings->weight[0];  // (C) broadcast: every token of type 0
  }
  x = emb_dropout(emb_ln(x));
  torch::Tensor blocked;  // undefined: attend everywhere
  if (attention_mask.defined()) {
    blocked = (attention_mask == 0).view({B, 1, 1, T});  // (B, 1, 1, T): pad keys, for every head and query
  }
  // alibi / relative: (1, nh, T, T) score bias; undefined otherwise.
  auto position_bias = attn_bias ? attn_bias(T, T, 0, input_ids.device()) : torch::Tensor();
  for (size_t i = 0; i < h->size(); ++i) x = run_block(i, x, blocked, position_bias);
  return ln_f ? ln_f(x) : x;
}

torch::Tensor BertImpl::run_block(size_t i, const torch::Tensor& x, const torch::Tensor& blocked,
                                  const torch::Tensor& position_bias) {
  auto block = h->ptr<TransformerBlockImpl>(i);
  const AttentionMask mask{blocked, false};
  if (!is_training() || !checkpointing_.covers(int64_t(i))) return block->forward(x, mask, nullptr, position_bias);
  // inputs: x, then the position bias when there is one (relative positions compute it from parameters).
  auto run = [block, mask](const std::vector<torch::Tensor>& in) {
    return block->forward(in[0], mask, nullptr, in.size() > 1 ? in[1] : torch::Tensor());
  };
  return checkpointed(run, position_bias.defined() ? std::vector<torch::Tensor>{x, position_bias}
                                                   : std::vector<torch::Tensor>{x},
                      block->parameters());
}

torch::Tensor BertImpl::mlm_transform(const torch::Tensor& hidden) {
  return mlm_ln(apply_activation(mlm_dense(hidden), config_.activation));  // (B, T, C)
}

torch::Tensor BertImpl::mlm_logits(const torch::Tensor& hidden) {
  auto x = mlm_transform(hidden);                                             // (B, T, C)
  auto logits = torch::matmul(x, decoder_weight().t()) + mlm_bias;            // (B, T, padded V)
  if (config_.padded_vocab() == config_.vocab_size) return logits;
  return logits.narrow(-1, 0, config_.vocab_size).contiguous();  // (B, T, V)
}

torch::Tensor BertImpl::pool(const torch::Tensor& hidden) {
  return torch::tanh(pooler(hidden.select(1, 0)));  // (B, C) from [CLS]
}

torch::Tensor BertImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                const torch::Tensor& token_type_ids) {
  return mlm_logits(hidden_states(input_ids, attention_mask, token_type_ids));
}

torch::Tensor BertImpl::pooled(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                               const torch::Tensor& token_type_ids) {
  return pool(hidden_states(input_ids, attention_mask, token_type_ids));
}

}  // namespace lmzoo
