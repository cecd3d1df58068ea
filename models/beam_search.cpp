// Beam search: the search itself (scores on the CPU in double, candidates chosen on the model's device) and
// the GPT / T5 decoders it runs over. Shapes: B inputs, K beams, N = B * K rows, V vocabulary, S encoder
// positions, C d_model, T new positions.
#include "models/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "base/interrupt.h"

namespace lmzoo {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Finished hypotheses of one input: the best `capacity` by score.
struct Finished {
  std::vector<Hypothesis> items;
  size_t capacity = 1;
  double worst() const {
    double w = std::numeric_limits<double>::infinity();
    for (const auto& h : items) w = std::min(w, h.score);
    return w;
  }
  void add(Hypothesis h) {
    if (items.size() < capacity) {
      items.push_back(std::move(h));
      return;
    }
    auto worst_it = std::min_element(items.begin(), items.end(),
                                     [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    if (h.score > worst_it->score) *worst_it = std::move(h);
  }
};

}  // namespace

void BeamSearchOptions::validate() const {
  if (num_beams < 1) throw std::invalid_argument("beam search needs at least 1 beam, got " + std::to_string(num_beams));
  if (num_return < 1 || num_return > num_beams) {
    throw std::invalid_argument("num_return must be in [1, num_beams = " + std::to_string(num_beams) + "], got " +
                                std::to_string(num_return));
  }
  if (max_new_tokens < 0) throw std::invalid_argument("max_new_tokens must be >= 0");
  if (!std::isfinite(length_penalty)) throw std::invalid_argument("length_penalty must be finite");
}

double length_penalty(int64_t length, double alpha) { return std::pow((5.0 + double(length)) / 6.0, alpha); }

namespace {

// The search between steps: per input its finished hypotheses and whether it is done; per live row its summed
// log-prob and generated tokens. Live rows: the first step has one row per input, later steps K.
struct BeamState {
  std::vector<Finished> finished;                // (B)
  std::vector<bool> done;                        // (B)
  int64_t width = 1;                             // live rows per input
  std::vector<double> scores;                    // (B * width) summed log-probs
  std::vector<std::vector<int64_t>> sequences;   // (B * width) generated tokens
  BeamState(int64_t batch, int64_t K) : finished(batch), done(batch, false), scores(batch, 0.0), sequences(batch) {
    for (auto& f : finished) f.capacity = size_t(K);
  }
  bool all_done() const { return std::all_of(done.begin(), done.end(), [](bool d) { return d; }); }
};

// The best candidates of each input, best first: flat indices into its (width * V) continuations and their
// token log-probs.
struct Candidates {
  int64_t count = 0;
  torch::Tensor index;      // (B, count) int64 on the CPU
  torch::Tensor log_probs;  // (B, count) double on the CPU
};

// The rows of the next step (N = B * K): row r continues old row parents[r] with tokens[r].
struct NextRows {
  std::vector<int64_t> parents, tokens;
  std::vector<double> scores;
  std::vector<std::vector<int64_t>> sequences;
  NextRows(int64_t n, int64_t pad_id) : parents(n), tokens(n, pad_id), scores(n, kNegInf), sequences(n) {}
};

// Candidates ranked by summed log-prob, computed on the logits' device (B * width, V).
Candidates top_candidates(const torch::Tensor& logits, const BeamState& state, int64_t batch, int64_t K) {
  const int64_t width = state.width, V = logits.size(1);
  auto log_probs = torch::log_softmax(logits.to(torch::kFloat), -1);  // (B * width, V)
  auto row_scores = torch::tensor(state.scores, torch::kDouble).to(log_probs.device(), torch::kFloat);
  auto totals = (log_probs + row_scores.view({-1, 1})).view({batch, width * V});  // (B, width * V)
  // 2K candidates: even if K of them end in eos, K live beams remain.
  Candidates candidates;
  candidates.count = std::min(2 * K, width * V);
  auto top_index = std::get<1>(totals.topk(candidates.count, 1));  // (B, count), best first
  candidates.log_probs = log_probs.view({batch, width * V}).gather(1, top_index).to(torch::kCPU, torch::kDouble);
  candidates.index = top_index.cpu();
  return candidates;
}

// Input b's share of one step (LEN tokens per candidate): an eos among its top K candidates closes a hypothesis,
// the other candidates fill its K next rows, best first.
void extend_input(int64_t b, int64_t len, int64_t V, const Candidates& candidates, const BeamSearchOptions& options,
                  BeamState& state, NextRows& next) {
  const int64_t K = options.num_beams, width = state.width;
  auto index_a = candidates.index.accessor<int64_t, 2>();
  auto log_prob_a = candidates.log_probs.accessor<double, 2>();
  int64_t kept = 0;
  if (!state.done[b]) {
    for (int64_t c = 0; c < candidates.count && kept < K; ++c) {
      const int64_t beam = index_a[b][c] / V, token = index_a[b][c] % V, old = b * width + beam;
      const double total = state.scores[old] + log_prob_a[b][c];
      if (!std::isfinite(total)) break;  // dead rows (tiny vocabularies) sort last
      if (token == options.eos_id) {
        // As HF: an eos only counts from the top K candidates; it closes a hypothesis.
        if (c >= K) continue;
        Hypothesis h;
        h.tokens = state.sequences[old];
        h.tokens.push_back(token);
        h.log_prob = total;
        h.score = total / length_penalty(len, options.length_penalty);
        state.finished[b].add(std::move(h));
        continue;
      }
      const int64_t row = b * K + kept++;
      next.parents[row] = old;
      next.tokens[row] = token;
      next.scores[row] = total;
      next.sequences[row] = state.sequences[old];
      next.sequences[row].push_back(token);
    }
  }
  // Rows without a live beam (input done, or too few candidates) follow row b * width with a pad and
  // score -inf, so they never produce a candidate again.
  for (; kept < K; ++kept) next.parents[b * K + kept] = b * width;
}

// Whether a live input is done after a step of LEN tokens whose best live beam scored BEST_LIVE.
bool input_done(const Finished& finished, double best_live, int64_t len, const BeamSearchOptions& options) {
  const double alpha = options.length_penalty;
  if (best_live == kNegInf) return true;
  if (finished.items.size() < size_t(options.num_beams)) return false;
  if (options.early_stopping) return true;
  // Best score a live beam can still reach: its sum only falls; length max_new_tokens (alpha > 0) or
  // len + 1 (alpha <= 0) maximises sum / penalty for a negative sum.
  const int64_t best_length = alpha > 0 ? options.max_new_tokens : len + 1;
  return finished.worst() >= best_live / length_penalty(best_length, alpha);
}

// At the length limit the live beams compete with the finished ones; per input, the best num_return.
std::vector<std::vector<Hypothesis>> collect_results(BeamState& state, const BeamSearchOptions& options) {
  const int64_t K = options.num_beams, batch = int64_t(state.finished.size());
  std::vector<std::vector<Hypothesis>> results(batch);
  for (int64_t b = 0; b < batch; ++b) {
    if (!state.done[b]) {
      for (int64_t j = 0; j < K; ++j) {
        const int64_t row = b * K + j;
        if (state.scores[row] == kNegInf) continue;
        Hypothesis h;
        h.tokens = state.sequences[row];
        h.log_prob = state.scores[row];
        h.score = state.scores[row] / length_penalty(int64_t(h.tokens.size()), options.length_penalty);
        state.finished[b].add(std::move(h));
      }
    }
    auto& items = state.finished[b].items;
    std::stable_sort(items.begin(), items.end(),
                     [](const Hypothesis& a, const Hypothesis& c) { return a.score > c.score; });
    if (items.size() > size_t(options.num_return)) items.resize(size_t(options.num_return));
    results[b] = std::move(items);
  }
  return results;
}

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(BeamDecoder& decoder, int64_t batch,
                                                 const BeamSearchOptions& options) {
  options.validate();
  if (batch < 1) throw std::invalid_argument("beam search needs at least one input");
  const int64_t K = options.num_beams;
  if (options.max_new_tokens == 0) return std::vector<std::vector<Hypothesis>>(batch, {Hypothesis{}});
  torch::NoGradGuard no_grad;

  BeamState state(batch, K);
  torch::Tensor logits = decoder.start();  // (B, V)
  TORCH_CHECK(logits.dim() == 2 && logits.size(0) == batch, "beam decoder start() returned logits ",
              logits.sizes(), " for ", batch, " inputs");
  const int64_t V = logits.size(1);

  for (int64_t len = 1;; ++len) {  // len: tokens in each candidate
    throw_if_interrupted("searching beams");
    const Candidates candidates = top_candidates(logits, state, batch, K);
    NextRows next(batch * K, options.pad_id);
    for (int64_t b = 0; b < batch; ++b) {
      extend_input(b, len, V, candidates, options, state, next);
      // Candidates came best first: row b * K holds the best live beam.
      if (!state.done[b]) state.done[b] = input_done(state.finished[b], next.scores[b * K], len, options);
    }
    state.width = K;
    state.scores = std::move(next.scores);
    state.sequences = std::move(next.sequences);
    if (len == options.max_new_tokens || state.all_done()) break;
    logits = decoder.step(torch::tensor(next.parents, torch::kLong), torch::tensor(next.tokens, torch::kLong));  // (N, V)
    TORCH_CHECK(logits.dim() == 2 && logits.size(0) == batch * K && logits.size(1) == V,
                "beam decoder step() returned logits ", logits.sizes(), ", expected (", batch * K, ", ", V, ")");
  }
  return collect_results(state, options);
}

void reorder_cache(KVCache& cache, const torch::Tensor& rows) {
  for (auto& layer : cache) {
    if (!layer.k.defined()) continue;
    const auto index = rows.to(layer.k.device());
    layer.k = layer.k.index_select(0, index);  // (N, nh, P, hs)
    layer.v = layer.v.index_select(0, index);  // (N, nh, P, hs)
  }
}

void reorder_cache(T5Cache& cache, const torch::Tensor& rows, bool cross) {
  reorder_cache(cache.self, rows);
  if (!cross) return;
  reorder_cache(cache.cross, rows);  // (N, nh, S, hs)
  if (cache.encoder_hidden.defined()) {
    cache.encoder_hidden = cache.encoder_hidden.index_select(0, rows.to(cache.encoder_hidden.device()));  // (N, S, C)
  }
}

namespace {

class GptBeamDecoder : public BeamDecoder {
 public:
  GptBeamDecoder(GPT& model, const std::vector<int64_t>& prompt) : model_(model), prompt_(prompt) {}

