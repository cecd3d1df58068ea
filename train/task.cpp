// Training tasks: causal windows (gpt), masked-LM batches (bert), labelled-text batches (classifier),
// prefix-LM windows (gpt, t5), span corruption (t5) and prepared pairs (t5 seq2seq), all seeded pure
// functions of the step; the loss dispatch over model kinds.
#include "train/task.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include "data/batching/batcher_causal.h"
#include "data/batching/batcher_mlm.h"
#include "data/batching/batcher_prefix.h"
#include "data/batching/batcher_span.h"
#include "data/chat/chat_data.h"
#include "data/corpus/epoch_order.h"
#include "data/corpus/labelled_text.h"
#include "data/corpus/pairs.h"
#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"
#include "train/chat_task.h"
#include "train/device/device.h"
#include "train/objectives.h"

namespace lmzoo {

TrainBatch TrainBatch::to(const torch::Device& device) const {
  // To a GPU from page-locked memory without waiting: the copy overlaps the work already queued.
  const bool to_cuda = device.is_cuda();
  auto move = [&](const torch::Tensor& t) {
    if (!t.defined() || t.device() == device) return t;
    return to_cuda && t.device().is_cpu() ? t.pin_memory().to(device, /*non_blocking=*/true) : t.to(device);
  };
  return {move(input_ids),         move(labels),     move(attention_mask), move(token_type_ids),
          move(decoder_input_ids), move(prefix_len), move(segment_ids),    move(scored_positions)};
}

namespace {

constexpr uint64_t kValSeedSalt = 0xE7A1;  // validation batches use their own seed stream

// Causal LM: random windows of the train split; a fixed seeded sample of the val split.
class CausalTask : public TrainingTask {
 public:
  CausalTask(const ModelConfig& model, const TrainConfig& config, DataShard shard)
      : train_(TokenStream::open(config.data_dir, "train", model.vocab_size)),
        val_(TokenStream::open(config.data_dir, "val", model.vocab_size)),
        train_batcher_(train_, config.batch_size, model.max_seq_len, config.seed, shard),
        val_batcher_(val_, config.batch_size, model.max_seq_len, mix_seed(config.seed, kValSeedSalt)),
        val_batches_(val_.size() > model.max_seq_len ? config.eval_iters : 0),
        tokens_(config.batch_size * model.max_seq_len) {}
  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    auto b = train_batcher_.batch(step, micro);
    return {b.inputs, b.targets, {}, {}};
  }
  int64_t val_batches() const override { return val_batches_; }
  TrainBatch val_batch(int64_t i) const override {
    auto b = val_batcher_.batch(i, 0);
    return {b.inputs, b.targets, {}, {}};
  }
  int64_t tokens_per_batch() const override { return tokens_; }

 private:
  TokenStream train_, val_;
  CausalBatcher train_batcher_, val_batcher_;
  int64_t val_batches_, tokens_;
};

// Causal LM on random tokens: row j of a batch is T + 1 ids drawn uniformly from the vocabulary by a generator
// seeded with the row's own seed; inputs are its first T, targets its last T.
class RandomTokenTask : public TrainingTask {
 public:
  RandomTokenTask(const ModelConfig& model, const TrainConfig& config, DataShard shard)
      : vocab_(model.vocab_size), T_(model.max_seq_len), batch_size_(config.batch_size),
        val_batches_(config.eval_iters), seed_(config.seed), shard_(shard) {}
  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    std::vector<uint64_t> seeds;
    for (int64_t j = 0; j < batch_size_; ++j) {
      seeds.push_back(row_seed(seed_, step, global_row(shard_, micro, batch_size_, j)));
    }
    return rows(seeds);
  }
  int64_t val_batches() const override { return val_batches_; }
  TrainBatch val_batch(int64_t i) const override {
    std::vector<uint64_t> seeds;
    for (int64_t j = 0; j < batch_size_; ++j) seeds.push_back(row_seed(mix_seed(seed_, kValSeedSalt), i, j));
    return rows(seeds);
  }
  int64_t tokens_per_batch() const override { return batch_size_ * T_; }

