// Masked-LM batches: framing, BERT's 80/10/10 corruption (per token or per whole word), padding.
// Random numbers come straight from mt19937_64 bits, so batches are the same under any standard library.
#include "data/batching/batcher_mlm.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "data/batching/batcher_causal.h"

namespace lmzoo {

namespace {
double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * (1.0 / 9007199254740992.0); }
int64_t uniform_below(std::mt19937_64& rng, int64_t n) { return int64_t(rng() % uint64_t(n)); }

// The special ids below VOCAB_SIZE, ascending.
std::vector<int> specials_below(const SpecialIds& special, int64_t vocab_size) {
  std::vector<int> ids = special.ids();
  ids.erase(std::lower_bound(ids.begin(), ids.end(), vocab_size), ids.end());
  return ids;
}

// The K-th (0-based) id of [0, vocab) not in SPECIALS (ascending): for lmzoo's ids, kNumSpecial + k.
int64_t kth_ordinary_id(int64_t k, const std::vector<int>& specials) {
  for (int s : specials) k += s <= k ? 1 : 0;
  return k;
}

void check_masking(const MaskingOptions& o, const SpecialIds& special, int64_t vocab_size, bool has_word_start) {
  auto in01 = [](double p) { return p >= 0.0 && p <= 1.0; };
  if (!in01(o.select_prob) || !in01(o.mask_prob) || !in01(o.random_prob) || o.mask_prob + o.random_prob > 1.0) {
    throw std::invalid_argument("masking: select, mask and random rates must lie in [0, 1], mask + random <= 1");
  }
  const int64_t specials = int64_t(specials_below(special, vocab_size).size());
  if (o.random_prob > 0 && vocab_size <= specials) {
    throw std::invalid_argument("masking: vocab_size " + std::to_string(vocab_size) + " leaves no non-special id (" +
                                std::to_string(specials) + " ids are special) for random replacement");
  }
  if (o.whole_word && !has_word_start) {
    throw std::invalid_argument("masking: whole-word masking needs a word-start predicate (the tokenizer's)");
  }
}
}  // namespace

void require_mlm_ids(const SpecialIds& special, const std::string& objective) {
  special.require(special.mask, "[MASK]", objective);
  special.require(special.cls, "[CLS]", objective);
  special.require(special.sep, "[SEP]", objective);
  special.require(special.pad, "[PAD]", objective);
}

MlmExample frame_segments(const SpecialIds& special, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  MlmExample e;
  e.ids.reserve(a.size() + b.size() + 3);
  e.ids.push_back(special.cls);
  e.ids.insert(e.ids.end(), a.begin(), a.end());
  e.ids.push_back(special.sep);
  e.token_types.assign(e.ids.size(), 0);
  if (!b.empty()) {
    e.ids.insert(e.ids.end(), b.begin(), b.end());
    e.ids.push_back(special.sep);
    e.token_types.resize(e.ids.size(), 1);
  }
  e.labels.assign(e.ids.size(), -1);
  return e;
}

void apply_masking(MlmExample& example, const MaskingOptions& options, const SpecialIds& special, int64_t vocab_size,
                   std::mt19937_64& rng, const std::function<bool(int)>& is_word_start) {
  check_masking(options, special, vocab_size, bool(is_word_start));
  const std::vector<int> specials = specials_below(special, vocab_size);
  const int64_t ordinary = vocab_size - int64_t(specials.size());
  auto& ids = example.ids;
  example.labels.assign(ids.size(), -1);
  // Units selected together, as [begin, end) positions: single tokens, or words (a word-start piece and
  // the non-word-start pieces right after it; a special id ends a word).
  std::vector<std::pair<size_t, size_t>> units;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (special.contains(ids[i])) continue;
    const bool extends = options.whole_word && !units.empty() && units.back().second == i &&
                         !is_word_start(int(ids[i]));
    if (extends) {
      units.back().second = i + 1;
    } else {
      units.emplace_back(i, i + 1);
    }
  }
  for (const auto& unit : units) {
    if (uniform01(rng) >= options.select_prob) continue;
    for (size_t i = unit.first; i < unit.second; ++i) {
      example.labels[i] = ids[i];
      const double r = uniform01(rng);
      if (r < options.mask_prob) {
        ids[i] = special.mask;
      } else if (r < options.mask_prob + options.random_prob) {
        ids[i] = kth_ordinary_id(uniform_below(rng, ordinary), specials);
      }
    }
  }
}

