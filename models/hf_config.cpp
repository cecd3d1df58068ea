// Hugging Face config.json <-> ModelConfig: one reader and one writer per model type, refusing any field value
// that would make lmzoo compute something else than transformers.
#include "models/hf_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace lmzoo {

nlohmann::json read_hf_json_file(const std::string& path, const std::string& missing) {
  std::ifstream in(path);
  if (!in) throw HfFormatError(missing);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception&) {
    throw HfFormatError(path + " is not valid JSON");
  }
}

namespace {

using nlohmann::json;

// Field access with one-line errors naming the field.
class HfFields {
 public:
  explicit HfFields(const json& j) : j_(j) {}

  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  int64_t integer(const std::string& key) const {
    if (!has(key)) throw HfFormatError("config.json has no '" + key + "'");
    return integer_of(key);
  }
  int64_t integer(const std::string& key, int64_t fallback) const { return has(key) ? integer_of(key) : fallback; }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_number()) throw HfFormatError("config.json: '" + key + "' is not a number");
    return j_.at(key).get<double>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) throw HfFormatError("config.json: '" + key + "' is not true or false");
    return j_.at(key).get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_string()) throw HfFormatError("config.json: '" + key + "' is not a string");
    return j_.at(key).get<std::string>();
  }
  // Refuses a value other than EXPECTED for a field that changes the math.
  void require_bool(const std::string& key, bool fallback, bool expected) const {
    if (boolean(key, fallback) != expected) {
      throw HfFormatError(std::string("config.json: ") + key + " " + (expected ? "false" : "true") +
                          " is not supported (lmzoo implements " + (expected ? "true" : "false") + ")");
    }
  }
  void require_text(const std::string& key, const std::string& fallback, const std::string& expected) const {
    const std::string value = text(key, fallback);
    if (value != expected) {
      throw HfFormatError("config.json: " + key + " '" + value + "' is not supported (lmzoo implements '" +
                          expected + "')");
    }
  }
  const json& raw() const { return j_; }

 private:
  int64_t integer_of(const std::string& key) const {
    if (!j_.at(key).is_number_integer()) throw HfFormatError("config.json: '" + key + "' is not an integer");
    return j_.at(key).get<int64_t>();
  }
  const json& j_;
};

// hidden_act / activation_function values and their lmzoo activation (ungated).
Activation activation_of(const std::string& key, const std::string& name) {
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  throw HfFormatError("config.json: " + key + " '" + name + "' is not supported (gelu, gelu_new, relu, silu)");
}

// The HF spelling of an ungated activation.
std::string hf_activation_name(Activation a) {
  switch (a) {
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_new";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
    case Activation::kGeglu: return "gelu_new";
    case Activation::kSwiglu: return "silu";
  }
  throw std::logic_error("activation outside its table");
}

// The dropout lmzoo uses for all of DROPOUT_KEYS (it has one); a note when they differ.
double merged_dropout(const HfFields& f, const std::vector<std::string>& keys, std::vector<std::string>& notes,
                      double fallback = 0.1) {
  double value = f.number(keys.front(), fallback);
  for (const auto& key : keys) {
    const double other = f.number(key, value);
    if (other != value) {
      notes.push_back("dropout " + std::to_string(value) + " (from " + keys.front() + ") also replaces " + key +
                      " " + std::to_string(other) + ": lmzoo has one dropout rate (--dropout changes it)");
    }
  }
  return value;
}

ModelConfig gpt2_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c;
  c.arch = Arch::kGpt;
  c.vocab_size = f.integer("vocab_size");
  c.max_seq_len = f.integer("n_positions");
  c.d_model = f.integer("n_embd");
  c.n_layer = f.integer("n_layer");
  c.n_head = f.integer("n_head");
  c.d_ff = f.integer("n_inner", 4 * c.d_model);
  c.activation = activation_of("activation_function", f.text("activation_function", "gelu_new"));
  c.norm_eps = f.number("layer_norm_epsilon", 1e-5);
  c.dropout = merged_dropout(f, {"resid_pdrop", "embd_pdrop", "attn_pdrop"}, notes);
  c.bias = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kLearned;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);
  c.init = InitScheme::kGpt2;
  f.require_bool("scale_attn_weights", true, true);
  f.require_bool("scale_attn_by_inverse_layer_idx", false, false);
  f.require_bool("add_cross_attention", false, false);
  return c;
}

