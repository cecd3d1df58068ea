// Generating from a checkpoint, every family in one place: gpt continues a prompt and t5 answers it (sampling,
// greedy at temperature 0, or beam search), bert fills its [MASK]s, a bert classifier labels it.
// Invariants: generation stops at the tokenizer's end-of-text id unless ignore_eos; the memory estimate (weights, KV
// cache of every beam) is checked before the cache exists; an interrupt (base/interrupt.h) returns what was made.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/beam_search.h"
#include "models/generation.h"
#include "train/run/session.h"

namespace lmzoo {

struct GenerateRequest {
  std::string prompt;       // gpt: text to continue (empty: a new document); t5: the encoder's input; bert: text
                            // with [MASK]s; classifier: text to label
  std::string prompt_pair;  // classifier: the second text of a pair task
  SamplingOptions sampling;  // gpt, t5 (eos_id is the tokenizer's); top_k is also the candidates per [MASK] (0: 5)
  bool ignore_eos = false;   // sampling: go on past end-of-text to max_new_tokens
  std::optional<BeamSearchOptions> beam;  // gpt, t5: beam search instead of sampling (eos and pad ids: the tokenizer's)
};

// A decoded candidate for one [MASK].
struct FilledToken {
  std::string text;
  double probability = 0.0;
};

struct GenerateReport {
  // gpt: prompt + continuation; t5: the answer; bert: the prompt with each [MASK] replaced by its best candidate.
  // Beam search: one per returned hypothesis, best first. Special tokens are left out.
  std::vector<std::string> texts;
  std::vector<Hypothesis> hypotheses;              // beam search: texts' token lists and scores
  int64_t eos_id = -1;                             // the tokenizer's end-of-text id
  std::vector<std::vector<FilledToken>> masks;     // bert: per [MASK], its candidates, most likely first
  std::vector<std::pair<std::string, double>> labels;  // classifier: every label, most likely first
};

// std::invalid_argument for a request the family cannot run (beam search for bert, no [MASK] for bert, a t5 prompt
// longer than its positions); std::runtime_error when it would not fit in memory.
GenerateReport generate(Session& session, const GenerateRequest& request);

}  // namespace lmzoo
