// Strict weight loading: the tensors of a model.pt archive against a module's parameters and buffers,
// names and shapes compared both ways (torch's own load ignores extra tensors and resizes mismatched ones).
#pragma once
#include <string>

#include <torch/torch.h>

namespace lmzoo {

// "" when archive holds exactly module's parameters and buffers with the same shapes; else the first
// differences, e.g. "model.pt has h.2.attn.c_attn.weight [96, 32] not in the model (and 11 more)".
std::string weight_mismatches(torch::serialize::InputArchive& archive, const torch::nn::Module& module);

}  // namespace lmzoo