ModelConfig bert_config(const HfFields& f, HfArchitecture architecture, std::vector<std::string>& notes) {
  ModelConfig c;
  c.arch = Arch::kBert;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("hidden_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.d_ff = f.integer("intermediate_size");
  c.max_seq_len = f.integer("max_position_embeddings");
  c.type_vocab_size = f.integer("type_vocab_size", 2);
  if (c.type_vocab_size < 1) {
    throw HfFormatError("config.json: type_vocab_size " + std::to_string(c.type_vocab_size) +
                        " is not supported (the embeddings read token type 0; at least 1)");
  }
  c.activation = activation_of("hidden_act", f.text("hidden_act", "gelu"));
  c.norm_eps = f.number("layer_norm_eps", 1e-12);
  c.dropout = merged_dropout(f, {"hidden_dropout_prob", "attention_probs_dropout_prob"}, notes);
  c.bias = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPost;
  c.position = Position::kLearned;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);
  c.init = InitScheme::kBert;
  f.require_text("position_embedding_type", "absolute", "absolute");
  f.require_bool("is_decoder", false, false);
  f.require_bool("add_cross_attention", false, false);
  if (architecture == HfArchitecture::kBertForSequenceClassification) {
    const std::string problem = f.text("problem_type", "single_label_classification");
    if (problem != "single_label_classification") {
      throw HfFormatError("config.json: problem_type '" + problem +
                          "' is not supported (lmzoo classifies single labels)");
    }
    if (!f.has("id2label") || !f.raw().at("id2label").is_object()) {
      throw HfFormatError("config.json: a BertForSequenceClassification needs id2label");
    }
    const json& id2label = f.raw().at("id2label");
    c.labels.resize(id2label.size());
    for (const auto& item : id2label.items()) {
      size_t id = 0;
      try {
        id = std::stoul(item.key());
      } catch (const std::exception&) {
        id = c.labels.size();
      }
      if (id >= c.labels.size() || !item.value().is_string()) {
        throw HfFormatError("config.json: id2label must map 0.." + std::to_string(c.labels.size() - 1) +
                            " to label names");
      }
      c.labels[id] = item.value().get<std::string>();
    }
  }
  return c;
}

// --- RoBERTa and DistilBERT (BERT-family classes with their own config fields) ---

// RobertaForMaskedLM: BERT's fields; its learned positions start at pad_token_id + 1 (rows before that kept as
// position_offset), and its LM head applies erf GELU whatever hidden_act says.
ModelConfig roberta_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c = bert_config(f, HfArchitecture::kBertForMaskedLM, notes);
  const int64_t pad = f.integer("pad_token_id", 1);
  if (pad < 0) throw HfFormatError("config.json: pad_token_id " + std::to_string(pad) + " is negative");
  if (c.max_seq_len <= pad + 1) {
    throw HfFormatError("config.json: max_position_embeddings " + std::to_string(c.max_seq_len) +
                        " leaves no positions after RoBERTa's first pad_token_id + 1 = " + std::to_string(pad + 1) +
                        " rows");
  }
  c.position_offset = pad + 1;
  c.max_seq_len -= c.position_offset;
  if (c.activation != Activation::kGelu) {
    throw HfFormatError("config.json: hidden_act '" + f.text("hidden_act", "gelu") +
                        "' is not supported for RobertaForMaskedLM (its LM head applies gelu whatever hidden_act "
                        "says; lmzoo's head uses the encoder's activation)");
  }
  return c;
}

// DistilBertForMaskedLM: no token types, LayerNorm eps 1e-12 in its code, learned positions only.
ModelConfig distilbert_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c;
  c.arch = Arch::kBert;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("dim");
  c.n_layer = f.integer("n_layers");
  c.n_head = f.integer("n_heads");
  c.d_ff = f.integer("hidden_dim");
  c.max_seq_len = f.integer("max_position_embeddings");
  c.type_vocab_size = 0;
  c.activation = activation_of("activation", f.text("activation", "gelu"));
  c.norm_eps = 1e-12;
  c.dropout = merged_dropout(f, {"dropout", "attention_dropout"}, notes);
  c.bias = true;
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPost;
  c.position = Position::kLearned;
  c.tie_embeddings = f.boolean("tie_word_embeddings", true);  // tie_weights_ is a leftover transformers ignores
  c.init = InitScheme::kBert;
  f.require_bool("sinusoidal_pos_embds", false, false);
  return c;
}

// T5's feed_forward_proj: "relu", "gelu", ... or gated, "gated-gelu" (v1.1: HF turns it into gelu_new), "gated-silu".
Activation t5_activation(const std::string& proj) {
  const bool gated = proj.rfind("gated-", 0) == 0;
  if (!gated) return activation_of("feed_forward_proj", proj);
  const std::string inner = proj.substr(6);
  if (inner == "gelu" || activation_of("feed_forward_proj", inner) == Activation::kGeluTanh) return Activation::kGeglu;
  if (activation_of("feed_forward_proj", inner) == Activation::kSilu) return Activation::kSwiglu;
  throw HfFormatError("config.json: feed_forward_proj '" + proj +
                      "' is not supported (relu, gelu, gelu_new, gated-gelu, gated-silu)");
}