  torch::Tensor start() override {
    const auto device = model_->wte->weight.device();
    rows_ = torch::tensor(prompt_, torch::kLong).view({1, -1}).to(device);  // (1, T)
    return refill();
  }

  torch::Tensor step(const torch::Tensor& parents, const torch::Tensor& tokens) override {
    const auto index = parents.to(rows_.device());
    const auto next = tokens.to(rows_.device()).view({-1, 1});   // (N, 1)
    rows_ = torch::cat({rows_.index_select(0, index), next}, 1);  // (N, L)
    if (cache_[0].length() + 1 > model_->config().max_seq_len) return refill();  // window full
    reorder_cache(cache_, index);
    return model_->forward(next, &cache_).select(1, -1);  // (N, V)
  }

 private:
  // A fresh cache over each row's last max_seq_len - 1 tokens; the logits (rows, V) of the next token.
  torch::Tensor refill() {
    const int64_t keep = std::min<int64_t>(rows_.size(1), model_->config().max_seq_len - 1);
    cache_ = model_->new_cache();
    return model_->forward(rows_.slice(1, rows_.size(1) - keep), &cache_).select(1, -1);  // (rows, V)
  }

  GPT model_;
  std::vector<int64_t> prompt_;
  KVCache cache_;
  torch::Tensor rows_;  // (rows, L): prompt and generated tokens of each row
};

class T5BeamDecoder : public BeamDecoder {
 public:
  T5BeamDecoder(T5& model, const std::vector<std::vector<int64_t>>& inputs) : model_(model), inputs_(inputs) {}

