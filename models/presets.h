// Named model presets (published shapes) and training FLOPs per token; counting is parameter_count (parameter_sizes.h).
#pragma once
#include <string>
#include <vector>

#include "models/config.h"
#include "models/preset.h"

namespace lmzoo {

const std::vector<Preset>& all_presets();
// Throws std::invalid_argument listing the known names when NAME is unknown.
const Preset& find_preset(const std::string& name);
// The preset a new run of ARCH starts from when none is named: gpt-nano, bert-tiny or t5-small.
const Preset& default_preset(Arch arch);
// The parameter count a model of CONFIG is published with: BERT's encoder with its pooler (RoBERTa's and
// DistilBERT's their masked-LM class: published_bert_parameters), every other family's whole model.
int64_t published_parameter_count(const ModelConfig& config);
// Training FLOPs per token (forward + backward), PaLM's estimate as nanoGPT uses it for MFU:
// 6 N (N without position tables) + 12 * layers * d_model * context (attention scores), both stacks for t5.
double model_flops_per_token(const ModelConfig& config);

}  // namespace lmzoo