// T5's decoder output is scaled by d_model^-0.5 before a tied head. transformers 4.x scales exactly when
// tie_word_embeddings (default true); 5.x reads scale_decoder_outputs (default: tie_word_embeddings is not false)
// and always ties, so it saves v1.1 as tied, unscaled and without lm_head.weight. lmzoo scales exactly when tied:
// tied and unscaled becomes untied with lm_head copied from shared (the same logits); scaled and untied has no form.
void t5_head(const HfFields& f, ModelConfig& c, HfModelDescription& d) {
  const bool tied = f.boolean("tie_word_embeddings", true);
  const bool scaled = f.boolean("scale_decoder_outputs", tied);
  if (scaled && !tied) {
    throw HfFormatError("config.json: scale_decoder_outputs true with tie_word_embeddings false: a T5 whose decoder "
                        "output is scaled before an untied head is not supported (lmzoo scales exactly when tied)");
  }
  c.tie_embeddings = scaled;
  d.lm_head_from_shared = tied && !scaled;
  if (d.lm_head_from_shared) {
    d.notes.push_back("scale_decoder_outputs false with tied embeddings (transformers 5's T5 v1.1): imported untied, "
                      "lm_head.weight copied from shared.weight");
  }
}

ModelConfig t5_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c;
  c.arch = Arch::kT5;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("d_model");
  c.head_dim = f.integer("d_kv");
  c.d_ff = f.integer("d_ff");
  c.n_layer = f.integer("num_layers");
  c.n_decoder_layer = f.integer("num_decoder_layers", c.n_layer);
  c.n_head = f.integer("num_heads");
  c.relative_buckets = f.integer("relative_attention_num_buckets", 32);
  c.relative_max_distance = f.integer("relative_attention_max_distance", 128);
  c.max_seq_len = f.integer("n_positions", 512);
  c.dropout = f.number("dropout_rate", 0.1);
  c.norm_eps = f.number("layer_norm_epsilon", 1e-6);
  c.activation = t5_activation(f.text("feed_forward_proj", "relu"));
  c.bias = false;
  c.norm = NormKind::kRmsNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kRelative;
  c.init = InitScheme::kT5;
  f.require_bool("is_encoder_decoder", true, true);
  (void)notes;
  return c;
}

// The rope settings object KEY (rope_scaling, or transformers 5.x's rope_parameters) when it is present: an object
// whose rope_type (or older type) is absent or "default". Anything else (a string such as "linear", a list, a
// scaled type) is refused naming KEY: lmzoo implements the default, unscaled rope only.
const json* default_rope_object(const HfFields& f, const std::string& key) {
  if (!f.has(key)) return nullptr;
  const json& value = f.raw().at(key);
  auto refuse = [&] {
    throw HfFormatError("config.json: " + key + " " + value.dump() +
                        " is not supported (lmzoo implements the default, unscaled rope: null or "
                        "{\"rope_type\": \"default\"})");
  };
  if (!value.is_object()) refuse();
  for (const char* type_key : {"rope_type", "type"}) {
    if (value.contains(type_key) && !value.at(type_key).is_null() && value.at(type_key) != "default") refuse();
  }
  return &value;
}

// A setting that transformers 4.x and 5.x files spell in several places: the top-level KEYS, then FIELD of the
// default rope objects rope_parameters (5.x) and rope_scaling (its older name). The first spelling present is the
// value (FALLBACK when none is); any other present one must equal it, else the file is refused naming both.
double agreed_rope_setting(const HfFields& f, const std::vector<std::string>& keys, const std::string& field,
                           double fallback) {
  struct Spelling {
    std::string name;
    const json* value;
  };
  std::vector<Spelling> found;
  for (const auto& key : keys) {
    if (f.has(key)) found.push_back({key, &f.raw().at(key)});
  }
  for (const char* object : {"rope_parameters", "rope_scaling"}) {
    const json* rope = default_rope_object(f, object);
    if (rope && rope->contains(field) && !rope->at(field).is_null()) {
      found.push_back({std::string(object) + "." + field, &rope->at(field)});
    }
  }
  for (const auto& s : found) {
    if (!s.value->is_number()) throw HfFormatError("config.json: " + s.name + " is not a number");
    if (s.value->get<double>() != found.front().value->get<double>()) {
      throw HfFormatError("config.json: " + s.name + " " + s.value->dump() + " differs from " + found.front().name +
                          " " + found.front().value->dump() +
                          " (transformers 4.x and 5.x read different keys; a file must agree with itself)");
    }
  }
  return found.empty() ? fallback : found.front().value->get<double>();
}

// rope_theta, from transformers 4.x's top-level field or 5.x's rope_parameters; only the default (unscaled) rope.
double llama_rope_base(const HfFields& f) { return agreed_rope_setting(f, {"rope_theta"}, "rope_theta", 10000.0); }