 private:
  TrainBatch rows(const std::vector<uint64_t>& seeds) const {
    auto ids = torch::empty({int64_t(seeds.size()), T_ + 1}, torch::kLong);  // (B, T + 1)
    auto out = ids.accessor<int64_t, 2>();
    std::uniform_int_distribution<int64_t> token(0, vocab_ - 1);
    for (size_t j = 0; j < seeds.size(); ++j) {
      std::mt19937_64 rng(seeds[j]);
      for (int64_t t = 0; t <= T_; ++t) out[int64_t(j)][t] = token(rng);
    }
    return {ids.narrow(1, 0, T_).contiguous(), ids.narrow(1, 1, T_).contiguous(), {}, {}};  // (B, T) each
  }
  int64_t vocab_, T_, batch_size_, val_batches_;
  uint64_t seed_;
  DataShard shard_;
};

// Masked LM: framed windows of the train split with BERT's corruption; a fixed seeded val sample.
class MlmTask : public TrainingTask {
 public:
  MlmTask(const ModelConfig& model, const TrainConfig& config, const Tokenizer& tokenizer, DataShard shard)
      : train_(TokenStream::open(config.data_dir, "train", model.vocab_size)),
        val_(TokenStream::open(config.data_dir, "val", model.vocab_size)) {
    MlmOptions options;
    options.batch_size = config.batch_size;
    options.seq_len = model.max_seq_len;
    options.two_segments = config.segment_pairs;
    options.masking = {config.mlm_probability, config.mask_rate, config.random_rate, config.whole_word_mask};
    std::function<bool(int)> is_word_start;
    if (config.whole_word_mask) {
      std::vector<bool> starts(size_t(tokenizer.vocab_size()));
      for (int id = 0; id < tokenizer.vocab_size(); ++id) starts[size_t(id)] = tokenizer.is_word_start(id);
      is_word_start = [starts = std::move(starts)](int id) { return starts.at(size_t(id)); };
    }
    const SpecialIds& special = tokenizer.special();
    train_batcher_ =
        std::make_unique<MlmBatcher>(train_, special, model.vocab_size, options, config.seed, shard, is_word_start);
    const int64_t frame = config.segment_pairs ? 3 : 2;
    if (val_.size() >= model.max_seq_len - frame) {
      val_batcher_ = std::make_unique<MlmBatcher>(val_, special, model.vocab_size, options,
                                                  mix_seed(config.seed, kValSeedSalt), DataShard{}, is_word_start);
      val_batches_ = config.eval_iters;
    }
    tokens_ = config.batch_size * model.max_seq_len;
  }
  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    return from_mlm(train_batcher_->batch(step, micro));
  }
  int64_t val_batches() const override { return val_batches_; }
  TrainBatch val_batch(int64_t i) const override { return from_mlm(val_batcher_->batch(i, 0)); }
  int64_t tokens_per_batch() const override { return tokens_; }

 private:
  static TrainBatch from_mlm(const MlmBatch& b) {
    TrainBatch t{b.input_ids, b.labels, b.attention_mask, b.token_type_ids};
    t.scored_positions = torch::nonzero(b.labels.reshape({-1}) >= 0).squeeze(1);  // (N) of the (B*T) positions
    return t;
  }
  TokenStream train_, val_;
  std::unique_ptr<MlmBatcher> train_batcher_, val_batcher_;
  int64_t val_batches_ = 0, tokens_ = 0;
};

