// Masked-LM batches: windows of a token stream framed [CLS] A [SEP] (B [SEP]), non-special positions
// selected (15%: 80% [MASK], 10% random, 10% kept), optional whole-word masking, variable lengths padded.
// Leaves out: next-sentence prediction and document-aware segment pairs.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "data/corpus/data_shard.h"
#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

struct MaskingOptions {
  double select_prob = 0.15;  // fraction of non-special positions (or words) selected for prediction
  double mask_prob = 0.8;     // of the selected: replaced by [MASK]
  double random_prob = 0.1;   // of the selected: replaced by a random non-special id; the rest kept
  bool whole_word = false;    // select whole words: a word-start piece and the pieces that follow it
};

struct MlmOptions {
  int64_t batch_size = 8;
  int64_t seq_len = 128;      // framed length, [CLS] and [SEP]s included
  int64_t min_seq_len = 0;    // > 0: each row's length drawn from [min_seq_len, seq_len], rows padded
  bool two_segments = false;  // [CLS] A [SEP] B [SEP], token types 0 then 1, cut at a random point
  MaskingOptions masking;
};

struct MlmBatch {
  torch::Tensor input_ids;       // (B, T) int64, after masking; the pad id at pads
  torch::Tensor attention_mask;  // (B, T) int64, 1 real / 0 pad
  torch::Tensor token_type_ids;  // (B, T) int64, 0 at pads
  torch::Tensor labels;          // (B, T) int64, original id at selected positions, -1 elsewhere
};

// One framed sequence before collation.
struct MlmExample {
  std::vector<int64_t> ids, token_types, labels;
};

// Throws std::invalid_argument naming the tokenizer unless SPECIAL has the [CLS], [SEP], [MASK] and [PAD] that
// masked-LM batches need (OBJECTIVE names the objective in the message).
void require_mlm_ids(const SpecialIds& special, const std::string& objective = "mlm");

// [CLS] a [SEP], plus b [SEP] when b is non-empty (special's cls and sep); token types 0 up to the first [SEP],
// 1 after it. Labels all -1.
MlmExample frame_segments(const SpecialIds& special, const std::vector<int64_t>& a, const std::vector<int64_t>& b = {});

// Selects positions of example.ids (each position not in SPECIAL, or each whole word, with probability
// select_prob), corrupts them in place (special.mask) and sets their labels to the original ids. Random
// replacements are drawn uniformly from the ids of [0, vocab_size) not in SPECIAL. is_word_start is required for
// whole-word masking; special ids end words.
void apply_masking(MlmExample& example, const MaskingOptions& options, const SpecialIds& special, int64_t vocab_size,
                   std::mt19937_64& rng, const std::function<bool(int)>& is_word_start = {});

// Right-pads to the longest example (id pad_id, mask 0, type 0, label -1) and stacks: (B, T) each.
MlmBatch collate_mlm(const std::vector<MlmExample>& examples, int64_t pad_id);

class MlmBatcher {
 public:
  // Throws std::invalid_argument on bad options or SPECIAL lacking an id (require_mlm_ids), std::runtime_error
  // when the stream is too short.
  MlmBatcher(const TokenStream& stream, const SpecialIds& special, int64_t vocab_size, MlmOptions options,
             uint64_t seed, DataShard shard = {}, std::function<bool(int)> is_word_start = {});
  // A pure function of (seed, step, micro_step, shard). Windows, lengths and cuts come from one random
  // stream and masking from another, so changing the masking rates keeps the same windows.
  MlmBatch batch(int64_t step, int64_t micro_step) const;

 private:
  const TokenStream& stream_;
  SpecialIds special_;
  int64_t vocab_size_;
  MlmOptions options_;
  uint64_t seed_;
  DataShard shard_;
  std::function<bool(int)> is_word_start_;
};

}  // namespace lmzoo