ModelConfig llama_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c;
  c.arch = Arch::kGpt;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("hidden_size");
  c.d_ff = f.integer("intermediate_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.n_kv_heads = f.integer("num_key_value_heads", c.n_head);
  c.max_seq_len = f.integer("max_position_embeddings");
  c.norm_eps = f.number("rms_norm_eps", 1e-6);
  c.rope_base = llama_rope_base(f);
  c.dropout = f.number("attention_dropout", 0.0);
  c.tie_embeddings = f.boolean("tie_word_embeddings", false);
  c.norm = NormKind::kRmsNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kRope;
  c.init = InitScheme::kGpt2;
  if (activation_of("hidden_act", f.text("hidden_act", "silu")) != Activation::kSilu) {
    throw HfFormatError("config.json: hidden_act '" + f.text("hidden_act", "") + "' is not supported (silu)");
  }
  c.activation = Activation::kSwiglu;
  const bool attention_bias = f.boolean("attention_bias", false);
  const bool mlp_bias = f.boolean("mlp_bias", false);
  if (attention_bias != mlp_bias) {
    throw HfFormatError("config.json: attention_bias and mlp_bias differ (lmzoo has biases everywhere or nowhere)");
  }
  c.bias = attention_bias;
  if (f.has("head_dim") && f.integer("head_dim") * c.n_head != c.d_model) {
    throw HfFormatError("config.json: head_dim " + std::to_string(f.integer("head_dim")) +
                        " is not supported (lmzoo's Llama heads are hidden_size / num_attention_heads = " +
                        std::to_string(c.d_model / c.n_head) + ")");
  }
  if (f.number("partial_rotary_factor", 1.0) != 1.0) {  // transformers 4.48 honours it for Llama-style classes
    throw HfFormatError("config.json: partial_rotary_factor " + std::to_string(f.number("partial_rotary_factor", 1.0)) +
                        " is not supported for this class (lmzoo's Llama rotates whole heads)");
  }
  if (f.integer("pretraining_tp", 1) != 1) {
    notes.push_back("pretraining_tp " + std::to_string(f.integer("pretraining_tp", 1)) +
                    " ignored: it only splits the same matrix products");
  }
  return c;
}

// Qwen2: Llama with biases on q, k and v only. transformers applies a sliding window (use_sliding_window) to every
// layer's mask whatever max_window_layers says, so only a window that cannot bind is accepted.
ModelConfig qwen2_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c = llama_config(f, notes);
  c.qkv_bias = true;
  if (f.boolean("use_sliding_window", false)) {
    const int64_t window = f.integer("sliding_window", 4096);
    if (window < c.max_seq_len) {
      throw HfFormatError("config.json: use_sliding_window true with sliding_window " + std::to_string(window) +
                          " shorter than max_position_embeddings " + std::to_string(c.max_seq_len) +
                          " is not supported (lmzoo implements Qwen2 without a window)");
    }
  }
  return c;
}

// Mistral: Llama with a sliding window (null: none), lmzoo's attention_window.
ModelConfig mistral_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c = llama_config(f, notes);
  if (f.has("sliding_window")) {
    c.attention_window = f.integer("sliding_window");
    if (c.attention_window < 1) throw HfFormatError("config.json: sliding_window must be positive or null");
  }
  return c;
}

std::string model_type_of(HfArchitecture a);

// The model_type of every architecture, comma-separated, each once.
std::string supported_model_types() {
  std::string list;
  for (const auto& entry : EnumTable<HfArchitecture>::entries) {
    const std::string type = model_type_of(entry.value);
    if (list.find(type) != std::string::npos) continue;
    list += (list.empty() ? "" : ", ") + type;
  }
  return list;
}
// ---- GPT-NeoX (Pythia) ----
std::string literal_number(double value) { return json(value).dump(); }  // shortest text that reads back the same

// The rotary fraction and base as transformers 4.48 spells them (rotary_pct, rotary_emb_base, over any other value the
// file holds), as later 4.x (partial_rotary_factor, rope_theta) and as 5.x (rope_parameters, alone): whichever are
// present must agree. Any rope_scaling other than the default is refused.
void gpt_neox_rope(const HfFields& f, ModelConfig& c) {
  const double pct =
      agreed_rope_setting(f, {"rotary_pct", "partial_rotary_factor"}, "partial_rotary_factor", 0.25);
  c.rope_base = agreed_rope_setting(f, {"rotary_emb_base", "rope_theta"}, "rope_theta", 10000.0);
  const int64_t head_size = c.n_head > 0 && c.d_model % c.n_head == 0 ? c.d_model / c.n_head : 0;
  const double rotated = pct * double(head_size);  // HF: rotary_ndims = int(head_size * rotary_pct)
  if (head_size > 0 && !(pct > 0 && pct <= 1 && rotated == std::floor(rotated) && int64_t(rotated) % 2 == 0)) {
    throw HfFormatError("config.json: rotary_pct " + literal_number(pct) + " of head size " +
                        std::to_string(head_size) + " gives " + literal_number(rotated) +
                        " rotated dimensions (lmzoo needs an even whole number, at least 2)");
  }
  c.rope_fraction = pct;
}

