// llama.cpp's decoder architectures (gguf_architecture.h): names from gguf-py's constants.py and the layouts
// convert_hf_to_gguf.py writes. Leaves out: llama.cpp's other architectures and multi-modal tensors.
#include "models/gguf_architecture.h"

#include <regex>
#include <stdexcept>

namespace lmzoo {

namespace {

// (Hugging Face name after the layer prefix, GGUF name after "blk.N.") for each architecture's layer tensors.
using NamePairs = std::vector<std::pair<std::string, std::string>>;

struct ArchNames {
  std::string hf_layer;  // prefix of layer i's tensors, with {} for i
  NamePairs layer;
  NamePairs global;      // whole names
};

const ArchNames& names_of(GgufArch arch) {
  static const ArchNames llama{
      "model.layers.",
      {{"input_layernorm.weight", "attn_norm.weight"},
       {"self_attn.q_proj.weight", "attn_q.weight"}, {"self_attn.q_proj.bias", "attn_q.bias"},
       {"self_attn.k_proj.weight", "attn_k.weight"}, {"self_attn.k_proj.bias", "attn_k.bias"},
       {"self_attn.v_proj.weight", "attn_v.weight"}, {"self_attn.v_proj.bias", "attn_v.bias"},
       {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.o_proj.bias", "attn_output.bias"},
       {"post_attention_layernorm.weight", "ffn_norm.weight"},
       {"mlp.gate_proj.weight", "ffn_gate.weight"}, {"mlp.gate_proj.bias", "ffn_gate.bias"},
       {"mlp.up_proj.weight", "ffn_up.weight"}, {"mlp.up_proj.bias", "ffn_up.bias"},
       {"mlp.down_proj.weight", "ffn_down.weight"}, {"mlp.down_proj.bias", "ffn_down.bias"}},
      {{"model.embed_tokens.weight", "token_embd.weight"},
       {"model.norm.weight", "output_norm.weight"},
       {"lm_head.weight", "output.weight"}}};
  static const ArchNames gpt2{
      "transformer.h.",
      {{"ln_1.weight", "attn_norm.weight"}, {"ln_1.bias", "attn_norm.bias"},
       {"attn.c_attn.weight", "attn_qkv.weight"}, {"attn.c_attn.bias", "attn_qkv.bias"},
       {"attn.c_proj.weight", "attn_output.weight"}, {"attn.c_proj.bias", "attn_output.bias"},
       {"ln_2.weight", "ffn_norm.weight"}, {"ln_2.bias", "ffn_norm.bias"},
       {"mlp.c_fc.weight", "ffn_up.weight"}, {"mlp.c_fc.bias", "ffn_up.bias"},
       {"mlp.c_proj.weight", "ffn_down.weight"}, {"mlp.c_proj.bias", "ffn_down.bias"}},
      {{"transformer.wte.weight", "token_embd.weight"},
       {"transformer.wpe.weight", "position_embd.weight"},
       {"transformer.ln_f.weight", "output_norm.weight"}, {"transformer.ln_f.bias", "output_norm.bias"},
       {"lm_head.weight", "output.weight"}}};
  static const ArchNames neox{
      "gpt_neox.layers.",
      {{"input_layernorm.weight", "attn_norm.weight"}, {"input_layernorm.bias", "attn_norm.bias"},
       {"attention.query_key_value.weight", "attn_qkv.weight"}, {"attention.query_key_value.bias", "attn_qkv.bias"},
       {"attention.dense.weight", "attn_output.weight"}, {"attention.dense.bias", "attn_output.bias"},
       {"post_attention_layernorm.weight", "ffn_norm.weight"}, {"post_attention_layernorm.bias", "ffn_norm.bias"},
       {"mlp.dense_h_to_4h.weight", "ffn_up.weight"}, {"mlp.dense_h_to_4h.bias", "ffn_up.bias"},
       {"mlp.dense_4h_to_h.weight", "ffn_down.weight"}, {"mlp.dense_4h_to_h.bias", "ffn_down.bias"}},
      {{"gpt_neox.embed_in.weight", "token_embd.weight"},
       {"gpt_neox.final_layer_norm.weight", "output_norm.weight"},
       {"gpt_neox.final_layer_norm.bias", "output_norm.bias"},
       {"embed_out.weight", "output.weight"}}};
  switch (arch) {
    case GgufArch::kLlama:
    case GgufArch::kQwen2: return llama;
    case GgufArch::kGpt2: return gpt2;
    case GgufArch::kGptNeoX: return neox;
  }
  return llama;
}

// HF name -> GGUF name; empty when the architecture has no place for it.
std::string gguf_name(GgufArch arch, const std::string& hf) {
  const ArchNames& n = names_of(arch);
  for (const auto& [h, g] : n.global) {
    if (h == hf) return g;
  }
  if (hf.rfind(n.hf_layer, 0) != 0) return "";
  const std::string rest = hf.substr(n.hf_layer.size());
  const size_t dot = rest.find('.');
  if (dot == std::string::npos) return "";
  const std::string layer = rest.substr(0, dot), suffix = rest.substr(dot + 1);
  for (const auto& [h, g] : n.layer) {
    if (h == suffix) return "blk." + layer + "." + g;
  }
  return "";
}

std::string hf_name(GgufArch arch, const std::string& gguf) {
  const ArchNames& n = names_of(arch);
  for (const auto& [h, g] : n.global) {
    if (g == gguf) return h;
  }
  static const std::regex blk(R"(blk\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(gguf, m, blk)) return "";
  for (const auto& [h, g] : n.layer) {
    if (g == m[2].str()) return n.hf_layer + m[1].str() + "." + h;
  }
  return "";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Llama's q/k rows: Hugging Face keeps each head's rotary halves apart (rotate-half), llama.cpp interleaves the pairs
// (convert_hf_to_gguf's permute). INVERSE undoes it. Works on weights (rows, in) and biases (rows).
torch::Tensor permute_rotary(const torch::Tensor& w, int64_t heads, bool inverse) {
  const auto shape = w.sizes().vec();
  const int64_t half = shape[0] / heads / 2;
  std::vector<int64_t> split = inverse ? std::vector<int64_t>{heads, half, 2} : std::vector<int64_t>{heads, 2, half};
  for (size_t d = 1; d < shape.size(); ++d) split.push_back(shape[d]);
  return w.reshape(split).transpose(1, 2).reshape(shape).contiguous();  // (heads, 2, half, ...) <-> (heads, half, 2, ...)
}

// GPT-NeoX's query_key_value rows (n_head, 3, head_size) <-> llama.cpp's (3, n_head, head_size).
torch::Tensor regroup_qkv(const torch::Tensor& w, int64_t heads, bool to_gguf) {
  const auto shape = w.sizes().vec();
  const int64_t hs = shape[0] / heads / 3;
  std::vector<int64_t> from = to_gguf ? std::vector<int64_t>{heads, 3, hs} : std::vector<int64_t>{3, heads, hs};
  for (size_t d = 1; d < shape.size(); ++d) from.push_back(shape[d]);
  return w.reshape(from).transpose(0, 1).reshape(shape).contiguous();
}

std::string arch_key(GgufArch arch, const std::string& key) { return enum_name(arch) + "." + key; }

const GgufValue& need(const GgufFile& f, const std::string& key) { return f.get(key); }

}  // namespace

GgufArch gguf_arch_of(HfArchitecture hf, const ModelConfig& c) {
  switch (hf) {
    case HfArchitecture::kLlamaForCausalLM:
    case HfArchitecture::kMistralForCausalLM:
    case HfArchitecture::kPhi3ForCausalLM:
      if (c.attention_window > 0 && c.attention_window < c.max_seq_len) {
        throw std::invalid_argument("a sliding attention window of " + std::to_string(c.attention_window) +
                                    " tokens (shorter than the context of " + std::to_string(c.max_seq_len) +
                                    ") has no GGUF form: llama.cpp's llama architecture attends to the whole context");
      }
      return GgufArch::kLlama;
    case HfArchitecture::kQwen2ForCausalLM:
      if (c.attention_window > 0 && c.attention_window < c.max_seq_len) {
        throw std::invalid_argument("a Qwen2 with a sliding window shorter than its context has no GGUF form");
      }
      return GgufArch::kQwen2;
    case HfArchitecture::kGpt2LMHeadModel:
      if (c.activation != Activation::kGeluTanh) {
        throw std::invalid_argument("a GPT-2 with activation " + enum_name(c.activation) +
                                    " has no GGUF form: llama.cpp's gpt2 graph uses gelu-tanh");
      }
      return GgufArch::kGpt2;
    case HfArchitecture::kGptNeoXForCausalLM:
      if (c.activation != Activation::kGelu && c.activation != Activation::kGeluTanh) {
        throw std::invalid_argument("a GPT-NeoX with activation " + enum_name(c.activation) +
                                    " has no GGUF form: llama.cpp's gptneox graph uses GELU");
      }
      return GgufArch::kGptNeoX;
    case HfArchitecture::kBertForMaskedLM:
    case HfArchitecture::kBertModel:
    case HfArchitecture::kBertForSequenceClassification:
    case HfArchitecture::kRobertaForMaskedLM:
    case HfArchitecture::kDistilBertForMaskedLM:
    case HfArchitecture::kT5ForConditionalGeneration: break;
  }
  throw std::invalid_argument("a " + enum_name(hf) + " model has no GGUF form lmzoo writes (decoders only: " +
                              enum_choices<GgufArch>(", ") + ")");
}

void add_gguf_hparams(GgufWriter& w, GgufArch arch, const ModelConfig& c) {
  auto u32 = [&](const std::string& key, int64_t v) { w.add(arch_key(arch, key), GgufValue::u32(static_cast<uint32_t>(v))); };
  auto f32 = [&](const std::string& key, double v) { w.add(arch_key(arch, key), GgufValue::f32(static_cast<float>(v))); };
  u32("context_length", c.max_seq_len);
  u32("embedding_length", c.d_model);
  u32("block_count", c.n_layer);
  u32("feed_forward_length", c.ff_dim());
  u32("attention.head_count", c.n_head);
  switch (arch) {
    case GgufArch::kLlama:
    case GgufArch::kQwen2:
      u32("attention.head_count_kv", c.kv_heads());
      f32("attention.layer_norm_rms_epsilon", c.norm_eps);
      f32("rope.freq_base", c.rope_base);
      u32("rope.dimension_count", c.head_size());
      u32("attention.key_length", c.head_size());
      u32("attention.value_length", c.head_size());
      u32("vocab_size", c.padded_vocab());
      break;
    case GgufArch::kGpt2:
      f32("attention.layer_norm_epsilon", c.norm_eps);
      break;
    case GgufArch::kGptNeoX:
      f32("attention.layer_norm_epsilon", c.norm_eps);
      f32("rope.freq_base", c.rope_base);
      u32("rope.dimension_count", static_cast<int64_t>(c.rope_fraction * static_cast<double>(c.head_size())));
      w.add(arch_key(arch, "use_parallel_residual"), GgufValue::boolean(c.parallel_residual));
      break;
  }
}

std::vector<std::pair<std::string, torch::Tensor>> gguf_tensors_from_hf(
    GgufArch arch, const ModelConfig& c, const std::vector<std::pair<std::string, torch::Tensor>>& hf) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  bool has_output = false;
  torch::Tensor embedding;
  for (const auto& [name, tensor] : hf) {
    const std::string g = gguf_name(arch, name);
    if (g.empty()) throw std::invalid_argument("tensor " + name + " has no place in llama.cpp's " + enum_name(arch));
    torch::Tensor t = tensor.to(torch::kFloat32);
    switch (arch) {
      case GgufArch::kLlama:
        if (ends_with(g, "attn_q.weight") || ends_with(g, "attn_q.bias")) t = permute_rotary(t, c.n_head, false);
        if (ends_with(g, "attn_k.weight") || ends_with(g, "attn_k.bias")) t = permute_rotary(t, c.kv_heads(), false);
        break;
      case GgufArch::kQwen2: break;  // llama.cpp runs qwen2's rotary as NeoX (rotate-half): no permutation
      case GgufArch::kGpt2:
        if (t.dim() == 2 && g.rfind("blk.", 0) == 0) t = t.t().contiguous();  // Conv1D [in, out] -> [out, in]
        break;
      case GgufArch::kGptNeoX:
        if (ends_with(g, "attn_qkv.weight") || ends_with(g, "attn_qkv.bias")) t = regroup_qkv(t, c.n_head, true);
        break;
    }
    if (g == "output.weight") has_output = true;
    if (g == "token_embd.weight") embedding = t;
    out.emplace_back(g, t);
  }
  // llama.cpp's gpt2 and gptneox graphs read output.weight; its converter writes the tied embedding there too.
  if (!has_output && (arch == GgufArch::kGpt2 || arch == GgufArch::kGptNeoX) && embedding.defined()) {
    out.emplace_back("output.weight", embedding);
  }
  return out;
}

GgufTensorType gguf_storage_type(const std::string& name, const torch::Tensor& t, GgufTensorType type) {
  if (t.dim() <= 1 || ends_with(name, "_norm.weight") || name == "position_embd.weight") return GgufTensorType::kF32;
  if (type == GgufTensorType::kQ8_0 && t.size(-1) % kQ8Block != 0) return GgufTensorType::kF16;
  return type;
}

GgufArch gguf_arch_of_file(const GgufFile& f) {
  const std::string name = need(f, "general.architecture").as_string("general.architecture");
  for (const auto& e : EnumTable<GgufArch>::entries) {
    if (name == e.name) return e.value;
  }
  throw GgufFormatError(f.name() + ": architecture " + name + " is not one lmzoo imports (" +
                        enum_choices<GgufArch>(", ") + ")");
}

namespace {

// The {arch}.* hyper-parameters of a GGUF file: required integers, numbers with a fallback.
struct ArchKeys {
  const GgufFile& f;
  GgufArch arch;
  int64_t i(const std::string& key) const { return need(f, arch_key(arch, key)).as_int(arch_key(arch, key)); }
  double x(const std::string& key, double fallback) const {
    const GgufValue* v = f.find(arch_key(arch, key));
    return v == nullptr ? fallback : v->as_number(arch_key(arch, key));
  }
  bool has(const std::string& key) const { return f.find(arch_key(arch, key)) != nullptr; }
  // The shape every architecture has, under the config's own key names (in the order: width, feed-forward width,
  // layers, heads, context).
  void copy_shape(nlohmann::json& j, const char* width, const char* ffn, const char* layers, const char* heads,
                  const char* context) const {
    j[width] = i("embedding_length");
    j[ffn] = i("feed_forward_length");
    j[layers] = i("block_count");
    j[heads] = i("attention.head_count");
    j[context] = i("context_length");
  }
};

// What every architecture's config holds: the vocabulary (one token per embedding row), tying, special ids.
nlohmann::json common_hf_config(const GgufFile& f) {
  const std::string tokens_key = "tokenizer.ggml.tokens";  // named: g++ 14 warns of a reference through a temporary
  const GgufValue& tokens = need(f, tokens_key);
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) throw GgufFormatError(f.name() + ": tensor token_embd.weight is missing");
  const int64_t vocab = embd->shape[0];
  if (tokens.type != GgufValueType::kArray || static_cast<int64_t>(tokens.strings.size()) != vocab) {
    throw GgufFormatError(f.name() + ": tokenizer.ggml.tokens does not have one token per row of token_embd.weight");
  }
  const GgufTensorInfo* output = f.find_tensor("output.weight");
  bool tied = output == nullptr;
  if (output != nullptr && output->type == embd->type && output->shape == embd->shape) {
    tied = f.tensor(*output).equal(f.tensor(*embd));  // the converter's copy of a tied embedding
  }
  nlohmann::json j;
  j["vocab_size"] = vocab;
  j["tie_word_embeddings"] = tied;
  for (const char* key : {"bos_token_id", "eos_token_id", "padding_token_id"}) {
    if (const GgufValue* v = f.find(std::string("tokenizer.ggml.") + key)) {
      j[key == std::string("padding_token_id") ? "pad_token_id" : key] = v->as_int(key);
    }
  }
  return j;
}

void add_llama_config(const ArchKeys& k, nlohmann::json& j) {
  const bool qwen = k.arch == GgufArch::kQwen2;
  j["model_type"] = qwen ? "qwen2" : "llama";
  j["architectures"] = {qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  k.copy_shape(j, "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings");
  j["num_key_value_heads"] = k.has("attention.head_count_kv") ? k.i("attention.head_count_kv") : k.i("attention.head_count");
  j["rms_norm_eps"] = k.x("attention.layer_norm_rms_epsilon", 1e-6);
  j["rope_theta"] = k.x("rope.freq_base", 10000.0);
  j["hidden_act"] = "silu";
  if (qwen) {
    j["use_sliding_window"] = false;
  } else {
    const bool bias = k.f.find_tensor("blk.0.attn_q.bias") != nullptr;
    j["attention_bias"] = bias;
    j["mlp_bias"] = bias;
  }
  const int64_t head = j["hidden_size"].get<int64_t>() / j["num_attention_heads"].get<int64_t>();
  if (k.has("rope.dimension_count") && k.i("rope.dimension_count") != head) {
    throw GgufFormatError(k.f.name() + ": " + arch_key(k.arch, "rope.dimension_count") + " " +
                          std::to_string(k.i("rope.dimension_count")) + " is not the head size " + std::to_string(head) +
                          " (lmzoo's Llama rotates whole heads)");
  }
}

void add_gpt2_config(const ArchKeys& k, nlohmann::json& j) {
  j["model_type"] = "gpt2";
  j["architectures"] = {"GPT2LMHeadModel"};
  k.copy_shape(j, "n_embd", "n_inner", "n_layer", "n_head", "n_positions");
  j["n_ctx"] = j["n_positions"];
  j["activation_function"] = "gelu_new";
  j["layer_norm_epsilon"] = k.x("attention.layer_norm_epsilon", 1e-5);
}

void add_gpt_neox_config(const ArchKeys& k, nlohmann::json& j) {
  j["model_type"] = "gpt_neox";
  j["architectures"] = {"GPTNeoXForCausalLM"};
  k.copy_shape(j, "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings");
  j["layer_norm_eps"] = k.x("attention.layer_norm_epsilon", 1e-5);
  j["rotary_emb_base"] = k.x("rope.freq_base", 10000.0);
  const double head = static_cast<double>(j["hidden_size"].get<int64_t>() / j["num_attention_heads"].get<int64_t>());
  j["rotary_pct"] = static_cast<double>(k.i("rope.dimension_count")) / head;
  const GgufValue* parallel = k.f.find(arch_key(k.arch, "use_parallel_residual"));
  j["use_parallel_residual"] = parallel == nullptr || parallel->as_int("use_parallel_residual") != 0;
  j["hidden_act"] = "gelu";
  j["attention_bias"] = true;
}

}  // namespace

nlohmann::json hf_config_from_gguf(const GgufFile& f, GgufArch arch) {
  nlohmann::json j = common_hf_config(f);
  const ArchKeys keys{f, arch};
  switch (arch) {
    case GgufArch::kLlama:
    case GgufArch::kQwen2:
      add_llama_config(keys, j);
      break;
    case GgufArch::kGpt2:
      add_gpt2_config(keys, j);
      break;
    case GgufArch::kGptNeoX:
      add_gpt_neox_config(keys, j);
      break;
  }
  return j;
}

std::vector<std::pair<std::string, torch::Tensor>> hf_tensors_from_gguf(const GgufFile& f, GgufArch arch,
                                                                        const nlohmann::json& hf_config) {
  const bool tied = hf_config.value("tie_word_embeddings", false);
  int64_t heads = 0, kv_heads = 0;
  if (arch == GgufArch::kLlama) {
    heads = hf_config.at("num_attention_heads").get<int64_t>();
    kv_heads = hf_config.at("num_key_value_heads").get<int64_t>();
  } else if (arch == GgufArch::kGptNeoX) {
    heads = hf_config.at("num_attention_heads").get<int64_t>();
  }
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const GgufTensorInfo& info : f.tensors()) {
    if (info.name == "output.weight" && tied) continue;
    if (info.name.find("rope_freqs") != std::string::npos) {
      throw GgufFormatError(f.name() + ": tensor " + info.name + " (rope scaling) is not supported");
    }
    const std::string h = hf_name(arch, info.name);
    if (h.empty()) {
      throw GgufFormatError(f.name() + ": tensor " + info.name + " does not fit llama.cpp's " + enum_name(arch) +
                            " architecture");
    }
    torch::Tensor t = f.tensor(info);
    const std::string& g = info.name;
    switch (arch) {
      case GgufArch::kLlama:
        if (ends_with(g, "attn_q.weight") || ends_with(g, "attn_q.bias")) t = permute_rotary(t, heads, true);
        if (ends_with(g, "attn_k.weight") || ends_with(g, "attn_k.bias")) t = permute_rotary(t, kv_heads, true);
        break;
      case GgufArch::kQwen2: break;
      case GgufArch::kGpt2:
        if (t.dim() == 2 && g.rfind("blk.", 0) == 0) t = t.t().contiguous();
        break;
      case GgufArch::kGptNeoX:
        if (ends_with(g, "attn_qkv.weight") || ends_with(g, "attn_qkv.bias")) t = regroup_qkv(t, heads, false);
        break;
    }
    out.emplace_back(h, t);
  }
  return out;
}

}  // namespace lmzoo