// Sequence classification: the labelled file, tokenized once, visited in a fresh seeded permutation
// each epoch; the validation file in order.
class ClassifyTask : public TrainingTask {
 public:
  ClassifyTask(const ModelConfig& model, const TrainConfig& config, const Tokenizer& tokenizer, DataShard shard)
      : batch_size_(config.batch_size), step_rows_(config.grad_accum * shard.world_size * config.batch_size),
        pad_(tokenizer.special().pad), shard_(shard) {
    train_ = frame_file(tokenizer, model, config.data_dir);
    order_ = EpochOrder(int64_t(train_.size()), config.seed, 0xC1A5);
    if (!config.val_data.empty()) val_ = frame_file(tokenizer, model, config.val_data);
    tokens_ = config.batch_size * model.max_seq_len;
  }
  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    std::vector<const Framed*> rows;
    for (int64_t j = 0; j < batch_size_; ++j) {
      const int64_t i = step * step_rows_ + global_row(shard_, micro, batch_size_, j);  // in the endless stream
      rows.push_back(&train_[size_t(order_.at(i))]);
    }
    return collate(rows, pad_);
  }
  int64_t val_batches() const override { return (int64_t(val_.size()) + batch_size_ - 1) / batch_size_; }
  TrainBatch val_batch(int64_t i) const override {
    std::vector<const Framed*> rows;
    for (int64_t j = i * batch_size_; j < std::min<int64_t>((i + 1) * batch_size_, val_.size()); ++j) {
      rows.push_back(&val_[j]);
    }
    return collate(rows, pad_);
  }
  int64_t tokens_per_batch() const override { return tokens_; }

 private:
  struct Framed {
    MlmExample example;
    int64_t label;
  };
  static std::vector<Framed> frame_file(const Tokenizer& tokenizer, const ModelConfig& model,
                                        const std::string& path) {
    std::vector<Framed> out;
    for (const auto& e : read_labelled_text(path)) {
      out.push_back({frame_labelled(tokenizer, e, model.max_seq_len), label_id(model.labels, e.label)});
    }
    return out;
  }
  static TrainBatch collate(const std::vector<const Framed*>& rows, int64_t pad) {
    std::vector<MlmExample> examples;
    std::vector<int64_t> labels;
    for (const auto* r : rows) {
      examples.push_back(r->example);
      labels.push_back(r->label);
    }
    MlmBatch b = collate_mlm(examples, pad);
    return {b.input_ids, torch::tensor(labels, torch::kLong), b.attention_mask, b.token_type_ids};
  }
  std::vector<Framed> train_, val_;
  int64_t batch_size_, step_rows_, tokens_ = 0;  // step_rows_: rows of all ranks and micro-batches per step
  int64_t pad_;
  DataShard shard_;
  EpochOrder order_{1, 0, 0};
};

TrainBatch from_seq2seq(const Seq2SeqBatch& b) {
  TrainBatch t;
  t.input_ids = b.input_ids;
  t.attention_mask = b.attention_mask;
  t.decoder_input_ids = b.decoder_input_ids;
  t.labels = b.labels;
  return t;
}

// Span corruption (T5): windows of the train split corrupted with noise spans; encoder inputs fill the
// model's max_seq_len exactly. A fixed seeded sample of the val split.
class SpanTask : public TrainingTask {
 public:
  SpanTask(const ModelConfig& model, const TrainConfig& config, const SpecialIds& special, DataShard shard)
      : train_(TokenStream::open(config.data_dir, "train", model.vocab_size)),
        val_(TokenStream::open(config.data_dir, "val", model.vocab_size)) {
    SpanOptions options;
    options.batch_size = config.batch_size;
    options.input_length = model.max_seq_len;
    options.noise_density = config.noise_density;
    options.mean_noise_span_length = config.mean_span_length;
    train_batcher_ = std::make_unique<SpanBatcher>(train_, special, options, config.seed, shard);
    const SpanLengths& lengths = train_batcher_->lengths();
    if (val_.size() >= lengths.raw_length) {
      val_batcher_ = std::make_unique<SpanBatcher>(val_, special, options, mix_seed(config.seed, kValSeedSalt));
      val_batches_ = config.eval_iters;
    }
    tokens_ = config.batch_size * (lengths.input_length + lengths.target_length);
  }
  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    return from_seq2seq(train_batcher_->batch(step, micro));
  }
  int64_t val_batches() const override { return val_batches_; }
  TrainBatch val_batch(int64_t i) const override { return from_seq2seq(val_batcher_->batch(i, 0)); }
  int64_t tokens_per_batch() const override { return tokens_; }

 private:
  TokenStream train_, val_;
  std::unique_ptr<SpanBatcher> train_batcher_, val_batcher_;
  int64_t val_batches_ = 0, tokens_ = 0;
};

