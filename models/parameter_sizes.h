// The parameters a model of a config holds, by checkpoint name with their element counts, from the config alone
// (no module is built): what memory estimates match --trainable name parts and projection weights against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/config.h"

namespace lmzoo {

struct NamedSize {
  std::string name;  // as the built module's named_parameters() gives it ("h.0.attn.c_attn.weight")
  int64_t elements = 0;
  bool projection = false;  // an attention or feed-forward projection's weight matrix inside a block
};

// Every parameter of the model CONFIG builds (a tied head once, under the embedding's name), in no fixed order.
std::vector<NamedSize> parameter_sizes(const ModelConfig& config);

// Elements of the parameters whose name contains any of PARTS.
int64_t elements_named(const std::vector<NamedSize>& sizes, const std::vector<std::string>& parts);

}  // namespace lmzoo