MlmBatch collate_mlm(const std::vector<MlmExample>& examples, int64_t pad_id) {
  const int64_t B = int64_t(examples.size());
  int64_t T = 0;
  for (const auto& e : examples) T = std::max(T, int64_t(e.ids.size()));
  MlmBatch batch;
  batch.input_ids = torch::full({B, T}, pad_id, torch::kLong);  // (B, T)
  batch.attention_mask = torch::zeros({B, T}, torch::kLong);     // (B, T)
  batch.token_type_ids = torch::zeros({B, T}, torch::kLong);     // (B, T)
  batch.labels = torch::full({B, T}, -1, torch::kLong);          // (B, T)
  auto* ids = batch.input_ids.data_ptr<int64_t>();
  auto* mask = batch.attention_mask.data_ptr<int64_t>();
  auto* types = batch.token_type_ids.data_ptr<int64_t>();
  auto* labels = batch.labels.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& e = examples[b];
    std::copy(e.ids.begin(), e.ids.end(), ids + b * T);
    std::fill(mask + b * T, mask + b * T + e.ids.size(), 1);
    std::copy(e.token_types.begin(), e.token_types.end(), types + b * T);
    std::copy(e.labels.begin(), e.labels.end(), labels + b * T);
  }
  return batch;
}

MlmBatcher::MlmBatcher(const TokenStream& stream, const SpecialIds& special, int64_t vocab_size, MlmOptions options,
                       uint64_t seed, DataShard shard, std::function<bool(int)> is_word_start)
    : stream_(stream),
      special_(special),
      vocab_size_(vocab_size),
      options_(options),
      seed_(seed),
      shard_(shard),
      is_word_start_(std::move(is_word_start)) {
  require_mlm_ids(special);
  check_masking(options.masking, special, vocab_size, bool(is_word_start_));
  const int64_t frame = options.two_segments ? 3 : 2, shortest = frame + (options.two_segments ? 2 : 1);
  if (options.batch_size <= 0) throw std::invalid_argument("mlm batcher: batch_size must be positive");
  if (options.seq_len < shortest) {
    throw std::invalid_argument("mlm batcher: seq_len " + std::to_string(options.seq_len) + " is below " +
                                std::to_string(shortest) + " ([CLS], [SEP]s and at least one token per segment)");
  }
  if (options.min_seq_len != 0 && (options.min_seq_len < shortest || options.min_seq_len > options.seq_len)) {
    throw std::invalid_argument("mlm batcher: min_seq_len must be 0 or in [" + std::to_string(shortest) +
                                ", seq_len]");
  }
  if (stream.size() < options.seq_len - frame) {
    throw std::runtime_error("the data split has " + std::to_string(stream.size()) +
                             " tokens, fewer than one window of " + std::to_string(options.seq_len - frame) +
                             " (use a smaller --seq-len or more data)");
  }
}

MlmBatch MlmBatcher::batch(int64_t step, int64_t micro_step) const {
  const int64_t frame = options_.two_segments ? 3 : 2;
  std::vector<MlmExample> examples;
  std::vector<int64_t> window;
  for (int64_t b = 0; b < options_.batch_size; ++b) {
    const uint64_t seed = row_seed(seed_, step, global_row(shard_, micro_step, options_.batch_size, b));
    std::mt19937_64 layout_rng(seed), mask_rng(mix_seed(seed, 1));
    int64_t length = options_.seq_len;
    if (options_.min_seq_len > 0) {
      length = options_.min_seq_len + uniform_below(layout_rng, options_.seq_len - options_.min_seq_len + 1);
    }
    const int64_t content = length - frame;
    window.resize(content);
    stream_.read(uniform_below(layout_rng, stream_.size() - content + 1), content, window.data());
    const int64_t cut = options_.two_segments ? 1 + uniform_below(layout_rng, content - 1) : content;
    examples.push_back(
        frame_segments(special_, {window.begin(), window.begin() + cut}, {window.begin() + cut, window.end()}));
    apply_masking(examples.back(), options_.masking, special_, vocab_size_, mask_rng, is_word_start_);
  }
  return collate_mlm(examples, special_.pad);
}

}  // namespace lmzoo