// Prefix-LM: windows cut at a random point. gpt: one window of max_seq_len + 1 tokens, bidirectional
// attention inside the prefix, loss only on the continuation. t5: the prefix (+ </s>) to the encoder,
// the continuation (+ </s>) to the decoder, windows of max_seq_len - 1 tokens.
class PrefixTask : public TrainingTask {
 public:
  PrefixTask(const ModelConfig& model, const TrainConfig& config, const SpecialIds& special, DataShard shard)
      : decoder_only_(model.arch == Arch::kGpt),
        train_(TokenStream::open(config.data_dir, "train", model.vocab_size)),
        val_(TokenStream::open(config.data_dir, "val", model.vocab_size)) {
    PrefixOptions options;
    options.batch_size = config.batch_size;
    options.seq_len = model.max_seq_len;
    if (!decoder_only_) {
      special.require(special.eos, "</s>", "prefix");
      special.require(special.pad, "<pad>", "prefix");
    }
    train_batcher_ = std::make_unique<PrefixBatcher>(train_, special, options, config.seed, shard);
    if (val_.size() >= model.max_seq_len + 1) {
      val_batcher_ = std::make_unique<PrefixBatcher>(val_, special, options, mix_seed(config.seed, kValSeedSalt));
      val_batches_ = config.eval_iters;
    }
    tokens_ = config.batch_size * model.max_seq_len;
  }
  TrainBatch train_batch(int64_t step, int64_t micro) const override { return make(*train_batcher_, step, micro); }
  int64_t val_batches() const override { return val_batches_; }
  TrainBatch val_batch(int64_t i) const override { return make(*val_batcher_, i, 0); }
  int64_t tokens_per_batch() const override { return tokens_; }

 private:
  TrainBatch make(const PrefixBatcher& batcher, int64_t step, int64_t micro) const {
    if (!decoder_only_) return from_seq2seq(batcher.seq2seq_batch(step, micro));
    auto b = batcher.decoder_only_batch(step, micro);
    TrainBatch t;
    t.input_ids = b.inputs;
    t.labels = b.targets;
    t.prefix_len = b.prefix_len;
    return t;
  }
  bool decoder_only_;
  TokenStream train_, val_;
  std::unique_ptr<PrefixBatcher> train_batcher_, val_batcher_;
  int64_t val_batches_ = 0, tokens_ = 0;
};

// Supervised pairs (t5 seq2seq): the prepared train pairs visited in a fresh seeded permutation each
// epoch, cut to the model's max_seq_len on both sides (</s> kept last); the val pairs in order.
class Seq2SeqTask : public TrainingTask {
 public:
  Seq2SeqTask(const ModelConfig& model, const TrainConfig& config, const SpecialIds& special, DataShard shard)
      : batch_size_(config.batch_size), step_rows_(config.grad_accum * shard.world_size * config.batch_size),
        eos_(special.require(special.eos, "</s>", "seq2seq")), pad_(special.require(special.pad, "<pad>", "seq2seq")),
        shard_(shard) {
    train_ = fit(load_pairs(config.data_dir, "train", eos_, model.vocab_size), model.max_seq_len, eos_);
    val_ = fit(load_pairs(config.data_dir, "val", eos_, model.vocab_size), model.max_seq_len, eos_);
    if (train_.empty()) throw std::runtime_error(config.data_dir + " has no training pairs");
    order_ = EpochOrder(int64_t(train_.size()), config.seed, 0x5E02);
    tokens_ = 0;
    for (const auto& e : train_) tokens_ += int64_t(e.inputs.size() + e.targets.size());
    tokens_ = batch_size_ * tokens_ / int64_t(train_.size());  // the mean pair, times the batch
  }
  TrainBatch train_batch(int64_t step, int64_t micro) const override {
    std::vector<Seq2SeqExample> rows;
    for (int64_t j = 0; j < batch_size_; ++j) {
      const int64_t i = step * step_rows_ + global_row(shard_, micro, batch_size_, j);  // in the endless stream
      rows.push_back(train_[size_t(order_.at(i))]);
    }
    return from_seq2seq(collate_seq2seq(rows, pad_));
  }
  int64_t val_batches() const override { return (int64_t(val_.size()) + batch_size_ - 1) / batch_size_; }
  TrainBatch val_batch(int64_t i) const override {
    const auto begin = val_.begin() + i * batch_size_;
    const auto end = val_.begin() + std::min<int64_t>((i + 1) * batch_size_, int64_t(val_.size()));
    return from_seq2seq(collate_seq2seq(std::vector<Seq2SeqExample>(begin, end), pad_));
  }
  int64_t tokens_per_batch() const override { return tokens_; }

