// TorchScript export: a torch::jit::Module holding the weights and a scripted forward
// (input_ids (B, T) -> logits (B, T, V)) for any batch size and any T up to the context.
// The model config (JSON string) and tokenizer model (uint8 tensor) travel as attributes.
#pragma once
#include <set>
#include <string>

#include <torch/script.h>

#include "models/gpt.h"

namespace lmzoo {

// TorchScript source of forward() for this config; parameter_names (the model's dotted names)
// tell which optional tensors (biases, head) exist. Weights are referenced as self.<name>.
std::string gpt_torchscript_source(const ModelConfig& config, const std::set<std::string>& parameter_names);

torch::jit::Module export_gpt(GPT& model, const std::string& tokenizer_model);

// Parameter name in the exported module: "h.0.attn.c_attn.weight" -> "h_0_attn_c_attn_weight".
std::string scripted_name(const std::string& parameter_name);

}  // namespace lmzoo
