// Beam search over an abstract step function, shared by GPT and T5: batched beams (B * beams rows), cache
// reordering by beam index, finished hypotheses kept as HF / t5x do, GNMT length penalty, early stopping,
// n-best. Leaves out: sampling inside beams, diverse / constrained beams, repetition penalties, min length.
#pragma once
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "models/gpt.h"
#include "models/t5.h"

namespace lmzoo {

struct BeamSearchOptions {
  int64_t num_beams = 4;         // GNMT / t5x default
  int64_t max_new_tokens = 100;  // length limit of a hypothesis (eos included)
  double length_penalty = 0.6;   // alpha of ((5 + len) / 6)^alpha; 0: rank by the plain sum of log-probs
  bool early_stopping = false;   // stop an input as soon as it has num_beams finished hypotheses
  int64_t num_return = 1;        // hypotheses returned per input, best first (1..num_beams)
  int64_t eos_id = -1;           // a hypothesis finishes after generating this id (-1: only the length limit)
  int64_t pad_id = 0;            // token fed to the rows of inputs that are already done
  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // generated tokens; ends with eos_id when the hypothesis finished there
  double log_prob = 0.0;        // sum of the tokens' log-probabilities
  double score = 0.0;           // log_prob / length_penalty(tokens.size(), alpha)
};

// GNMT / t5x length penalty ((5 + length) / 6)^alpha; length counts the generated tokens, eos included.
double length_penalty(int64_t length, double alpha);

// What beam search decodes with. Rows: start() returns one row per input (B); every step() has N = B * beams
// rows, rows b * beams .. b * beams + beams - 1 belonging to input b.
class BeamDecoder {
 public:
  virtual ~BeamDecoder() = default;
  // Logits (B, V) of the first generated token of each input.
  virtual torch::Tensor start() = 0;
  // Reorders the decoder state so that new row r continues old row parents[r] (the first call expands B rows
  // to N), appends tokens[r] to it and returns the logits (N, V) of the next token. parents, tokens: (N,)
  // int64 on the CPU.
  virtual torch::Tensor step(const torch::Tensor& parents, const torch::Tensor& tokens) = 0;
};

// Beam search for `batch` inputs; per input, up to options.num_return hypotheses, best score first. Finished
// hypotheses (eos generated) compete with the hypotheses alive at the length limit. An input is done when it
// holds num_beams finished hypotheses and (early_stopping) at once, or (otherwise) once no live beam can still
// score better than the worst of them (exact bound: log-probs only fall; alpha > 0 favours the longest length).
std::vector<std::vector<Hypothesis>> beam_search(BeamDecoder& decoder, int64_t batch,
                                                 const BeamSearchOptions& options);

// Cache reordering: row r of each cached tensor becomes old row rows[r] ((N,) int64, any device).
void reorder_cache(KVCache& cache, const torch::Tensor& rows);
// T5: self-attention keys/values; with cross, also the cross-attention keys/values and the encoder output
// (needed once, when B inputs become B * beams rows; afterwards the beams of one input share them).
void reorder_cache(T5Cache& cache, const torch::Tensor& rows, bool cross);

// GPT: continues prompt (non-empty). When a hypothesis outgrows the context, every row re-encodes its last
// max_seq_len - 1 tokens and decoding continues from a fresh cache (as generate_tokens does).
std::vector<Hypothesis> beam_search_gpt(GPT& model, const std::vector<int64_t>& prompt,
                                        const BeamSearchOptions& options);
// T5: encodes the inputs (each non-empty; padded on the right under an attention mask) once, then decodes
// every input's beams from the start id (pad, 0) together.
std::vector<std::vector<Hypothesis>> beam_search_t5(T5& model, const std::vector<std::vector<int64_t>>& inputs,
                                                     const BeamSearchOptions& options);

}  // namespace lmzoo