 private:
  static std::vector<Seq2SeqExample> fit(std::vector<Seq2SeqExample> examples, int64_t max_len, int64_t eos) {
    for (auto& e : examples) {
      for (auto* side : {&e.inputs, &e.targets}) {
        if (int64_t(side->size()) > max_len) {
          side->resize(size_t(max_len));
          side->back() = eos;
        }
      }
    }
    return examples;
  }
  std::vector<Seq2SeqExample> train_, val_;
  int64_t batch_size_, step_rows_, tokens_ = 0;  // step_rows_: rows of all ranks and micro-batches per step
  int64_t eos_, pad_;
  DataShard shard_;
  EpochOrder order_{1, 0, 0};
};

}  // namespace

std::unique_ptr<TrainingTask> make_task(const ModelConfig& model, const TrainConfig& config,
                                        const Tokenizer& tokenizer, DataShard shard) {
  const Objective objective = config.objective;
  auto require_arch = [&](bool ok, const std::string& what) {
    if (!ok) {
      throw std::invalid_argument("objective '" + enum_name(objective) + "' trains " + what + ", not a '" +
                                  enum_name(model.arch) + "'" + (model.labels.empty() ? "" : " classifier") + " model");
    }
  };
  const bool pairs = objective != Objective::kClassify && is_pairs_dir(config.data_dir);
  const bool chat = objective != Objective::kClassify && is_chat_dir(config.data_dir);
  if (chat != (objective == Objective::kChat)) {
    throw std::invalid_argument(chat ? config.data_dir + " holds prepared conversations, which train --objective chat "
                                       "(gpt); '" + enum_name(objective) + "' reads token shards (lmzoo prepare --input)"
                                     : config.data_dir + " holds no prepared conversations; --objective chat trains on "
                                       "lmzoo prepare --chat FILE.jsonl output");
  }
  if (pairs && objective != Objective::kSeq2seq) {
    throw std::invalid_argument(config.data_dir + " holds prepared pairs, which train --objective seq2seq (t5); '" +
                                enum_name(objective) + "' reads token shards (lmzoo prepare --input)");
  }
  switch (objective) {
    case Objective::kCausal:
      require_arch(model.arch == Arch::kGpt, "gpt");
      return std::make_unique<CausalTask>(model, config, shard);
    case Objective::kMlm:
      require_arch(model.arch == Arch::kBert && model.labels.empty(), "bert");
      return std::make_unique<MlmTask>(model, config, tokenizer, shard);
    case Objective::kClassify:
      require_arch(model.arch == Arch::kBert && !model.labels.empty(), "a bert classifier (with labels)");
      return std::make_unique<ClassifyTask>(model, config, tokenizer, shard);
    case Objective::kSpan:
      require_arch(model.arch == Arch::kT5, "t5");
      return std::make_unique<SpanTask>(model, config, tokenizer.special(), shard);
    case Objective::kPrefix:
      require_arch(model.arch == Arch::kGpt || model.arch == Arch::kT5, "gpt or t5");
      return std::make_unique<PrefixTask>(model, config, tokenizer.special(), shard);
    case Objective::kChat:
      require_arch(model.arch == Arch::kGpt, "gpt");
      return make_chat_task(model, config, tokenizer, shard);
    case Objective::kSeq2seq:
      require_arch(model.arch == Arch::kT5, "t5");
      if (!pairs) {
        throw std::invalid_argument(config.data_dir + " holds no prepared pairs; --objective seq2seq trains on "
                                    "lmzoo prepare --pairs FILE output");
      }
      return std::make_unique<Seq2SeqTask>(model, config, tokenizer.special(), shard);
  }
  throw std::logic_error("objective outside its table");
}