ModelConfig gpt_neox_config(const HfFields& f, std::vector<std::string>& notes) {
  ModelConfig c;
  c.arch = Arch::kGpt;
  c.vocab_size = f.integer("vocab_size");
  c.d_model = f.integer("hidden_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.d_ff = f.integer("intermediate_size");
  c.max_seq_len = f.integer("max_position_embeddings");
  c.activation = activation_of("hidden_act", f.text("hidden_act", "gelu"));
  c.norm_eps = f.number("layer_norm_eps", 1e-5);
  c.dropout = merged_dropout(f, {"hidden_dropout", "attention_dropout"}, notes, 0.0);
  c.tie_embeddings = f.boolean("tie_word_embeddings", false);
  c.parallel_residual = f.boolean("use_parallel_residual", true);
  c.norm = NormKind::kLayerNorm;
  c.norm_position = NormPosition::kPre;
  c.position = Position::kRope;
  c.init = InitScheme::kGpt2;
  // attention_bias false drops only the attention's biases; the feed-forward and the norms keep theirs.
  f.require_bool("attention_bias", true, true);
  c.bias = true;
  f.require_bool("add_cross_attention", false, false);
  gpt_neox_rope(f, c);
  return c;
}

nlohmann::json gpt_neox_fields(const ModelConfig& c) {
  return {{"hidden_size", c.d_model}, {"num_hidden_layers", c.n_layer}, {"num_attention_heads", c.n_head},
          {"intermediate_size", c.ff_dim()}, {"hidden_act", hf_activation_name(c.activation)},
          {"rotary_pct", c.rope_fraction}, {"partial_rotary_factor", c.rope_fraction},
          {"rotary_emb_base", c.rope_base}, {"rope_theta", c.rope_base}, {"rope_scaling", nullptr},
          {"rope_parameters",  // transformers 5.x reads only this; 4.48 rotary_pct and rotary_emb_base
           {{"rope_type", "default"}, {"rope_theta", c.rope_base}, {"partial_rotary_factor", c.rope_fraction}}},
          {"max_position_embeddings", c.max_seq_len}, {"layer_norm_eps", c.norm_eps},
          {"use_parallel_residual", c.parallel_residual}, {"attention_bias", true},
          {"hidden_dropout", c.dropout}, {"attention_dropout", c.dropout}, {"initializer_range", 0.02},
          {"use_cache", true}};
}
// ---- end GPT-NeoX ----

// The architecture config.json names: its "architectures" entry, else the model_type's usual class.
HfArchitecture architecture_of(const HfFields& f, const std::string& model_type) {
  if (f.has("architectures")) {
    const json& list = f.raw().at("architectures");
    if (!list.is_array() || list.size() != 1 || !list[0].is_string()) {
      throw HfFormatError("config.json: 'architectures' must list one class, got " + list.dump());
    }
    try {
      return parse_enum<HfArchitecture>(list[0].get<std::string>());
    } catch (const std::invalid_argument& e) {
      throw HfFormatError(std::string("config.json: ") + e.what());
    }
  }
  if (model_type == "gpt2") return HfArchitecture::kGpt2LMHeadModel;
  if (model_type == "bert") return HfArchitecture::kBertForMaskedLM;
  if (model_type == "t5") return HfArchitecture::kT5ForConditionalGeneration;
  if (model_type == "llama") return HfArchitecture::kLlamaForCausalLM;
  if (model_type == "qwen2") return HfArchitecture::kQwen2ForCausalLM;
  if (model_type == "mistral") return HfArchitecture::kMistralForCausalLM;
  if (model_type == "gpt_neox") return HfArchitecture::kGptNeoXForCausalLM;
  if (model_type == "roberta") return HfArchitecture::kRobertaForMaskedLM;
  if (model_type == "distilbert") return HfArchitecture::kDistilBertForMaskedLM;
  if (model_type.empty()) throw HfFormatError("config.json names neither 'architectures' nor 'model_type'");
  throw HfFormatError("config.json: model_type '" + model_type + "' is not supported (" + supported_model_types() + ")");
}

// The model_type every architecture belongs to.
std::string model_type_of(HfArchitecture a) {
  switch (a) {
    case HfArchitecture::kGpt2LMHeadModel: return "gpt2";
    case HfArchitecture::kBertForMaskedLM:
    case HfArchitecture::kBertModel:
    case HfArchitecture::kBertForSequenceClassification: return "bert";
    case HfArchitecture::kT5ForConditionalGeneration: return "t5";
    case HfArchitecture::kLlamaForCausalLM: return "llama";
    case HfArchitecture::kQwen2ForCausalLM: return "qwen2";
    case HfArchitecture::kMistralForCausalLM: return "mistral";
    case HfArchitecture::kGptNeoXForCausalLM: return "gpt_neox";
    case HfArchitecture::kRobertaForMaskedLM: return "roberta";
    case HfArchitecture::kDistilBertForMaskedLM: return "distilbert";
  }
  throw std::logic_error("architecture outside its table");
}

// Throws "NAME has no Hugging Face twin: REASON" unless OK.
void require_twin(bool ok, const ModelConfig& c, const std::string& family, const std::string& reason) {
  if (!ok) {
    throw HfFormatError("this " + enum_name(c.arch) + " model has no Hugging Face twin: " + family + " needs " +
                        reason);
  }
}

// The HF twin of a gpt with GPT-NeoX's switches: rope (all or part of each head), pre-norm LayerNorm with biases, an
// ungated activation, one key/value head per query head; sequential or parallel residual.
HfArchitecture gpt_neox_twin(const ModelConfig& c) {
  const std::string neox = "GPT-NeoX";
  require_twin(c.position == Position::kRope, c, neox, "rope positions, not " + enum_name(c.position));
  require_twin(c.norm == NormKind::kLayerNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, neox,
               "pre-norm LayerNorm with a final norm");
  require_twin(c.bias, c, neox, "biases (--bias)");
  require_twin(!c.gated_ffn(), c, neox, "an ungated activation");
  require_twin(c.kv_heads() == c.n_head, c, neox, "one key/value head per query head");
  require_twin(c.attention_window == 0, c, neox, "attention over the whole context (no --attention-window)");
  return HfArchitecture::kGptNeoXForCausalLM;
}

// A bert with position_offset > 0 (RoBERTa) or no token types (DistilBERT), past BERT's common requirements.
HfArchitecture roberta_or_distilbert_of(const ModelConfig& c) {
  if (c.type_vocab_size == 0) {
    const std::string distilbert = "DistilBERT";
    require_twin(c.position_offset == 0, c, distilbert, "positions from 0 (position_offset is RoBERTa's)");
    require_twin(c.labels.empty(), c, distilbert,
                 "its own classification head (pre_classifier + ReLU), not lmzoo's pooler + classifier");
    require_twin(c.norm_eps == 1e-12, c, distilbert, "LayerNorm eps 1e-12 (fixed in its code)");
    return HfArchitecture::kDistilBertForMaskedLM;
  }
  const std::string roberta = "RoBERTa";
  require_twin(c.labels.empty(), c, roberta,
               "its own classification head (dense + tanh + out_proj with dropouts), not lmzoo's pooler + classifier");
  require_twin(c.activation == Activation::kGelu, c, roberta, "activation gelu (its LM head applies gelu)");
  return HfArchitecture::kRobertaForMaskedLM;
}

json common_fields(const ModelConfig& c, HfArchitecture a, const HfTokenIds& ids) {
  json j = {{"architectures", {enum_name(a)}},
            {"model_type", model_type_of(a)},
            {"vocab_size", c.padded_vocab()},
            {"torch_dtype", "float32"},  // 4.x's name
            {"dtype", "float32"},        // 5.x's
            {"tie_word_embeddings", c.tie_embeddings}};
  if (ids.pad >= 0) j["pad_token_id"] = ids.pad;
  if (ids.bos >= 0) j["bos_token_id"] = ids.bos;
  if (ids.eos >= 0) j["eos_token_id"] = ids.eos;
  return j;
}

}  // namespace

