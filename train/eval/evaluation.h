// Evaluating a checkpoint, every family in one place: gpt sliding-window perplexity, bert masked-token or
// pseudo-perplexity, classifier accuracy and macro-F1, t5 target perplexity (pairs, or seeded span corruption).
// Invariants: the memory estimate is checked before the model is built; results do not depend on batch_size.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "train/eval/classifier_eval.h"
#include "train/eval/evaluator.h"
#include "train/run/session.h"
#include "train/train_enums.h"

namespace lmzoo {

// What to score (one source) and how. Fields a family does not use are ignored.
struct EvalRequest {
  std::string data_dir;       // prepared token shards, or (t5) prepared pairs; a classifier's labelled .tsv/.jsonl
  std::string split = "val";  // val|train, of data_dir
  std::string text_file;      // gpt, bert: a UTF-8 text file scored instead of data_dir
  std::string pairs_file;     // t5: a .tsv/.jsonl pairs file scored instead of data_dir
  int64_t batch_size = 8;     // windows (or examples) per forward pass
  int64_t stride = 0;         // gpt: window stride in tokens (0: half the context)
  bool pseudo = false;        // bert: pseudo-perplexity (each token masked in turn) instead of masked tokens
  uint64_t seed = 1234;       // bert: masking seed; t5: span-corruption seed
  int64_t span_batches = 20;  // t5 on token shards: span-corruption batches scored
  Precision precision = Precision::kFp32;  // fp32 or bf16
};

struct EvalReport {
  std::string source;  // what was scored: "DIR (split)" or the file
  std::string what;    // the unit: "tokens", "masked tokens", "target tokens", ...
  std::optional<PerplexityResult> perplexity;          // gpt, bert, t5
  std::optional<ClassificationResult> classification;  // bert classifier
  bool has_bits_per_byte = true;  // false for t5: its targets are not one contiguous text
  // {"tokens","nll","ppl","bpb","bytes"} (bpb null for t5), or {"examples","accuracy","macro_f1","loss"}.
  nlohmann::json to_json() const;
};

// Scores SESSION's model on REQUEST's source. std::invalid_argument when the request does not fit the family (no
// or two sources, a split other than val|train, fp16, a pairs directory for a gpt); std::runtime_error when the
// data is unusable (another tokenizer's, nothing to score) or the model would not fit in memory.
EvalReport evaluate(Session& session, const EvalRequest& request);

}  // namespace lmzoo
