// Sampling and KV-cached decoding. GPT: when the sequence outgrows the context, the last max_seq_len - 1
// tokens are re-encoded and decoding continues from a fresh cache. T5: one encoding, cached decoder steps.
// A SIGINT (base/interrupt.h) ends decoding early with the tokens produced so far.
#include "models/generation.h"

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

#include "base/interrupt.h"

namespace lmzoo {

int64_t sample_next_token(const torch::Tensor& logits_in, const SamplingOptions& options, at::Generator& generator) {
  auto logits = logits_in.to(torch::kCPU, torch::kFloat);  // (V)
  if (options.temperature <= 0.0) return logits.argmax().item<int64_t>();
  // In fp64, less the largest: the largest scales to 0 and the rest to <= 0 at any positive temperature (in fp32 a
  // temperature near 0 makes the logits +inf and the probabilities NaN).
  logits = logits.to(torch::kDouble);
  logits = (logits - logits.max()) / options.temperature;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (options.top_k > 0 && options.top_k < logits.size(0)) {
    auto kth = std::get<0>(logits.topk(options.top_k)).min();
    logits.masked_fill_(logits < kth, neg_inf);
  }
  if (options.top_p < 1.0) {
    auto sorted = logits.sort(/*dim=*/0, /*descending=*/true);
    auto probs = torch::softmax(std::get<0>(sorted), 0);
    // Drop a token when the mass before it already reaches top_p (the top token always stays).
    auto drop_sorted = (probs.cumsum(0) - probs) >= options.top_p;
    auto drop = torch::zeros_like(drop_sorted).scatter(0, std::get<1>(sorted), drop_sorted);
    logits.masked_fill_(drop, neg_inf);
  }
  auto probs = torch::softmax(logits, 0);
  return torch::multinomial(probs, 1, /*replacement=*/false, generator).item<int64_t>();
}

std::vector<int64_t> generate_tokens(GPT& model, const std::vector<int64_t>& prompt, const SamplingOptions& options) {
  if (prompt.empty()) throw std::invalid_argument("generation needs a non-empty prompt");
  torch::NoGradGuard no_grad;
  model->eval();
  const auto device = model->wte->weight.device();
  const int64_t context = model->config().max_seq_len;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<int64_t> sequence = prompt, generated;
  KVCache cache;
  auto feed = [&](const std::vector<int64_t>& ids) {
    auto input = torch::tensor(ids, torch::kLong).view({1, -1}).to(device);  // (1, T)
    return model->forward(input, &cache).select(1, -1).squeeze(0);          // (V)
  };
  // Prefill with the prompt's last context - 1 tokens.
  cache = model->new_cache();
  const int64_t start = std::max<int64_t>(0, int64_t(sequence.size()) - (context - 1));
  auto logits = feed(std::vector<int64_t>(sequence.begin() + start, sequence.end()));
  for (int64_t i = 0; i < options.max_new_tokens && !interrupt_requested(); ++i) {
    const int64_t next = sample_next_token(logits, options, generator);
    sequence.push_back(next);
    generated.push_back(next);
    if (options.stops_at(next)) break;
    if (cache[0].length() + 1 > context) {  // window full: re-encode the recent tokens
      cache = model->new_cache();
      logits = feed(std::vector<int64_t>(sequence.end() - (context - 1), sequence.end()));
    } else {
      logits = feed({next});
    }
  }
  return generated;
}

std::vector<int64_t> generate_t5_tokens(T5& model, const std::vector<int64_t>& input, const SamplingOptions& options) {
  if (input.empty()) throw std::invalid_argument("generation needs a non-empty input");
  torch::NoGradGuard no_grad;
  model->eval();
  const auto device = model->shared->weight.device();
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  auto encoded = model->encode(torch::tensor(input, torch::kLong).view({1, -1}).to(device));  // (1, S, C)
  T5Cache cache = model->new_cache();
  std::vector<int64_t> generated;
  int64_t next = 0;  // decoder start id: pad
  for (int64_t i = 0; i < options.max_new_tokens && !interrupt_requested(); ++i) {
    auto step = torch::full({1, 1}, next, torch::TensorOptions().dtype(torch::kLong).device(device));  // (1, 1)
    auto logits = model->decode(step, i == 0 ? encoded : torch::Tensor(), torch::Tensor(), &cache);  // (1, 1, V)
    next = sample_next_token(logits.select(1, 0).squeeze(0), options, generator);
    generated.push_back(next);
    if (options.stops_at(next)) break;
  }
  return generated;
}

}  // namespace lmzoo