namespace {

HfModelDescription read_model_config(const json& hf) {
  if (!hf.is_object()) throw HfFormatError("config.json is not a JSON object");
  const HfFields f(hf);
  const std::string model_type = f.text("model_type", "");
  const HfArchitecture architecture = architecture_of(f, model_type);
  if (!model_type.empty() && model_type != model_type_of(architecture)) {
    throw HfFormatError("config.json: model_type '" + model_type + "' does not match architecture " +
                        enum_name(architecture));
  }
  HfModelDescription d{architecture, ModelConfig{}, {}};
  switch (architecture) {
    case HfArchitecture::kGpt2LMHeadModel: d.config = gpt2_config(f, d.notes); break;
    case HfArchitecture::kBertForMaskedLM:
    case HfArchitecture::kBertModel:
    case HfArchitecture::kBertForSequenceClassification: d.config = bert_config(f, architecture, d.notes); break;
    case HfArchitecture::kT5ForConditionalGeneration:
      d.config = t5_config(f, d.notes);
      t5_head(f, d.config, d);
      break;
    case HfArchitecture::kLlamaForCausalLM: d.config = llama_config(f, d.notes); break;
    case HfArchitecture::kQwen2ForCausalLM: d.config = qwen2_config(f, d.notes); break;
    case HfArchitecture::kMistralForCausalLM: d.config = mistral_config(f, d.notes); break;
    case HfArchitecture::kGptNeoXForCausalLM: d.config = gpt_neox_config(f, d.notes); break;
    case HfArchitecture::kRobertaForMaskedLM: d.config = roberta_config(f, d.notes); break;
    case HfArchitecture::kDistilBertForMaskedLM: d.config = distilbert_config(f, d.notes); break;
  }
  try {
    d.config.validate();
  } catch (const std::invalid_argument& e) {
    throw HfFormatError(std::string("config.json describes a model lmzoo cannot build: ") + e.what());
  }
  return d;
}

}  // namespace

HfModelDescription model_config_from_hf(const json& hf) {
  try {
    return read_model_config(hf);
  } catch (const HfConfigError&) {
    throw;
  } catch (const HfFormatError& e) {
    throw HfConfigError(e.what());
  }
}

