// The name tables of GPT-2, BERT, T5, Llama (with Qwen2 and Mistral) and GPT-NeoX, and the copies through them in
// both directions.
#include "models/hf_weights.h"

#include <set>
#include <sstream>

namespace lmzoo {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(torch::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

// Appends rules for a linear layer: weight (and bias when the model has biases).
class RuleList {
 public:
  explicit RuleList(bool bias) : bias_(bias) {}

  void linear(const std::string& lmzoo, const std::string& hf, HfLayout layout = HfLayout::kSame) {
    rules_.push_back({lmzoo + ".weight", {hf + ".weight"}, {}, layout});
    if (bias_) rules_.push_back({lmzoo + ".bias", {hf + ".bias"}, {}, layout});  // 1-D: Conv1D leaves it as it is
  }
  // A fused lmzoo linear layer whose output rows are the HF layers' outputs, in order (biases: when the model has
  // them, or where BIAS says so).
  void fused(const std::string& lmzoo, const std::vector<std::string>& hf, const std::vector<int64_t>& rows,
             bool bias = false) {
    std::vector<std::string> weights, biases;
    for (const auto& name : hf) {
      weights.push_back(name + ".weight");
      biases.push_back(name + ".bias");
    }
    rules_.push_back({lmzoo + ".weight", weights, rows, HfLayout::kSame});
    if (bias_ || bias) rules_.push_back({lmzoo + ".bias", biases, rows, HfLayout::kSame});
  }
  void norm(const std::string& lmzoo, const std::string& hf) { linear(lmzoo, hf); }
  void norm_without_bias(const std::string& lmzoo, const std::string& hf) { tensor(lmzoo + ".weight", hf + ".weight"); }
  void tensor(const std::string& lmzoo, const std::string& hf) { rules_.push_back({lmzoo, {hf}, {}, HfLayout::kSame}); }
  void mark_optional_from(size_t first) {
    for (size_t i = first; i < rules_.size(); ++i) rules_[i].optional = true;
  }
  size_t size() const { return rules_.size(); }
  std::vector<HfWeightRule> take() { return std::move(rules_); }

 private:
  bool bias_;
  std::vector<HfWeightRule> rules_;
};

std::vector<HfWeightRule> gpt2_rules(const ModelConfig& c) {
  RuleList r(true);
  r.tensor("wte.weight", "transformer.wte.weight");
  r.tensor("wpe.weight", "transformer.wpe.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "transformer.h." + std::to_string(i) + ".";
    r.norm(l + "ln_1", hf + "ln_1");
    r.linear(l + "attn.c_attn", hf + "attn.c_attn", HfLayout::kConv1D);
    r.linear(l + "attn.c_proj", hf + "attn.c_proj", HfLayout::kConv1D);
    r.norm(l + "ln_2", hf + "ln_2");
    r.linear(l + "mlp.c_fc", hf + "mlp.c_fc", HfLayout::kConv1D);
    r.linear(l + "mlp.c_proj", hf + "mlp.c_proj", HfLayout::kConv1D);
  }
  r.norm("ln_f", "transformer.ln_f");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

// Llama and its kin with Llama's names: Qwen2 (q/k/v biases), Mistral.
std::vector<HfWeightRule> llama_rules(const ModelConfig& c) {
  RuleList r(c.bias);
  r.tensor("wte.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "model.layers." + std::to_string(i) + ".";
    r.norm_without_bias(l + "ln_1", hf + "input_layernorm");
    r.fused(l + "attn.c_attn", {hf + "self_attn.q_proj", hf + "self_attn.k_proj", hf + "self_attn.v_proj"},
            {c.attn_dim(), c.kv_dim(), c.kv_dim()}, c.qkv_bias);
    r.linear(l + "attn.c_proj", hf + "self_attn.o_proj");
    r.norm_without_bias(l + "ln_2", hf + "post_attention_layernorm");
    r.linear(l + "mlp.c_fc", hf + "mlp.gate_proj");
    r.linear(l + "mlp.c_fc_lin", hf + "mlp.up_proj");
    r.linear(l + "mlp.c_proj", hf + "mlp.down_proj");
  }
  r.norm_without_bias("ln_f", "model.norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

// GPT-NeoX: LayerNorms with biases, query_key_value interleaved per head, untied embed_out unless tied.
std::vector<HfWeightRule> gpt_neox_rules(const ModelConfig& c) {
  RuleList r(true);
  r.tensor("wte.weight", "gpt_neox.embed_in.weight");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", hf = "gpt_neox.layers." + std::to_string(i) + ".";
    r.norm(l + "ln_1", hf + "input_layernorm");
    r.norm(l + "ln_2", hf + "post_attention_layernorm");
    r.linear(l + "attn.c_attn", hf + "attention.query_key_value", HfLayout::kHeadInterleavedQkv);
    r.linear(l + "attn.c_proj", hf + "attention.dense");
    r.linear(l + "mlp.c_fc", hf + "mlp.dense_h_to_4h");
    r.linear(l + "mlp.c_proj", hf + "mlp.dense_4h_to_h");
  }
  r.norm("ln_f", "gpt_neox.final_layer_norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "embed_out.weight");
  return r.take();
}

// BERT's encoder (+ pooler) with lmzoo names under LMZOO and HF names under HF ("bert." or "").
void bert_encoder_rules(RuleList& r, const ModelConfig& c, const std::string& lmzoo, const std::string& hf) {
  const std::string e = hf + "embeddings.";
  r.tensor(lmzoo + "word_embeddings.weight", e + "word_embeddings.weight");
  r.tensor(lmzoo + "position_embeddings.weight", e + "position_embeddings.weight");
  r.tensor(lmzoo + "token_type_embeddings.weight", e + "token_type_embeddings.weight");
  r.norm(lmzoo + "emb_ln", e + "LayerNorm");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = lmzoo + "h." + std::to_string(i) + ".", h = hf + "encoder.layer." + std::to_string(i) + ".";
    r.fused(l + "attn.c_attn", {h + "attention.self.query", h + "attention.self.key", h + "attention.self.value"},
            {c.attn_dim(), c.kv_dim(), c.kv_dim()});
    r.linear(l + "attn.c_proj", h + "attention.output.dense");
    r.norm(l + "ln_1", h + "attention.output.LayerNorm");
    r.linear(l + "mlp.c_fc", h + "intermediate.dense");
    r.linear(l + "mlp.c_proj", h + "output.dense");
    r.norm(l + "ln_2", h + "output.LayerNorm");
  }
}

std::vector<HfWeightRule> bert_rules(HfArchitecture a, const ModelConfig& c) {
  RuleList r(true);
  switch (a) {
    case HfArchitecture::kBertForMaskedLM: {
      bert_encoder_rules(r, c, "", "bert.");
      r.tensor("mlm_bias", "cls.predictions.bias");
      r.linear("mlm_dense", "cls.predictions.transform.dense");
      r.norm("mlm_ln", "cls.predictions.transform.LayerNorm");
      if (!c.tie_embeddings) r.tensor("mlm_decoder.weight", "cls.predictions.decoder.weight");
      const size_t pooler = r.size();
      r.linear("pooler", "bert.pooler.dense");  // in checkpoints trained with next-sentence prediction
      r.mark_optional_from(pooler);
      break;
    }
    case HfArchitecture::kBertModel:
      bert_encoder_rules(r, c, "", "");
      r.linear("pooler", "pooler.dense");
      break;
    case HfArchitecture::kBertForSequenceClassification:
      bert_encoder_rules(r, c, "bert.", "bert.");
      r.linear("bert.pooler", "bert.pooler.dense");
      r.linear("classifier", "classifier");
      break;
    default: throw std::logic_error("not a BERT architecture");
  }
  return r.take();
}

// --- RoBERTa and DistilBERT ---

// RobertaForMaskedLM: BERT's encoder under "roberta." (no pooler in this class; roberta-base's file holds one,
// imported when present, never exported), lm_head.{dense, layer_norm, bias} (decoder tied unless untied).
std::vector<HfWeightRule> roberta_rules(const ModelConfig& c) {
  RuleList r(true);
  bert_encoder_rules(r, c, "", "roberta.");
  r.linear("mlm_dense", "lm_head.dense");
  r.norm("mlm_ln", "lm_head.layer_norm");
  r.tensor("mlm_bias", "lm_head.bias");
  if (!c.tie_embeddings) r.tensor("mlm_decoder.weight", "lm_head.decoder.weight");
  const size_t pooler = r.size();
  r.linear("pooler", "roberta.pooler.dense");
  r.mark_optional_from(pooler);
  return r.take();
}

// DistilBertForMaskedLM: distilbert.embeddings (no token types), distilbert.transformer.layer.N with q/k/v_lin
// fused into c_attn, vocab_transform / vocab_layer_norm / vocab_projector (weight tied unless untied, bias).
std::vector<HfWeightRule> distilbert_rules(const ModelConfig& c) {
  RuleList r(true);
  const std::string e = "distilbert.embeddings.";
  r.tensor("word_embeddings.weight", e + "word_embeddings.weight");
  r.tensor("position_embeddings.weight", e + "position_embeddings.weight");
  r.norm("emb_ln", e + "LayerNorm");
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "h." + std::to_string(i) + ".", h = "distilbert.transformer.layer." + std::to_string(i) + ".";
    r.fused(l + "attn.c_attn", {h + "attention.q_lin", h + "attention.k_lin", h + "attention.v_lin"},
            {c.attn_dim(), c.kv_dim(), c.kv_dim()});
    r.linear(l + "attn.c_proj", h + "attention.out_lin");
    r.norm(l + "ln_1", h + "sa_layer_norm");
    r.linear(l + "mlp.c_fc", h + "ffn.lin1");
    r.linear(l + "mlp.c_proj", h + "ffn.lin2");
    r.norm(l + "ln_2", h + "output_layer_norm");
  }
  r.linear("mlm_dense", "vocab_transform");
  r.norm("mlm_ln", "vocab_layer_norm");
  r.tensor("mlm_bias", "vocab_projector.bias");
  if (!c.tie_embeddings) r.tensor("mlm_decoder.weight", "vocab_projector.weight");
  return r.take();
}

void t5_feed_forward_rules(RuleList& r, const ModelConfig& c, const std::string& l, const std::string& ff) {
  if (c.gated_ffn()) {
    r.linear(l + "mlp.c_fc", ff + "wi_0");
    r.linear(l + "mlp.c_fc_lin", ff + "wi_1");
  } else {
    r.linear(l + "mlp.c_fc", ff + "wi");
  }
  r.linear(l + "mlp.c_proj", ff + "wo");
}

std::vector<HfWeightRule> t5_rules(const ModelConfig& c) {
  RuleList r(false);
  r.tensor("shared.weight", "shared.weight");
  const std::vector<int64_t> qkv = {c.attn_dim(), c.kv_dim(), c.kv_dim()};
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string l = "encoder.h." + std::to_string(i) + ".", b = "encoder.block." + std::to_string(i) + ".";
    const std::string att = b + "layer.0.SelfAttention.";
    r.fused(l + "attn.c_attn", {att + "q", att + "k", att + "v"}, qkv);
    r.linear(l + "attn.c_proj", att + "o");
    if (i == 0) r.tensor("encoder.rel_bias.weight", att + "relative_attention_bias.weight");
    r.norm_without_bias(l + "ln_1", b + "layer.0.layer_norm");
    t5_feed_forward_rules(r, c, l, b + "layer.1.DenseReluDense.");
    r.norm_without_bias(l + "ln_2", b + "layer.1.layer_norm");
  }
  r.norm_without_bias("encoder.ln_f", "encoder.final_layer_norm");
  for (int64_t i = 0; i < c.decoder_layers(); ++i) {
    const std::string l = "decoder.h." + std::to_string(i) + ".", b = "decoder.block." + std::to_string(i) + ".";
    const std::string att = b + "layer.0.SelfAttention.", cross = b + "layer.1.EncDecAttention.";
    r.fused(l + "attn.c_attn", {att + "q", att + "k", att + "v"}, qkv);
    r.linear(l + "attn.c_proj", att + "o");
    if (i == 0) r.tensor("decoder.rel_bias.weight", att + "relative_attention_bias.weight");
    r.norm_without_bias(l + "ln_1", b + "layer.0.layer_norm");
    r.linear(l + "cross_attn.c_q", cross + "q");
    r.fused(l + "cross_attn.c_kv", {cross + "k", cross + "v"}, {c.kv_dim(), c.kv_dim()});
    r.linear(l + "cross_attn.c_proj", cross + "o");
    r.norm_without_bias(l + "ln_2", b + "layer.1.layer_norm");
    t5_feed_forward_rules(r, c, l, b + "layer.2.DenseReluDense.");
    r.norm_without_bias(l + "ln_3", b + "layer.2.layer_norm");
  }
  r.norm_without_bias("decoder.ln_f", "decoder.final_layer_norm");
  if (!c.tie_embeddings) r.tensor("lm_head.weight", "lm_head.weight");
  return r.take();
}

// The canonical name of a checkpoint tensor: gamma/beta as weight/bias, and the base-model prefix as
// save_pretrained writes it for ARCHITECTURE (checkpoints saved from the bare model lack it, and vice versa).
std::string canonical_name(HfArchitecture a, std::string name) {
  if (ends_with(name, ".gamma")) name = name.substr(0, name.size() - 6) + ".weight";
  if (ends_with(name, ".beta")) name = name.substr(0, name.size() - 5) + ".bias";
  auto encoder_part = [&](const std::string& n) {
    return starts_with(n, "embeddings.") || starts_with(n, "encoder.") || starts_with(n, "pooler.");
  };
  switch (a) {
    case HfArchitecture::kGpt2LMHeadModel:
      if (!starts_with(name, "transformer.") && !starts_with(name, "lm_head.")) name = "transformer." + name;
      break;
    case HfArchitecture::kBertForMaskedLM:
    case HfArchitecture::kBertForSequenceClassification:
      if (encoder_part(name)) name = "bert." + name;
      break;
    case HfArchitecture::kBertModel:
      if (starts_with(name, "bert.")) name = name.substr(5);
      break;
    case HfArchitecture::kLlamaForCausalLM:
    case HfArchitecture::kQwen2ForCausalLM:
    case HfArchitecture::kMistralForCausalLM:
      if (!starts_with(name, "model.") && !starts_with(name, "lm_head.")) name = "model." + name;
      break;
    case HfArchitecture::kGptNeoXForCausalLM:  // GPTNeoXModel's own files lack "gpt_neox."
      if (!starts_with(name, "gpt_neox.") && !starts_with(name, "embed_out.")) name = "gpt_neox." + name;
      break;
    case HfArchitecture::kT5ForConditionalGeneration: break;
    case HfArchitecture::kRobertaForMaskedLM:
      if (encoder_part(name)) name = "roberta." + name;
      break;
    case HfArchitecture::kDistilBertForMaskedLM:
      if (starts_with(name, "embeddings.") || starts_with(name, "transformer.")) name = "distilbert." + name;
      break;
  }
  return name;
}

// Checkpoint tensors that carry nothing lmzoo needs: buffers, tied copies, heads lmzoo does not have.
bool ignorable(HfArchitecture a, const ModelConfig& c, const std::string& name) {
  if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) {
    return a == HfArchitecture::kGpt2LMHeadModel;  // the causal-mask buffers of old GPT-2 files
  }
  if (ends_with(name, ".attention.bias") || ends_with(name, ".attention.masked_bias")) {
    return a == HfArchitecture::kGptNeoXForCausalLM;  // the causal-mask buffers of older GPT-NeoX files
  }
  if (ends_with(name, "embeddings.position_ids") || ends_with(name, "rotary_emb.inv_freq")) return true;
  if (a == HfArchitecture::kRobertaForMaskedLM) {  // lm_head.decoder.bias is lm_head.bias; the weight, tied
    return ends_with(name, "embeddings.token_type_ids") || name == "lm_head.decoder.bias" ||
           (c.tie_embeddings && name == "lm_head.decoder.weight");
  }
  if (a == HfArchitecture::kDistilBertForMaskedLM) return c.tie_embeddings && name == "vocab_projector.weight";
  if (starts_with(name, "cls.seq_relationship.")) return true;  // BERT's next-sentence head
  if (starts_with(name, "cls.")) return a != HfArchitecture::kBertForMaskedLM || name == "cls.predictions.decoder.bias" ||
                                        (c.tie_embeddings && name == "cls.predictions.decoder.weight");
  if (name == "encoder.embed_tokens.weight" || name == "decoder.embed_tokens.weight") return true;  // = shared
  if (name == "lm_head.weight") return c.tie_embeddings;
  if (name == "embed_out.weight") return a == HfArchitecture::kGptNeoXForCausalLM && c.tie_embeddings;
  return false;
}

// GPT-NeoX's per-head [q_h; k_h; v_h] rows <-> lmzoo's [q; k; v]: (n_head, 3, hs, ...) <-> (3, n_head, hs, ...) on
// dim 0, an exact permutation. A tensor of another row count is left as it is (the shape check names it).
torch::Tensor permute_qkv_rows(const torch::Tensor& t, const ModelConfig& c, bool to_lmzoo) {
  const int64_t nh = c.n_head, hs = c.head_size();
  if (t.dim() < 1 || t.size(0) != 3 * nh * hs) return t;
  std::vector<int64_t> grouped = to_lmzoo ? std::vector<int64_t>{nh, 3, hs} : std::vector<int64_t>{3, nh, hs};
  for (int64_t d = 1; d < t.dim(); ++d) grouped.push_back(t.size(d));
  return t.reshape(grouped).transpose(0, 1).reshape(t.sizes()).contiguous();  // rows regrouped, other dims kept
}

torch::Tensor from_hf(const torch::Tensor& t, HfLayout layout, const ModelConfig& c) {
  auto x = t.to(torch::kFloat);
  if (layout == HfLayout::kHeadInterleavedQkv) return permute_qkv_rows(x, c, /*to_lmzoo=*/true);
  return layout == HfLayout::kConv1D && x.dim() == 2 ? x.t() : x;
}

}  // namespace

