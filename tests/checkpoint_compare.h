// Comparing the weights and AdamW states of saved checkpoints (run directories' last/ or best/), for resume and
// equivalence tests.
#pragma once
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "models/torch_compat.h"
#include "train/checkpoint/checkpoint.h"
#include "train/optimizer.h"

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

// A checkpoint's AdamW state, parameter by parameter in the optimizer's order: (step, exp_avg, exp_avg_sq), step
// -1 for a parameter without state.
struct SavedMoments {
  int64_t step;
  torch::Tensor exp_avg, exp_avg_sq;
};
inline std::vector<SavedMoments> saved_optimizer(const std::string& checkpoint_dir) {
  const CheckpointInfo info = read_checkpoint(checkpoint_dir);
  AnyModel model = load_model(info, torch::kCPU);
  auto optimizer = make_optimizer(*model.module(), info.train);
  load_optimizer_state(info, *optimizer);
  std::vector<SavedMoments> out;
  for (auto& group : optimizer->param_groups()) {
    for (auto& p : group.params()) {
      using Key = std::remove_reference_t<decltype(optimizer->state())>::key_type;
      const auto it = optimizer->state().find(compat::optimizer_state_key<Key>(p));
      if (it == optimizer->state().end()) {
        out.push_back({-1, {}, {}});
        continue;
      }
      const auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      out.push_back({int64_t(s.step()), s.exp_avg(), s.exp_avg_sq()});
    }
  }
  return out;
}

}  // namespace lmzoo::test