HfArchitecture hf_architecture_of(const ModelConfig& c) {
  const bool kv_plain = c.kv_heads() == c.n_head;
  switch (c.arch) {
    case Arch::kGpt: {
      // GPT-NeoX: parallel residual, or rope with LayerNorm and an ungated activation (partial rotary or not).
      const bool neox_norm = c.norm == NormKind::kLayerNorm && !c.gated_ffn();
      if (c.parallel_residual || (c.position == Position::kRope && neox_norm)) return gpt_neox_twin(c);
      if (c.position == Position::kRope) {
        const std::string llama = "Llama";
        require_twin(c.rope_fraction == 1.0, c, llama,
                     "rope over whole heads (GPT-NeoX rotates part of each, but with LayerNorm and an ungated "
                     "activation)");
        require_twin(c.norm == NormKind::kRmsNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, llama,
                     "pre-norm RMSNorm with a final norm");
        require_twin(c.activation == Activation::kSwiglu, c, llama, "activation swiglu");
        if (c.qkv_bias && !c.bias) {
          require_twin(c.attention_window == 0, c, "Qwen2", "no attention window");
          return HfArchitecture::kQwen2ForCausalLM;
        }
        if (c.attention_window > 0) {
          require_twin(!c.bias, c, "Mistral", "no biases");
          return HfArchitecture::kMistralForCausalLM;
        }
        return HfArchitecture::kLlamaForCausalLM;
      }
      const std::string gpt2 = "GPT-2";
      require_twin(c.position == Position::kLearned, c, gpt2 + " (or Llama)",
                   "learned positions (Llama: rope), not " + enum_name(c.position));
      require_twin(c.norm == NormKind::kLayerNorm && c.norm_position == NormPosition::kPre && c.final_norm, c,
                   gpt2, "pre-norm LayerNorm with a final norm");
      require_twin(c.bias, c, gpt2, "biases (--bias)");
      require_twin(!c.gated_ffn(), c, gpt2, "an ungated activation");
      require_twin(kv_plain, c, gpt2, "one key/value head per query head");
      require_twin(c.tie_embeddings, c, gpt2, "tied embeddings");
      require_twin(!c.qkv_bias && !c.parallel_residual && c.attention_window == 0, c, gpt2,
                   "no q/k/v-only biases, parallel residuals or attention window");
      return HfArchitecture::kGpt2LMHeadModel;
    }
    case Arch::kBert: {
      const std::string bert = "BERT";
      require_twin(c.position == Position::kLearned, c, bert, "learned positions, not " + enum_name(c.position));
      require_twin(c.norm == NormKind::kLayerNorm && c.norm_position == NormPosition::kPost, c, bert,
                   "post-norm LayerNorm");
      require_twin(c.bias, c, bert, "biases (--bias)");
      require_twin(!c.gated_ffn(), c, bert, "an ungated activation");
      require_twin(kv_plain, c, bert, "one key/value head per query head");
      if (c.position_offset > 0 || c.type_vocab_size == 0) return roberta_or_distilbert_of(c);
      require_twin(c.tie_embeddings || !c.labels.empty(), c, bert, "a masked-LM decoder tied to the embeddings");
      return c.labels.empty() ? HfArchitecture::kBertForMaskedLM : HfArchitecture::kBertForSequenceClassification;
    }
    case Arch::kT5: {
      const std::string t5 = "T5";
      require_twin(c.position == Position::kRelative, c, t5, "relative positions, not " + enum_name(c.position));
      require_twin(c.norm == NormKind::kRmsNorm && c.norm_position == NormPosition::kPre && c.final_norm, c, t5,
                   "pre-norm RMSNorm with final norms");
      require_twin(!c.bias, c, t5, "no biases");
      require_twin(kv_plain, c, t5, "one key/value head per query head");
      require_twin(c.activation != Activation::kGeluTanh && c.activation != Activation::kSilu, c, t5,
                   "relu, gelu, geglu or swiglu");
      return HfArchitecture::kT5ForConditionalGeneration;
    }
  }
  throw std::logic_error("arch outside its table");
}

