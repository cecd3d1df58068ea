// Fill-mask: one forward pass in eval mode, softmax over non-special ids at each [MASK], top-k.
#include "models/fill_mask.h"

#include <limits>
#include <stdexcept>

namespace lmzoo {

std::vector<std::vector<MaskCandidate>> fill_masks(Bert& model, const SpecialIds& special,
                                                   const std::vector<int64_t>& ids, int64_t top_k) {
  if (int64_t(ids.size()) > model->config().max_seq_len - 2) {
    throw std::invalid_argument("the prompt has " + std::to_string(ids.size()) + " tokens; the model reads at most " +
                                std::to_string(model->config().max_seq_len - 2));
  }
  torch::NoGradGuard no_grad;
  model->eval();
  std::vector<int64_t> framed = {special.cls};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(special.sep);
  const auto device = model->word_embeddings->weight.device();
  auto input = torch::tensor(framed, torch::kLong).unsqueeze(0).to(device);  // (1, T)
  auto logits = model->forward(input)[0].to(torch::kCPU, torch::kFloat);     // (T, V)
  int64_t excluded = 0;
  for (int id : special.ids()) {
    if (id >= logits.size(1)) continue;
    logits.select(1, id).fill_(-std::numeric_limits<float>::infinity());
    ++excluded;
  }
  const int64_t k = std::min<int64_t>(top_k, logits.size(1) - excluded);
  std::vector<std::vector<MaskCandidate>> out;
  for (size_t t = 0; t < framed.size(); ++t) {
    if (framed[t] != special.mask) continue;
    auto [probs, top_ids] = torch::softmax(logits[int64_t(t)], -1).topk(k);  // (k), (k)
    std::vector<MaskCandidate> candidates;
    for (int64_t i = 0; i < k; ++i) {
      candidates.push_back({top_ids[i].item<int64_t>(), probs[i].item<double>()});
    }
    out.push_back(std::move(candidates));
  }
  return out;
}

}  // namespace lmzoo
