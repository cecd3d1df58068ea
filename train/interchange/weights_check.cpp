// Strict weight loading: compares the (nested) tensors of a torch::save archive with a module's
// named_parameters() and named_buffers(); reports missing, unexpected and reshaped tensors.
#include "train/interchange/weights_check.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace lmzoo {

namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;  // in archive / registration order

// Module::save writes a module's own tensors under their names and each child as a nested archive.
void collect_archive(torch::serialize::InputArchive& archive, const std::string& prefix, Shapes& out) {
  for (const auto& key : archive.keys()) {
    c10::IValue value;
    if (!archive.try_read(key, value)) continue;
    if (value.isTensor()) {
      out.emplace_back(prefix + key, value.toTensor().sizes().vec());
    } else if (value.isObject()) {
      torch::serialize::InputArchive child;
      if (archive.try_read(key, child)) collect_archive(child, prefix + key + ".", out);
    }
  }
}

// The tensors a checkpoint of module holds: parameters and buffers, less those of submodules that are not
// serialized (derived tables such as PositionTables).
Shapes module_shapes(const torch::nn::Module& module) {
  std::vector<std::string> unsaved;  // "name." prefixes
  for (const auto& m : module.named_modules()) {
    if (!m.value()->is_serializable()) unsaved.push_back(m.key() + ".");
  }
  auto saved = [&](const std::string& name) {
    return std::none_of(unsaved.begin(), unsaved.end(), [&](const std::string& p) { return name.rfind(p, 0) == 0; });
  };
  Shapes out;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    if (saved(p.key())) out.emplace_back(p.key(), p.value().sizes().vec());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    if (saved(b.key())) out.emplace_back(b.key(), b.value().sizes().vec());
  }
  return out;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::string weight_mismatches(torch::serialize::InputArchive& archive, const torch::nn::Module& module) {
  Shapes saved;
  collect_archive(archive, "", saved);
  const Shapes wanted = module_shapes(module);
  const std::map<std::string, std::vector<int64_t>> saved_map(saved.begin(), saved.end());
  const std::map<std::string, std::vector<int64_t>> wanted_map(wanted.begin(), wanted.end());

  std::vector<std::string> differences;
  for (const auto& [name, shape] : wanted) {
    const auto it = saved_map.find(name);
    if (it == saved_map.end()) {
      differences.push_back("the model's " + name + " " + shape_str(shape) + " is missing from model.pt");
    } else if (it->second != shape) {
      differences.push_back(name + " is " + shape_str(it->second) + " in model.pt but " + shape_str(shape) +
                            " in the model");
    }
  }
  for (const auto& [name, shape] : saved) {
    if (!wanted_map.count(name)) differences.push_back("model.pt has " + name + " " + shape_str(shape) + " not in the model");
  }
  constexpr size_t kShown = 3;
  std::string message;
  for (size_t i = 0; i < differences.size() && i < kShown; ++i) message += (i ? "; " : "") + differences[i];
  if (differences.size() > kShown) message += " (and " + std::to_string(differences.size() - kShown) + " more)";
  return message;
}

}  // namespace lmzoo
