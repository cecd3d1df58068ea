// Hugging Face tensors <-> lmzoo parameters through the rule table of each class's family (models/hf/): the copies in
// both directions, the layouts, the checks on what a file holds.
#include "models/hf_weights.h"

#include <set>
#include <sstream>

#include "models/hf/family.h"

namespace lmzoo {

namespace {

std::string shape_text(torch::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

// The canonical name of a checkpoint tensor: gamma/beta as weight/bias, and the names save_pretrained writes for
// class A (checkpoints saved from the bare model lack the base-model prefix, and vice versa).
std::string canonical_name(HfArchitecture a, std::string name) {
  if (hf::ends_with(name, ".gamma")) name = name.substr(0, name.size() - 6) + ".weight";
  if (hf::ends_with(name, ".beta")) name = name.substr(0, name.size() - 5) + ".bias";
  return hf::hf_family_of(a).canonical_name(a, name);
}

// Checkpoint tensors that carry nothing lmzoo needs: buffers any class may save, then the family's own.
bool ignorable(HfArchitecture a, const ModelConfig& c, const std::string& name) {
  if (hf::ends_with(name, "embeddings.position_ids") || hf::ends_with(name, "rotary_emb.inv_freq")) return true;
  return hf::hf_family_of(a).ignorable(a, c, name);
}

// GPT-NeoX's per-head [q_h; k_h; v_h] rows <-> lmzoo's [q; k; v]: (n_head, 3, hs, ...) <-> (3, n_head, hs, ...) on
// dim 0, an exact permutation. A tensor of another row count is left as it is (the shape check names it).
torch::Tensor permute_qkv_rows(const torch::Tensor& t, const ModelConfig& c, bool to_lmzoo) {
  const int64_t nh = c.n_head, hs = c.head_size();
  if (t.dim() < 1 || t.size(0) != 3 * nh * hs) return t;
  std::vector<int64_t> grouped = to_lmzoo ? std::vector<int64_t>{nh, 3, hs} : std::vector<int64_t>{3, nh, hs};
  for (int64_t d = 1; d < t.dim(); ++d) grouped.push_back(t.size(d));
  return t.reshape(grouped).transpose(0, 1).reshape(t.sizes()).contiguous();  // rows regrouped, other dims kept
}

torch::Tensor from_hf(const torch::Tensor& t, HfLayout layout, const ModelConfig& c) {
  auto x = t.to(torch::kFloat);
  if (layout == HfLayout::kHeadInterleavedQkv) return permute_qkv_rows(x, c, /*to_lmzoo=*/true);
  return layout == HfLayout::kConv1D && x.dim() == 2 ? x.t() : x;
}

// Part RULE.part.index of an HF tensor whose rows hold several parameters (RULE.part.rows each); a tensor of another
// row count is returned whole, for the shape check to name it.
torch::Tensor part_of(const torch::Tensor& whole, const HfWeightRule& rule) {
  int64_t total = 0;
  for (int64_t rows : rule.part.rows) total += rows;
  if (whole.dim() < 1 || whole.size(0) != total) return whole;
  return whole.split_with_sizes(rule.part.rows, 0)[size_t(rule.part.index)];
}

}  // namespace

std::vector<HfWeightRule> hf_weight_rules(HfArchitecture a, const ModelConfig& c) {
  return hf::hf_family_of(a).weights(c, a);
}

std::vector<std::pair<std::string, torch::Tensor>> hf_tensors_from_model(const torch::nn::Module& model,
                                                                         HfArchitecture a, const ModelConfig& c) {
  const auto params = model.named_parameters();
  std::vector<std::pair<std::string, torch::Tensor>> out;
  std::map<std::string, std::vector<torch::Tensor>> parts_of;  // HF tensors stacked from several parameters
  for (const auto& rule : hf_weight_rules(a, c)) {
    if (rule.optional) continue;
    const torch::Tensor* p = params.find(rule.lmzoo);
    if (!p) throw std::logic_error("lmzoo model has no parameter " + rule.lmzoo);
    auto value = p->detach().to(torch::kCPU, torch::kFloat);
    if (rule.layout == HfLayout::kConv1D && value.dim() == 2) value = value.t();
    if (rule.layout == HfLayout::kHeadInterleavedQkv) value = permute_qkv_rows(value, c, /*to_lmzoo=*/false);
    if (!rule.part.rows.empty()) {
      auto& parts = parts_of[rule.hf[0]];
      parts.push_back(value);
      if (parts.size() == rule.part.rows.size()) out.emplace_back(rule.hf[0], torch::cat(parts, 0).contiguous());
      continue;
    }
    if (rule.hf.size() == 1) {
      out.emplace_back(rule.hf[0], value.contiguous());
    } else {
      const auto parts = value.split_with_sizes(rule.rows, 0);  // rows of each HF tensor
      for (size_t i = 0; i < rule.hf.size(); ++i) out.emplace_back(rule.hf[i], parts[i].contiguous());
    }
    if (!rule.also_written_as.empty()) out.emplace_back(rule.also_written_as, out.back().second);
  }
  return out;
}

void check_hf_weight(const std::string& name, const torch::Tensor& t) {
  if (!t.is_floating_point()) {
    throw HfFormatError("tensor '" + name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                        " where a floating-point weight belongs");
  }
  const int64_t bad = t.numel() - torch::isfinite(t.to(torch::kFloat)).sum().item<int64_t>();
  if (bad > 0) {
    throw HfFormatError("tensor '" + name + "' holds " + std::to_string(bad) + " NaN or infinite value" +
                        (bad == 1 ? "" : "s") + " (a damaged or diverged checkpoint)");
  }
}

HfImportReport load_hf_tensors(torch::nn::Module& model, HfArchitecture a, const ModelConfig& c,
                               const std::map<std::string, torch::Tensor>& tensors) {
  HfImportReport report;
  std::map<std::string, std::string> file_name_of;  // canonical name -> name in the file
  for (const auto& item : tensors) {
    const std::string canonical = canonical_name(a, item.first);
    if (!file_name_of.emplace(canonical, item.first).second) {
      throw HfFormatError("the checkpoint holds '" + item.first + "' twice (also as '" + file_name_of[canonical] + "')");
    }
  }
  for (const auto& [name, alias] : hf::hf_family_of(a).aliases) {
    if (!file_name_of.count(name) && file_name_of.count(alias)) {
      file_name_of[name] = file_name_of[alias];
      file_name_of.erase(alias);
    }
  }
  torch::NoGradGuard no_grad;
  auto params = model.named_parameters();
  std::set<std::string> used, covered;
  for (const auto& rule : hf_weight_rules(a, c)) {
    covered.insert(rule.lmzoo);
    std::vector<torch::Tensor> parts;
    for (const auto& name : rule.hf) {
      auto found = file_name_of.find(name);
      if (found == file_name_of.end()) break;
      check_hf_weight(found->second, tensors.at(found->second));
      parts.push_back(from_hf(tensors.at(found->second), rule.layout, c));
      used.insert(name);
    }
    if (parts.size() != rule.hf.size()) {
      if (rule.optional && parts.empty()) {
        report.kept_initial.push_back(rule.lmzoo);
        continue;
      }
      throw HfFormatError("the checkpoint has no tensor '" + rule.hf[parts.size()] + "', which " + enum_name(a) +
                          " needs");
    }
    torch::Tensor* p = params.find(rule.lmzoo);
    if (!p) throw std::logic_error("lmzoo model has no parameter " + rule.lmzoo);
    auto value = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);  // rows of every HF tensor in turn
    if (!rule.part.rows.empty()) value = part_of(value, rule);
    if (value.sizes() != p->sizes()) {
      throw HfFormatError("tensor '" + rule.hf[0] + "' has shape " + shape_text(parts[0].sizes()) +
                          (parts.size() > 1 ? " (with the others fused: " + shape_text(value.sizes()) + ")" : "") +
                          " but config.json implies " + shape_text(p->sizes()) + " for it");
    }
    p->copy_(value);
  }
  for (const auto& item : params) {
    if (!covered.count(item.key())) report.kept_initial.push_back(item.key());
  }
  for (const auto& item : file_name_of) {
    if (used.count(item.first)) continue;
    if (!ignorable(a, c, item.first)) {
      throw HfFormatError("the checkpoint holds '" + item.second + "', which " + enum_name(a) +
                          " as lmzoo builds it has no place for");
    }
    report.ignored.push_back(item.second);
  }
  return report;
}

}  // namespace lmzoo
