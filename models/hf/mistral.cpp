// Mistral (MistralForCausalLM): Llama with a sliding attention window (null: none), lmzoo's attention_window.
#include "models/hf/family.h"
#include "models/hf/llama.h"

namespace lmzoo::hf {
namespace {

void read(const HfFields& f, HfModelDescription& d) {
  read_llama_config(f, d);
  if (!f.has("sliding_window")) return;
  d.config.attention_window = f.integer("sliding_window");
  if (d.config.attention_window < 1) throw HfFormatError("config.json: sliding_window must be positive or null");
}

// Claims a Llama-family decoder with an attention window.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (c.attention_window == 0 || !llama_family_shape(c, "Mistral")) return std::nullopt;
  require_twin(!c.bias, c, "Mistral", "no biases");
  return HfArchitecture::kMistralForCausalLM;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds&) {
  json j = llama_fields(c);
  j["sliding_window"] = c.attention_window;
  return j;
}

}  // namespace

const HfFamily& mistral_family() {
  static const HfFamily family{"mistral", {HfArchitecture::kMistralForCausalLM}, read, twin, write,
                               llama_weights, llama_canonical_name, llama_ignorable};
  return family;
}

}  // namespace lmzoo::hf
