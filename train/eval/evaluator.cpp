// Sliding-window perplexity: windows of the context length moved by a stride, batched.
// Shapes: W windows in a batch, L window length (<= context), V vocabulary.
#include "train/eval/evaluator.h"

#include <algorithm>
#include <cmath>

#include "base/interrupt.h"
#include "train/device/device.h"

namespace lmzoo {

namespace {
// A window reads inputs [begin, end - 1) and predicts tokens [begin + 1, end); only targets at
// index >= first_scored are counted, so each token is scored exactly once.
struct Window {
  int64_t begin, end, first_scored;
};

std::vector<Window> plan_windows(int64_t n_tokens, int64_t context, int64_t stride) {
  std::vector<Window> windows;
  int64_t scored_until = 1;  // token 0 has no left context
  for (int64_t begin = 0; scored_until < n_tokens; begin += stride) {
    const int64_t end = std::min(begin + context + 1, n_tokens);
    windows.push_back({begin, end, scored_until});
    scored_until = end;
  }
  return windows;
}
}  // namespace

double PerplexityResult::ppl() const { return std::exp(nll()); }

double PerplexityResult::bits_per_byte() const {
  return source_bytes > 0 ? nll_sum / std::log(2.0) / double(source_bytes) : 0.0;
}

nlohmann::json PerplexityResult::to_json() const {
  return {{"tokens", tokens}, {"nll", nll()}, {"ppl", ppl()}, {"bpb", bits_per_byte()}, {"bytes", source_bytes}};
}

PerplexityResult sliding_window_perplexity(GPT& model, const TokenStream& stream, int64_t source_bytes,
                                           const PerplexityOptions& options, const torch::Device& device) {
  const int64_t context = model->config().max_seq_len;
  const int64_t stride = options.stride > 0 ? std::min(options.stride, context) : std::max<int64_t>(1, context / 2);
  torch::NoGradGuard no_grad;
  model->eval();
  PerplexityResult result;
  result.source_bytes = source_bytes;
  const auto windows = plan_windows(stream.size(), context, stride);
  for (size_t first = 0; first < windows.size();) {
    throw_if_interrupted("evaluating");
    // Batch consecutive windows of the same length (all but the last are full length).
    const int64_t length = windows[first].end - windows[first].begin - 1;
    size_t last = first;
    while (last < windows.size() && int64_t(last - first) < options.batch_size &&
           windows[last].end - windows[last].begin - 1 == length) {
      ++last;
    }
    const int64_t W = int64_t(last - first);
    auto tokens = torch::empty({W, length + 1}, torch::kLong);  // (W, L+1)
    auto targets_mask = torch::zeros({W, length}, torch::kBool);  // (W, L) true where scored
    for (int64_t w = 0; w < W; ++w) {
      const Window& win = windows[first + w];
      stream.read(win.begin, length + 1, tokens.data_ptr<int64_t>() + w * (length + 1));
      targets_mask[w].slice(0, win.first_scored - win.begin - 1, length).fill_(true);
    }
    auto inputs = tokens.slice(1, 0, length).to(device);  // (W, L)
    auto targets = tokens.slice(1, 1, length + 1).masked_fill(~targets_mask, -1).to(device);  // (W, L)
    torch::Tensor logits;
    {
      AutocastScope autocast(options.precision, device);
      logits = model->forward(inputs);  // (W, L, V)
    }
    auto nll = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), targets.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1).reduction(torch::kSum));
    result.nll_sum += nll.item<double>();
    result.tokens += targets_mask.sum().item<int64_t>();
    first = last;
  }
  return result;
}

}  // namespace lmzoo