std::vector<HfWeightRule> hf_weight_rules(HfArchitecture a, const ModelConfig& c) {
  switch (a) {
    case HfArchitecture::kGpt2LMHeadModel: return gpt2_rules(c);
    case HfArchitecture::kBertForMaskedLM:
    case HfArchitecture::kBertModel:
    case HfArchitecture::kBertForSequenceClassification: return bert_rules(a, c);
    case HfArchitecture::kT5ForConditionalGeneration: return t5_rules(c);
    case HfArchitecture::kLlamaForCausalLM:
    case HfArchitecture::kQwen2ForCausalLM:
    case HfArchitecture::kMistralForCausalLM: return llama_rules(c);
    case HfArchitecture::kGptNeoXForCausalLM: return gpt_neox_rules(c);
    case HfArchitecture::kRobertaForMaskedLM: return roberta_rules(c);
    case HfArchitecture::kDistilBertForMaskedLM: return distilbert_rules(c);
  }
  throw std::logic_error("architecture outside its table");
}

std::vector<std::pair<std::string, torch::Tensor>> hf_tensors_from_model(const torch::nn::Module& model,
                                                                         HfArchitecture a, const ModelConfig& c) {
  const auto params = model.named_parameters();
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& rule : hf_weight_rules(a, c)) {
    if (rule.optional) continue;
    const torch::Tensor* p = params.find(rule.lmzoo);
    if (!p) throw std::logic_error("lmzoo model has no parameter " + rule.lmzoo);
    auto value = p->detach().to(torch::kCPU, torch::kFloat);
    if (rule.layout == HfLayout::kConv1D && value.dim() == 2) value = value.t();
    if (rule.layout == HfLayout::kHeadInterleavedQkv) value = permute_qkv_rows(value, c, /*to_lmzoo=*/false);
    if (rule.hf.size() == 1) {
      out.emplace_back(rule.hf[0], value.contiguous());
      continue;
    }
    const auto parts = value.split_with_sizes(rule.rows, 0);  // rows of each HF tensor
    for (size_t i = 0; i < rule.hf.size(); ++i) out.emplace_back(rule.hf[i], parts[i].contiguous());
  }
  if (a == HfArchitecture::kRobertaForMaskedLM) {
    // transformers 4.48 ties lm_head.bias to lm_head.decoder.bias by taking the decoder's: without this copy (which
    // its own save_pretrained leaves out) from_pretrained loses the output bias.
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].first != "lm_head.bias") continue;
      const torch::Tensor bias = out[i].second;
      out.emplace_back("lm_head.decoder.bias", bias);
      break;
    }
  }
  return out;
}

