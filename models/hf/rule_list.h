// Builds a family's weight rules (models/hf_weights.h) one layer at a time: linear layers with or without biases,
// fused projections, norms, single tensors.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "models/hf_weights.h"

namespace lmzoo::hf {

class RuleList {
 public:
  explicit RuleList(bool bias) : bias_(bias) {}

  // A linear layer: weight (and bias when the model has biases).
  void linear(const std::string& lmzoo, const std::string& hf, HfLayout layout = HfLayout::kSame) {
    rules_.push_back({lmzoo + ".weight", {hf + ".weight"}, {}, layout});
    if (bias_) rules_.push_back({lmzoo + ".bias", {hf + ".bias"}, {}, layout});  // 1-D: Conv1D leaves it as it is
  }
  // A fused lmzoo linear layer whose output rows are the HF layers' outputs, in order (biases: when the model has
  // them, or where BIAS says so).
  void fused(const std::string& lmzoo, const std::vector<std::string>& hf, const std::vector<int64_t>& rows,
             bool bias = false) {
    std::vector<std::string> weights, biases;
    for (const auto& name : hf) {
      weights.push_back(name + ".weight");
      biases.push_back(name + ".bias");
    }
    rules_.push_back({lmzoo + ".weight", weights, rows, HfLayout::kSame});
    if (bias_ || bias) rules_.push_back({lmzoo + ".bias", biases, rows, HfLayout::kSame});
  }
  // Several lmzoo linear layers (no biases) stacked in one HF tensor, each taking ROWS[i] of its rows in order.
  void split(const std::vector<std::string>& lmzoo, const std::string& hf, const std::vector<int64_t>& rows) {
    for (size_t i = 0; i < lmzoo.size(); ++i) {
      rules_.push_back({lmzoo[i] + ".weight", {hf + ".weight"}, {}, HfLayout::kSame, false, {}, {rows, int64_t(i)}});
    }
  }
  void norm(const std::string& lmzoo, const std::string& hf) { linear(lmzoo, hf); }
  void norm_without_bias(const std::string& lmzoo, const std::string& hf) { tensor(lmzoo + ".weight", hf + ".weight"); }
  void tensor(const std::string& lmzoo, const std::string& hf) { rules_.push_back({lmzoo, {hf}, {}, HfLayout::kSame}); }
  void mark_optional_from(size_t first) {
    for (size_t i = first; i < rules_.size(); ++i) rules_[i].optional = true;
  }
  // The last rule's tensor is also written under NAME (an alias transformers needs on reading).
  void also_written_as(const std::string& name) { rules_.back().also_written_as = name; }
  size_t size() const { return rules_.size(); }
  std::vector<HfWeightRule> take() { return std::move(rules_); }

 private:
  bool bias_;
  std::vector<HfWeightRule> rules_;
};

}  // namespace lmzoo::hf
