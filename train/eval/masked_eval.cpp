// Masked-token and pseudo-log-likelihood perplexity: windows framed as in training, scored in batches.
// Shapes: R rows in a forward pass, T framed length, C d_model, V vocabulary, N scored positions.
#include "train/eval/masked_eval.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "base/interrupt.h"
#include "data/batching/batcher_causal.h"
#include "train/device/device.h"

namespace lmzoo {

namespace {

std::vector<MlmExample> framed_windows(const TokenStream& stream, const SpecialIds& special, int64_t max_seq_len) {
  const int64_t L = max_seq_len - 2;
  TORCH_CHECK(L >= 1, "max_seq_len must leave room for [CLS] and [SEP]");
  std::vector<MlmExample> windows;
  std::vector<int64_t> content;
  for (int64_t begin = 0; begin < stream.size(); begin += L) {
    content.resize(std::min(L, stream.size() - begin));
    stream.read(begin, int64_t(content.size()), content.data());
    windows.push_back(frame_segments(special, content));
  }
  return windows;
}

// Sum of -log p(label) over positions with label >= 0, and their count, for a batch of examples.
std::pair<double, int64_t> score_examples(Bert& model, const std::vector<MlmExample>& examples, int64_t pad,
                                          const torch::Device& device, Precision precision) {
  const MlmBatch b = collate_mlm(examples, pad);
  const auto selected = b.labels >= 0;  // (R, T)
  const int64_t n = selected.sum().item<int64_t>();
  if (n == 0) return {0.0, 0};
  AutocastScope autocast(precision, device);
  auto hidden = model->hidden_states(b.input_ids.to(device), b.attention_mask.to(device),
                                     b.token_type_ids.to(device));              // (R, T, C)
  auto logits = model->mlm_logits(hidden.index({selected.to(device)}));         // (N, V)
  auto targets = b.labels.index({selected}).to(device);                         // (N)
  auto nll = torch::nn::functional::cross_entropy(
      logits.to(torch::kFloat), targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  return {nll.item<double>(), n};
}

PerplexityResult finish(double nll_sum, int64_t scored, int64_t stream_tokens, int64_t source_bytes) {
  PerplexityResult r;
  r.tokens = scored;
  r.nll_sum = nll_sum;
  r.source_bytes = stream_tokens ? int64_t(std::llround(double(source_bytes) * double(scored) / double(stream_tokens)))
                                 : 0;
  return r;
}

}  // namespace

PerplexityResult masked_token_perplexity(Bert& model, const TokenStream& stream, int64_t source_bytes,
                                         const SpecialIds& special, const MaskedEvalOptions& options,
                                         const torch::Device& device) {
  require_mlm_ids(special);
  torch::NoGradGuard no_grad;
  model->eval();
  auto windows = framed_windows(stream, special, model->config().max_seq_len);
  for (size_t i = 0; i < windows.size(); ++i) {
    std::mt19937_64 rng(mix_seed(options.seed, uint64_t(i)));
    apply_masking(windows[i], options.masking, special, model->config().vocab_size, rng);
  }
  double nll_sum = 0.0;
  int64_t scored = 0;
  for (size_t start = 0; start < windows.size(); start += size_t(options.batch_size)) {
    throw_if_interrupted("evaluating");
    const auto end = windows.begin() + int64_t(std::min(windows.size(), start + size_t(options.batch_size)));
    const auto [nll, n] =
        score_examples(model, {windows.begin() + int64_t(start), end}, special.pad, device, options.precision);
    nll_sum += nll;
    scored += n;
  }
  return finish(nll_sum, scored, stream.size(), source_bytes);
}

PerplexityResult pseudo_perplexity(Bert& model, const TokenStream& stream, int64_t source_bytes,
                                   const SpecialIds& special, const MaskedEvalOptions& options,
                                   const torch::Device& device) {
  require_mlm_ids(special);
  torch::NoGradGuard no_grad;
  model->eval();
  double nll_sum = 0.0;
  int64_t scored = 0;
  std::vector<MlmExample> rows;
  auto flush = [&] {
    throw_if_interrupted("evaluating");
    const auto [nll, n] = score_examples(model, rows, special.pad, device, options.precision);
    nll_sum += nll;
    scored += n;
    rows.clear();
  };
  for (const auto& window : framed_windows(stream, special, model->config().max_seq_len)) {
    for (size_t i = 0; i < window.ids.size(); ++i) {
      if (special.contains(window.ids[i])) continue;
      MlmExample row = window;  // this token alone masked
      row.labels[i] = row.ids[i];
      row.ids[i] = special.mask;
      rows.push_back(std::move(row));
      if (int64_t(rows.size()) == options.batch_size) flush();
    }
  }
  if (!rows.empty()) flush();
  PerplexityResult r = finish(nll_sum, scored, stream.size(), source_bytes);
  r.source_bytes = source_bytes;  // every token that has bytes was scored
  return r;
}

}  // namespace lmzoo
