// Supervised text pairs for seq2seq fine-tuning: reading TSV (input TAB target) or JSONL ({"input",
// "target"}) files, encoding a pair (truncated, </s> appended to both sides) and the prepared pairs
// directory. Leaves out: packing several pairs into one row, and sharding across ranks.
//
// Prepared pairs directory (lmzoo prepare --pairs): manifest.json (format_version 1, "kind": "pairs",
// tokenizer_hash, vocab_size, dtype, max_input_len, max_target_len, and per split "train" / "val" the
// example count) with four token splits read by TokenStream: train_inputs, train_targets, val_inputs,
// val_targets. Example i is the i-th eos-terminated run of the inputs split and of the targets split
// (eos never occurs inside encoded text). The tokenizer's files are saved alongside, as for token shards.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/batching/batcher_span.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

struct TextPair {
  std::string input, target;
};

// Reads a .jsonl file ({"input": ..., "target": ...} per line) or any other file as TSV (input TAB target
// per line; blank lines skipped). Throws std::runtime_error naming the file and line on a malformed line
// (not exactly two fields, bad JSON, a missing or non-string field) and on a file without pairs.
std::vector<TextPair> read_text_pairs(const std::string& path);

// Encodes a pair: inputs truncated to max_input_len - 1 tokens and targets to max_target_len - 1, then
// the tokenizer's eos appended to both (std::invalid_argument when it has none).
Seq2SeqExample encode_pair(const Tokenizer& tokenizer, const TextPair& pair, int64_t max_input_len,
                           int64_t max_target_len);

struct PreparePairsOptions {
  std::string tokenizer;  // tokenizer directory or .model file
  std::string pairs;      // the .tsv / .jsonl file
  std::string out_dir;
  double val_fraction = 0.1;  // the last fraction of the pairs (at least one when > 0 and there are two)
  int64_t max_input_len = 512;
  int64_t max_target_len = 128;
};

struct PreparePairsResult {
  int64_t train_examples = 0, val_examples = 0, truncated = 0;  // truncated: pairs cut on either side
};

PreparePairsResult prepare_pairs(const PreparePairsOptions& options);

// True when DATA_DIR's manifest says it holds prepared pairs.
bool is_pairs_dir(const std::string& data_dir);

// The examples of one split ("train" or "val") of a prepared pairs directory, each side ending with EOS.
// Throws std::runtime_error when the directory is not a pairs directory or its splits disagree, or holds ids past
// MODEL_VOCAB (0: not checked; see TokenStream::open).
std::vector<Seq2SeqExample> load_pairs(const std::string& data_dir, const std::string& split, int64_t eos,
                                       int64_t model_vocab = 0);

}  // namespace lmzoo