void check_hf_weight(const std::string& name, const torch::Tensor& t) {
  if (!t.is_floating_point()) {
    throw HfFormatError("tensor '" + name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                        " where a floating-point weight belongs");
  }
  const int64_t bad = t.numel() - torch::isfinite(t.to(torch::kFloat)).sum().item<int64_t>();
  if (bad > 0) {
    throw HfFormatError("tensor '" + name + "' holds " + std::to_string(bad) + " NaN or infinite value" +
                        (bad == 1 ? "" : "s") + " (a damaged or diverged checkpoint)");
  }
}

HfImportReport load_hf_tensors(torch::nn::Module& model, HfArchitecture a, const ModelConfig& c,
                               const std::map<std::string, torch::Tensor>& tensors) {
  HfImportReport report;
  std::map<std::string, std::string> file_name_of;  // canonical name -> name in the file
  for (const auto& item : tensors) {
    const std::string canonical = canonical_name(a, item.first);
    if (!file_name_of.emplace(canonical, item.first).second) {
      throw HfFormatError("the checkpoint holds '" + item.first + "' twice (also as '" + file_name_of[canonical] + "')");
    }
  }
  // T5 files saved from the bare encoder or decoder name the shared embedding after it.
  for (const char* alias : {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}) {
    if (a == HfArchitecture::kT5ForConditionalGeneration && !file_name_of.count("shared.weight") &&
        file_name_of.count(alias)) {
      file_name_of["shared.weight"] = file_name_of[alias];
      file_name_of.erase(alias);
    }
  }
  torch::NoGradGuard no_grad;
  auto params = model.named_parameters();
  std::set<std::string> used, covered;
  for (const auto& rule : hf_weight_rules(a, c)) {
    covered.insert(rule.lmzoo);
    std::vector<torch::Tensor> parts;
    for (const auto& name : rule.hf) {
      auto found = file_name_of.find(name);
      if (found == file_name_of.end()) break;
      check_hf_weight(found->second, tensors.at(found->second));
      parts.push_back(from_hf(tensors.at(found->second), rule.layout, c));
      used.insert(name);
    }
    if (parts.size() != rule.hf.size()) {
      if (rule.optional && parts.empty()) {
        report.kept_initial.push_back(rule.lmzoo);
        continue;
      }
      throw HfFormatError("the checkpoint has no tensor '" + rule.hf[parts.size()] + "', which " + enum_name(a) +
                          " needs");
    }
    torch::Tensor* p = params.find(rule.lmzoo);
    if (!p) throw std::logic_error("lmzoo model has no parameter " + rule.lmzoo);
    auto value = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);  // rows of every HF tensor in turn
    if (value.sizes() != p->sizes()) {
      throw HfFormatError("tensor '" + rule.hf[0] + "' has shape " + shape_text(parts[0].sizes()) +
                          (parts.size() > 1 ? " (with the others fused: " + shape_text(value.sizes()) + ")" : "") +
                          " but config.json implies " + shape_text(p->sizes()) + " for it");
    }
    p->copy_(value);
  }
  for (const auto& item : params) {
    if (!covered.count(item.key())) report.kept_initial.push_back(item.key());
  }
  for (const auto& item : file_name_of) {
    if (used.count(item.first)) continue;
    if (!ignorable(a, c, item.first)) {
      throw HfFormatError("the checkpoint holds '" + item.second + "', which " + enum_name(a) +
                          " as lmzoo builds it has no place for");
    }
    report.ignored.push_back(item.second);
  }
  return report;
}

}  // namespace lmzoo