std::unique_ptr<TrainingTask> make_random_token_task(const ModelConfig& model, const TrainConfig& config,
                                                     DataShard shard) {
  if (model.arch != Arch::kGpt || config.objective != Objective::kCausal) {
    throw std::invalid_argument("random-token batches train a gpt on the causal objective, not a '" +
                                enum_name(model.arch) + "' model on '" + enum_name(config.objective) + "'");
  }
  return std::make_unique<RandomTokenTask>(model, config, shard);
}

int64_t scored_targets(const TrainBatch& batch) {
  if (batch.scored_positions.defined()) return batch.scored_positions.size(0);  // found with the batch already
  return (batch.labels >= 0).sum().item<int64_t>();
}

torch::Tensor task_loss(AnyModel& model, const TrainBatch& batch, LossHead head) {
  return model.visit(Overloaded{
      [&](GPT gpt) {
        if (head == LossHead::kFused) {
          return fused_next_token_loss(gpt->hidden_states(batch.input_ids, nullptr, batch.prefix_len, batch.segment_ids),
                                       gpt->lm_head_weight(), torch::Tensor(), gpt->config().vocab_size, batch.labels);
        }
        return next_token_loss(gpt->forward(batch.input_ids, nullptr, batch.prefix_len, batch.segment_ids),
                               batch.labels);
      },
      [&](T5 t5) {
        if (head == LossHead::kFused) {
          const auto hidden = t5->decoder_hidden_states(batch.decoder_input_ids,
                                                        t5->encode(batch.input_ids, batch.attention_mask),
                                                        batch.attention_mask);  // (B, T, C)
          return fused_next_token_loss(t5->lm_head_input(hidden), t5->lm_head_weight(), torch::Tensor(),
                                       t5->config().vocab_size, batch.labels);
        }
        return next_token_loss(t5->forward(batch.input_ids, batch.attention_mask, batch.decoder_input_ids),
                               batch.labels);
      },
      [&](Bert bert) {
        return masked_lm_loss(bert, {batch.input_ids, batch.attention_mask, batch.token_type_ids, batch.labels,
                                     batch.scored_positions},
                              head);
      },
      [&](BertClassifier classifier) {
        return classification_loss(classifier->forward(batch.input_ids, batch.attention_mask, batch.token_type_ids),
                                   batch.labels);
      }});
}

ValidationSum validation_loss_sum(AnyModel& model, const TrainingTask& task, const torch::Device& device,
                                  Precision precision, DataShard shard) {
  torch::NoGradGuard no_grad;
  auto module = model.module();
  const bool was_training = module->is_training();
  module->eval();
  ValidationSum sum;
  for (int64_t i = shard.rank; i < task.val_batches(); i += shard.world_size) {
    const TrainBatch batch = task.val_batch(i).to(device);
    AutocastScope autocast(precision, device);
    const int64_t n = task.validation_weighs_targets() ? scored_targets(batch) : batch.input_ids.size(0);
    sum.weighted_loss += task_loss(model, batch).item<double>() * double(n);
    sum.rows += n;
  }
  module->train(was_training);
  return sum;
}

double validation_loss(AnyModel& model, const TrainingTask& task, const torch::Device& device,
                       Precision precision) {
  const ValidationSum sum = validation_loss_sum(model, task, device, precision, DataShard{});
  return sum.rows ? sum.weighted_loss / double(sum.rows) : std::nan("");
}

}  // namespace lmzoo
