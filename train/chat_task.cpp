// Chat batches: examples fitted to rows (truncated or refused), visited in seeded epochs, padded or packed
// (best-fit decreasing into rows), labels -1 outside the answers.
#include "train/chat_task.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "data/chat/chat_data.h"
#include "data/corpus/epoch_order.h"

namespace lmzoo {

namespace {

struct FittedExample {
  std::vector<int64_t> tokens;
  std::vector<uint8_t> scored;
  int64_t positions() const { return int64_t(tokens.size()) - 1; }  // the next-token predictions it makes
};

// Examples of SPLIT cut to ROW positions (ROW + 1 tokens) under TRUNCATION; those without a scored target left
// are dropped. Counts into SUMMARY.
std::vector<FittedExample> fit_examples(const ChatExamples& all, int64_t row, Truncation truncation,
                                        const std::string& what, ChatFitSummary& summary) {
  std::vector<FittedExample> out;
  int64_t too_long = 0, longest = 0;
  for (int64_t i = 0; i < all.size(); ++i) {
    const int64_t begin = all.offsets[size_t(i)], end = all.offsets[size_t(i) + 1];
    int64_t from = begin, to = end;
    longest = std::max(longest, end - begin);
    if (end - begin > row + 1) {
      ++too_long;
      if (truncation == Truncation::kRight) to = begin + row + 1;
      if (truncation == Truncation::kLeft) from = end - row - 1;
    }
    FittedExample e{{all.tokens.begin() + from, all.tokens.begin() + to},
                    {all.scored.begin() + from, all.scored.begin() + to}};
    if (e.tokens.size() < 2 || std::count(e.scored.begin() + 1, e.scored.end(), uint8_t(1)) == 0) {
      ++summary.dropped;
      continue;
    }
    out.push_back(std::move(e));
  }
  if (too_long > 0 && truncation == Truncation::kRefuse) {
    throw std::runtime_error(std::to_string(too_long) + " of " + std::to_string(all.size()) + " " + what +
                             " examples are longer than a row of " + std::to_string(row + 1) + " tokens (the longest: " +
                             std::to_string(longest) + "); give --truncate left|right or a larger --max-length");
  }
  summary.examples += all.size();
  summary.truncated += too_long;
  return out;
}

// Best-fit decreasing: each example (longest first) into the row with the least room that still takes it.
std::vector<std::vector<int64_t>> pack_rows(const std::vector<FittedExample>& examples, int64_t row) {
  std::vector<int64_t> order(examples.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return examples[size_t(a)].positions() > examples[size_t(b)].positions();
  });
  std::vector<std::vector<int64_t>> rows;
  std::multimap<int64_t, size_t> room;  // room left -> row
  for (int64_t i : order) {
    const int64_t need = examples[size_t(i)].positions();
    auto fit = room.lower_bound(need);
    size_t r;
    int64_t left;
    if (fit == room.end()) {
      r = rows.size();
      rows.emplace_back();
      left = row;
    } else {
      r = fit->second;
      left = fit->first;
      room.erase(fit);
    }
    rows[r].push_back(i);
    if (left - need > 0) room.emplace(left - need, r);
  }
  return rows;
}

class ChatTask : public TrainingTask {
 public:
  ChatTask(const ModelConfig& model, const TrainConfig& config, const Tokenizer& tokenizer, DataShard shard,
           ChatFitSummary& fit)
      : row_(config.max_length > 0 ? config.max_length : model.max_seq_len), batch_size_(config.batch_size),
        step_rows_(config.grad_accum * shard.world_size * config.batch_size), packing_(config.packing), shard_(shard) {
    if (row_ > model.max_seq_len) {
      throw std::invalid_argument("--max-length " + std::to_string(row_) + " exceeds the model's context of " +
                                  std::to_string(model.max_seq_len) + " tokens");
    }
    const SpecialIds& special = tokenizer.special();
    pad_ = special.pad >= 0 ? special.pad : (special.eos >= 0 ? special.eos : 0);
    train_ = fit_examples(load_chat_examples(config.data_dir, "train", model.vocab_size), row_, config.truncate,
                          "training", fit);
    ChatFitSummary val_fit;
    val_ = fit_examples(load_chat_examples(config.data_dir, "val", model.vocab_size), row_, config.truncate,
                        "validation", val_fit);
    if (train_.empty()) throw std::runtime_error(config.data_dir + " has no training example with an answer to score");
    if (packing_) {
      rows_ = pack_rows(train_, row_);
    } else {
      for (size_t i = 0; i < train_.size(); ++i) rows_.push_back({int64_t(i)});
    }
    fit.rows = int64_t(rows_.size());
    order_ = EpochOrder(int64_t(rows_.size()), config.seed, 0xC4A7);
    int64_t positions = 0;
    for (const auto& e : train_) positions += e.positions();
    tokens_ = packing_ ? batch_size_ * row_ : batch_size_ * positions / int64_t(train_.size());
    summary_ = "chat data: " + std::to_string(fit.examples) + " training examples (" + std::to_string(fit.truncated) +
               " longer than a row of " + std::to_string(row_ + 1) + " tokens" +
               (fit.truncated ? ", truncated " + enum_name(config.truncate) : "") + ", " +
               std::to_string(fit.dropped) + " without an answer token dropped), training " +
               (packing_ ? "packed into " + std::to_string(rows_.size()) + " rows" : "one example per row");
  }

  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    std::vector<const std::vector<int64_t>*> rows;
    for (int64_t j = 0; j < batch_size_; ++j) {
      const int64_t i = step * step_rows_ + global_row(shard_, micro, batch_size_, j);  // in the endless stream
      rows.push_back(&rows_[size_t(order_.at(i))]);
    }
    return collate(train_, rows, packing_);
  }
  int64_t val_batches() const override { return (int64_t(val_.size()) + batch_size_ - 1) / batch_size_; }
  TrainBatch val_batch(int64_t i) const override {
    std::vector<std::vector<int64_t>> singles;
    for (int64_t j = i * batch_size_; j < std::min<int64_t>((i + 1) * batch_size_, int64_t(val_.size())); ++j) {
      singles.push_back({j});
    }
    std::vector<const std::vector<int64_t>*> rows;
    for (const auto& s : singles) rows.push_back(&s);
    return collate(val_, rows, /*packed=*/false);
  }
  int64_t tokens_per_batch() const override { return tokens_; }
  bool validation_weighs_targets() const override { return true; }
  std::string summary() const override { return summary_; }

