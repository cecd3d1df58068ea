// Shared test data: generated English-like text and a tiny tokenizer + prepared data dir per process.
// Leaves out: anything model-specific (tests build their own tiny models on top of this).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"
#include "tests/cli_helpers.h"

namespace lmzoo::test {

// Deterministic English-like prose of about N bytes: sentences of common words, paragraphs split by
// blank lines. Pure ASCII.
inline std::string english_like_text(size_t n, uint32_t seed = 1) {
  static const char* words[] = {
      "the", "a", "cat", "dog", "bird", "sat", "ran", "flew", "on", "under", "over", "mat", "tree", "house",
      "quickly", "slowly", "and", "but", "then", "it", "was", "is", "very", "small", "large", "green", "red",
      "river", "morning", "evening", "walked", "saw", "found", "old", "new", "friend", "garden", "into",
      "with", "of", "to", "in", "happy", "quiet", "loud", "water", "stone", "light", "night", "day"};
  const size_t n_words = sizeof(words) / sizeof(words[0]);
  uint64_t state = seed * 2654435761ull + 1;
  auto next = [&](size_t m) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state >> 33) % m);
  };
  std::string text;
  while (text.size() < n) {
    const size_t sentences = 2 + next(4);
    for (size_t s = 0; s < sentences; ++s) {
      const size_t length = 4 + next(8);
      for (size_t w = 0; w < length; ++w) {
        std::string word = words[next(n_words)];
        if (w == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
        text += word;
        text += w + 1 == length ? (next(5) == 0 ? "! " : ". ") : (next(9) == 0 ? ", " : " ");
      }
    }
    text.back() = '\n';
    text += "\n";
  }
  return text;
}

struct Fixture {
  std::string dir;            // temporary directory holding everything below
  std::string text_file;      // corpus.txt: all documents joined by blank lines (one document)
  std::string jsonl_file;     // corpus.jsonl: the same text as 40 documents
  std::string tokenizer_dir;  // tokenizer/tokenizer.model
  std::string data_dir;       // data/: train + val (10%) shards, manifest.json, tokenizer.model
  int vocab_size = 0;
};

// A tiny tokenizer (bpe/unigram: vocab <= 512; char: all characters) trained on ~30 KB of generated
// text and a prepared data directory, built once per process and model type through the C++ API.
// (A const char* parameter: g++ 13+ warns of a dangling reference when a temporary string is bound.)
inline const Fixture& tiny_corpus(const char* model_type_name = "bpe") {
  const std::string model_type = model_type_name;
  static TempDir root;  // removed when the test process exits
  static std::map<std::string, Fixture> cache;
  auto found = cache.find(model_type);
  if (found != cache.end()) return found->second;

  Fixture f;
  f.dir = root / model_type;
  std::filesystem::create_directories(f.dir);
  f.text_file = f.dir + "/corpus.txt";
  f.jsonl_file = f.dir + "/corpus.jsonl";
  f.tokenizer_dir = f.dir + "/tokenizer";
  f.data_dir = f.dir + "/data";
  std::string all, jsonl;
  for (uint32_t doc = 0; doc < 40; ++doc) {
    std::string text = english_like_text(750, doc + 1);
    all += (doc ? "\n" : "") + text;
    jsonl += nlohmann::json{{"text", text}}.dump() + "\n";
  }
  write_text(f.text_file, all);
  write_text(f.jsonl_file, jsonl);

  TokenizerTrainOptions options;
  options.inputs = {f.text_file};
  options.model_type = parse_enum<TokenizerType>(model_type);
  options.vocab_size = model_type == "char" ? 100000 : 512;
  options.out_dir = f.tokenizer_dir;
  Tokenizer::train(options);
  f.vocab_size = Tokenizer::load(f.tokenizer_dir).vocab_size();

  PrepareOptions prepare;
  prepare.tokenizer = f.tokenizer_dir;
  prepare.inputs = {f.jsonl_file};
  prepare.out_dir = f.data_dir;
  prepare.val_fraction = 0.1;
  prepare_data(prepare);
  return cache.emplace(model_type, f).first->second;
}

}  // namespace lmzoo::test