json hf_config_from_model(const ModelConfig& c, HfArchitecture a, const HfTokenIds& ids) {
  json j = common_fields(c, a, ids);
  switch (a) {
    case HfArchitecture::kGpt2LMHeadModel:
      j.update({{"n_positions", c.max_seq_len}, {"n_ctx", c.max_seq_len}, {"n_embd", c.d_model},
                {"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_inner", c.ff_dim()},
                {"activation_function", hf_activation_name(c.activation)}, {"layer_norm_epsilon", c.norm_eps},
                {"resid_pdrop", c.dropout}, {"embd_pdrop", c.dropout}, {"attn_pdrop", c.dropout},
                {"scale_attn_weights", true}, {"initializer_range", 0.02}});
      break;
    case HfArchitecture::kBertForMaskedLM:
    case HfArchitecture::kBertModel:
    case HfArchitecture::kBertForSequenceClassification:
      j.update({{"hidden_size", c.d_model}, {"num_hidden_layers", c.n_layer}, {"num_attention_heads", c.n_head},
                {"intermediate_size", c.ff_dim()}, {"hidden_act", hf_activation_name(c.activation)},
                {"max_position_embeddings", c.max_seq_len}, {"type_vocab_size", c.type_vocab_size},
                {"layer_norm_eps", c.norm_eps}, {"hidden_dropout_prob", c.dropout},
                {"attention_probs_dropout_prob", c.dropout}, {"position_embedding_type", "absolute"},
                {"initializer_range", 0.02}});
      if (!c.labels.empty()) {
        json id2label = json::object(), label2id = json::object();
        for (size_t i = 0; i < c.labels.size(); ++i) {
          id2label[std::to_string(i)] = c.labels[i];
          label2id[c.labels[i]] = i;
        }
        j.update({{"id2label", id2label}, {"label2id", label2id},
                  {"problem_type", "single_label_classification"}});
      }
      break;
    case HfArchitecture::kRobertaForMaskedLM:
      j.update({{"hidden_size", c.d_model}, {"num_hidden_layers", c.n_layer}, {"num_attention_heads", c.n_head},
                {"intermediate_size", c.ff_dim()}, {"hidden_act", hf_activation_name(c.activation)},
                {"max_position_embeddings", c.max_seq_len + c.position_offset},
                {"type_vocab_size", c.type_vocab_size}, {"layer_norm_eps", c.norm_eps},
                {"hidden_dropout_prob", c.dropout}, {"attention_probs_dropout_prob", c.dropout},
                {"position_embedding_type", "absolute"}, {"initializer_range", 0.02}});
      // HF finds pads and counts positions by pad_token_id: it must name the row before position 0's.
      if (ids.pad >= 0 && ids.pad != c.position_offset - 1) {
        throw HfFormatError("this bert model has no Hugging Face twin: RoBERTa needs the tokenizer's pad id (" +
                            std::to_string(ids.pad) + ") to be position_offset - 1 = " +
                            std::to_string(c.position_offset - 1));
      }
      j["pad_token_id"] = c.position_offset - 1;
      break;
    case HfArchitecture::kDistilBertForMaskedLM:
      j.update({{"dim", c.d_model}, {"n_layers", c.n_layer}, {"n_heads", c.n_head}, {"hidden_dim", c.ff_dim()},
                {"activation", hf_activation_name(c.activation)}, {"max_position_embeddings", c.max_seq_len},
                {"dropout", c.dropout}, {"attention_dropout", c.dropout}, {"sinusoidal_pos_embds", false},
                {"tie_weights_", c.tie_embeddings}, {"initializer_range", 0.02}});
      break;
    case HfArchitecture::kT5ForConditionalGeneration: {
      std::string proj = hf_activation_name(c.activation);
      if (c.gated_ffn()) proj = c.activation == Activation::kGeglu ? "gated-gelu" : "gated-silu";
      j.update({{"d_model", c.d_model}, {"d_kv", c.head_size()}, {"d_ff", c.ff_dim()}, {"num_layers", c.n_layer},
                {"num_decoder_layers", c.decoder_layers()}, {"num_heads", c.n_head},
                {"relative_attention_num_buckets", c.relative_buckets},
                {"relative_attention_max_distance", c.relative_max_distance}, {"dropout_rate", c.dropout},
                {"layer_norm_epsilon", c.norm_eps}, {"feed_forward_proj", proj}, {"is_encoder_decoder", true},
                {"n_positions", c.max_seq_len}, {"decoder_start_token_id", ids.pad >= 0 ? ids.pad : 0},
                {"initializer_factor", 1.0},
                // 5.x reads this (4.x scales when tied): an untied, unscaled model is read as such by both, 5.x
                // tying lm_head to shared
                {"scale_decoder_outputs", c.tie_embeddings}});
      break;
    }
    case HfArchitecture::kLlamaForCausalLM:
    case HfArchitecture::kQwen2ForCausalLM:
    case HfArchitecture::kMistralForCausalLM:
      j.update({{"hidden_size", c.d_model}, {"intermediate_size", c.ff_dim()}, {"num_hidden_layers", c.n_layer},
                {"num_attention_heads", c.n_head}, {"num_key_value_heads", c.kv_heads()},
                {"head_dim", c.head_size()}, {"max_position_embeddings", c.max_seq_len},
                {"rms_norm_eps", c.norm_eps}, {"rope_theta", c.rope_base}, {"rope_scaling", nullptr},
                {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", c.rope_base}}},  // 5.x reads this
                {"hidden_act", "silu"}, {"attention_dropout", c.dropout}, {"initializer_range", 0.02}});
      if (a == HfArchitecture::kLlamaForCausalLM) j.update({{"attention_bias", c.bias}, {"mlp_bias", c.bias}});
      if (a == HfArchitecture::kQwen2ForCausalLM) {
        j.erase("head_dim");  // Qwen2's heads are hidden_size / num_attention_heads
        j.update({{"use_sliding_window", false}, {"sliding_window", nullptr}, {"max_window_layers", c.n_layer}});
      }
      if (a == HfArchitecture::kMistralForCausalLM) j["sliding_window"] = c.attention_window;
      break;
    case HfArchitecture::kGptNeoXForCausalLM: j.update(gpt_neox_fields(c)); break;
  }
  return j;
}

int64_t vocab_multiple_for(int64_t tokens, int64_t rows) {
  if (tokens > rows) {
    throw HfFormatError("the tokenizer has " + std::to_string(tokens) + " tokens but the model's embeddings only " +
                        std::to_string(rows) + " rows");
  }
  for (int64_t m = 1; m <= rows; m *= 2) {
    if ((tokens + m - 1) / m * m == rows) return m;
  }
  return rows;
}

}  // namespace lmzoo