 private:
  // Rows of EXAMPLES' indices: inputs and labels (B, T), T the longest row; packed rows also get segment ids
  // (the example's place in its row; -1 on padding).
  TrainBatch collate(const std::vector<FittedExample>& examples, const std::vector<const std::vector<int64_t>*>& rows,
                     bool packed) const {
    int64_t T = 1;
    for (const auto* row : rows) {
      int64_t used = 0;
      for (int64_t i : *row) used += examples[size_t(i)].positions();
      T = std::max(T, used);
    }
    const int64_t B = int64_t(rows.size());
    auto inputs = torch::full({B, T}, pad_, torch::kLong);     // (B, T)
    auto labels = torch::full({B, T}, int64_t(-1), torch::kLong);  // (B, T)
    auto segments = torch::full({B, T}, int64_t(-1), torch::kLong);  // (B, T)
    auto in = inputs.accessor<int64_t, 2>(), out = labels.accessor<int64_t, 2>(), seg = segments.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b) {
      int64_t at = 0, k = 0;
      for (int64_t i : *rows[size_t(b)]) {
        const FittedExample& e = examples[size_t(i)];
        for (int64_t t = 0; t < e.positions(); ++t, ++at) {
          in[b][at] = e.tokens[size_t(t)];
          if (e.scored[size_t(t) + 1]) out[b][at] = e.tokens[size_t(t) + 1];
          seg[b][at] = k;
        }
        ++k;
      }
    }
    TrainBatch batch;
    batch.input_ids = inputs;
    batch.labels = labels;
    if (packed) batch.segment_ids = segments;
    return batch;
  }

  int64_t row_, batch_size_, step_rows_, pad_ = 0, tokens_ = 0;
  std::string summary_;
  bool packing_;
  DataShard shard_;
  std::vector<FittedExample> train_, val_;
  std::vector<std::vector<int64_t>> rows_;  // the training rows: indices into train_
  EpochOrder order_{1, 0, 0};
};

}  // namespace

std::unique_ptr<TrainingTask> make_chat_task(const ModelConfig& model, const TrainConfig& config,
                                             const Tokenizer& tokenizer, DataShard shard, ChatFitSummary* summary) {
  ChatFitSummary local;
  return std::make_unique<ChatTask>(model, config, tokenizer, shard, summary ? *summary : local);
}

}  // namespace lmzoo
