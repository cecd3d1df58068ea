// Training configuration: objective, data, optimiser, schedule, evaluation and device settings.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "models/model_enums.h"
#include "train/train_enums.h"

namespace lmzoo {

// The largest value of each count and rate: past these a value is a typo rather than a run this trainer can
// finish, and step counts stay far inside int64.
namespace train_limits {
constexpr int64_t kMaxBatch = 1048576;          // batch_size, grad_accum, eval_iters
constexpr int64_t kMaxSteps = 1000000000000;    // steps, warmup, decay_steps, intervals: 10^12
constexpr double kMaxRate = 10.0;               // lr, weight_decay
constexpr double kMaxGradClip = 1e6;
}  // namespace train_limits

struct TrainConfig {
  Objective objective = Objective::kCausal;
  std::string data_dir;              // prepared shards (seq2seq: prepared pairs); classify: a labelled file
  std::string val_data;              // classify: labelled validation file (empty: no validation)
  std::string init_checkpoint;       // classify: the pretrained checkpoint the encoder started from
  std::string out_dir;
  int64_t batch_size = 12;
  int64_t grad_accum = 1;
  int64_t steps = 2000;
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 100;
  Schedule schedule = Schedule::kCosine;
  // The step where the decay reaches min_lr (nanoGPT's lr_decay_iters); 0: --steps of the run's first start.
  // Stored in the run, so extending --steps on resume never moves the learning rate; past it, min_lr.
  int64_t decay_steps = 0;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;  // 0 disables clipping
  int64_t eval_interval = 250;
  int64_t eval_iters = 20;
  int64_t log_interval = 10;
  uint64_t seed = 1337;
  // Steps with non-finite gradients are skipped; this many in a row stop the run (non-zero exit).
  int64_t max_consecutive_skips = 25;
  std::string device = "auto";     // auto | cpu | cuda[:N]
  Precision precision = Precision::kFp32;
  bool tf32 = true;                 // CUDA: fp32 matmuls on TF32 tensor cores
  // Several ranks: each keeps the AdamW state of its share of the parameters (ZeRO-1, optimizer_shards.h).
  bool shard_optimizer = false;
  // Masked LM (BERT): selection rate, and of the selected the [MASK] and random-token rates.
  double mlm_probability = 0.15;
  double mask_rate = 0.8;
  double random_rate = 0.1;
  bool whole_word_mask = false;
  bool segment_pairs = false;  // [CLS] A [SEP] B [SEP] with token types, cut at a random point
  // Span corruption (T5): fraction of tokens dropped into the targets, mean length of a noise span.
  double noise_density = 0.15;
  double mean_span_length = 3.0;

  // Throws std::invalid_argument naming the first bad field (each within its range: train_limits).
  void validate() const;
};

// The objective a family trains with when none is named: causal (gpt), mlm (bert), span (t5; seq2seq on prepared
// pairs).
Objective default_objective(Arch arch, bool pairs_data);

// Fine-tuning a classifier starts from HF Trainer's defaults instead: lr 5e-5 decaying linearly to 0, no warmup,
// weight decay 0.01, beta2 0.999; the other fields are TrainConfig's.
TrainConfig classifier_defaults();

// lmzoo bench's run: nanoGPT's CPU baby run (lr 1e-3 cosine to 1e-4 over STEPS, warmup 100, betas (0.9, 0.99),
// weight decay 0.1, clip 1.0), one evaluation at the end.
TrainConfig bench_defaults(int64_t steps);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrainConfig, objective, data_dir, val_data, init_checkpoint, out_dir,
                                                batch_size, grad_accum, steps, lr, min_lr, warmup, schedule,
                                                decay_steps, weight_decay, beta1, beta2, grad_clip, eval_interval, eval_iters,
                                                log_interval, seed, max_consecutive_skips, device, precision, tf32, shard_optimizer, mlm_probability, mask_rate,
                                                random_rate, whole_word_mask, segment_pairs,
                                                noise_density, mean_span_length)

// Parses a stored training config, refusing unknown keys and values of the wrong JSON type (validate() checks
// the ranges).
TrainConfig train_config_from_json(const nlohmann::json& j);

}  // namespace lmzoo
