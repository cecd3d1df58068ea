// Comparing the weights of two saved checkpoints (run directories' last/ or best/), for resume and equivalence tests.
#pragma once
#include <algorithm>
#include <string>

#include "train/checkpoint.h"

namespace lmzoo::test {

// The largest absolute difference between the two checkpoints' parameters (infinity when their names differ).
inline double max_weight_difference(const std::string& a, const std::string& b) {
  auto pa = load_model(read_checkpoint(a), torch::kCPU).module()->named_parameters();
  auto pb = load_model(read_checkpoint(b), torch::kCPU).module()->named_parameters();
  if (pa.size() != pb.size()) return INFINITY;
  double worst = 0;
  for (const auto& item : pa) {
    const auto* other = pb.find(item.key());
    if (!other || other->sizes() != item.value().sizes()) return INFINITY;
    worst = std::max(worst, (item.value() - *other).abs().max().item<double>());
  }
  return worst;
}

// Bit-identical parameters.
inline bool same_weights(const std::string& a, const std::string& b) { return max_weight_difference(a, b) == 0.0; }

}  // namespace lmzoo::test
