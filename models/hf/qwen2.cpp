// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama with biases on q, k and v only, and no sliding window that binds.
#include "models/hf/family.h"
#include "models/hf/llama.h"

namespace lmzoo::hf {
namespace {

// Whether any layer slides: 5.x's layer_types ("full_attention" | "sliding_attention" per layer) when present, else
// 4.x's use_sliding_window (4.48's masks then window every layer, whatever max_window_layers says). A window shorter
// than the context has no lmzoo form.
void read(const HfFields& f, HfModelDescription& d) {
  read_llama_config(f, d);
  ModelConfig& c = d.config;
  c.qkv_bias = true;
  bool sliding = f.boolean("use_sliding_window", false);
  std::string which = "use_sliding_window true";
  if (f.has("layer_types")) {
    const json& types = f.raw().at("layer_types");
    if (!types.is_array() || int64_t(types.size()) != c.n_layer) {
      throw HfFormatError("config.json: layer_types must list one attention type per layer (" +
                          std::to_string(c.n_layer) + ")");
    }
    sliding = false;
    for (const json& t : types) {
      if (t != "full_attention" && t != "sliding_attention") {
        throw HfFormatError("config.json: layer_types entry " + t.dump() +
                            " is not supported (full_attention or sliding_attention)");
      }
      sliding = sliding || t == "sliding_attention";
    }
    which = "layer_types naming sliding_attention";
  }
  if (!sliding) return;
  const int64_t window = f.integer("sliding_window", 4096);
  if (window < c.max_seq_len) {
    throw HfFormatError("config.json: " + which + " with sliding_window " + std::to_string(window) +
                        " shorter than max_position_embeddings " + std::to_string(c.max_seq_len) +
                        " is not supported (lmzoo implements Qwen2 without a window)");
  }
}

// Claims a Llama-family decoder with q/k/v biases and no others.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (!(c.qkv_bias && !c.bias) || !llama_family_shape(c, "Qwen2")) return std::nullopt;
  require_twin(c.attention_window == 0, c, "Qwen2", "no attention window");
  return HfArchitecture::kQwen2ForCausalLM;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  json j = llama_fields(c);
  j.erase("head_dim");  // Qwen2's heads are hidden_size / num_attention_heads
  j.update({{"use_sliding_window", false}, {"sliding_window", nullptr}, {"max_window_layers", c.n_layer},
            {"layer_types", std::vector<std::string>(size_t(c.n_layer), "full_attention")}});  // 5.x's
  return j;
}

}  // namespace

const HfFamily& qwen2_family() {
  static const HfFamily family{"qwen2", {HfArchitecture::kQwen2ForCausalLM}, read, twin, write,
                               llama_weights, llama_canonical_name, llama_ignorable};
  return family;
}

}  // namespace lmzoo::hf