  torch::Tensor start() override {
    const auto device = model_->shared->weight.device();
    const int64_t B = int64_t(inputs_.size());
    int64_t S = 0;
    for (const auto& input : inputs_) S = std::max<int64_t>(S, int64_t(input.size()));
    auto ids = torch::zeros({B, S}, torch::kLong);   // (B, S), pad 0
    auto mask = torch::zeros({B, S}, torch::kLong);  // (B, S), 1 real
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = int64_t(inputs_[b].size());
      ids[b].slice(0, 0, n).copy_(torch::tensor(inputs_[b], torch::kLong));
      mask[b].slice(0, 0, n).fill_(1);
    }
    ids = ids.to(device);
    mask_ = mask.to(device);
    auto encoded = model_->encode(ids, mask_);  // (B, S, C)
    cache_ = model_->new_cache();
    auto start_ids = torch::zeros({B, 1}, torch::TensorOptions().dtype(torch::kLong).device(device));  // pad
    return model_->decode(start_ids, encoded, mask_, &cache_).select(1, 0);  // (B, V)
  }

  torch::Tensor step(const torch::Tensor& parents, const torch::Tensor& tokens) override {
    const auto index = parents.to(mask_.device());
    // The first step expands B inputs to N rows: the encoder output, its mask and the cross keys/values
    // are repeated once; later reorders stay within an input's beams, which share them.
    reorder_cache(cache_, index, /*cross=*/!expanded_);
    if (!expanded_) mask_ = mask_.index_select(0, index);  // (N, S)
    expanded_ = true;
    auto next = tokens.to(mask_.device()).view({-1, 1});                         // (N, 1)
    return model_->decode(next, torch::Tensor(), mask_, &cache_).select(1, 0);  // (N, V)
  }

 private:
  T5 model_;
  std::vector<std::vector<int64_t>> inputs_;
  T5Cache cache_;
  torch::Tensor mask_;  // (rows, S)
  bool expanded_ = false;
};

}  // namespace

std::vector<Hypothesis> beam_search_gpt(GPT& model, const std::vector<int64_t>& prompt,
                                        const BeamSearchOptions& options) {
  if (prompt.empty()) throw std::invalid_argument("generation needs a non-empty prompt");
  torch::NoGradGuard no_grad;
  model->eval();
  GptBeamDecoder decoder(model, prompt);
  return beam_search(decoder, 1, options)[0];
}

std::vector<std::vector<Hypothesis>> beam_search_t5(T5& model, const std::vector<std::vector<int64_t>>& inputs,
                                                     const BeamSearchOptions& options) {
  if (inputs.empty()) throw std::invalid_argument("beam search needs at least one input");
  for (const auto& input : inputs) {
    if (input.empty()) throw std::invalid_argument("generation needs a non-empty input");
  }
  torch::NoGradGuard no_grad;
  model->eval();
  T5BeamDecoder decoder(model, inputs);
  return beam_search(decoder, int64_t(inputs.size()), options);
}

}  // namespace lmzoo
