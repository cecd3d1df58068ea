// A SmolLM2-style tokenizer.json written by tests: GPT-2's byte-level alphabet, the ChatML markers as special
// tokens, a handful of merges; shared by the Llama-kin import tests and the chat tests.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"

namespace lmzoo::test {

// UTF-8 of a code point below 0x800 (the byte-level alphabet's range).
inline std::string utf8(int code_point) {
  if (code_point < 0x80) return std::string(1, char(code_point));
  return {char(0xC0 | (code_point >> 6)), char(0x80 | (code_point & 0x3F))};
}

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the others for 256, 257, ... in order.
inline std::vector<std::string> byte_level_alphabet() {
  std::vector<std::string> symbols(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    symbols[b] = utf8(printable ? b : next++);
  }
  return symbols;
}

// A SmolLM2-style tokenizer.json (and its tokenizer_config.json) in DIR: special tokens 0-2, the 256 byte symbols
// from id 3, then the merges t+h, th+e, Ġ+c, Ġc+a, Ġca+t; digits split one by one before the byte-level step.
inline void write_smollm2_tokenizer(const std::filesystem::path& dir) {
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  const std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (size_t i = 0; i < specials.size(); ++i) {
    vocab[specials[i]] = i;
    added.push_back({{"id", i}, {"content", specials[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  for (const auto& symbol : byte_level_alphabet()) vocab[symbol] = vocab.size();
  const std::string space = utf8(0x120);  // Ġ: the byte-level symbol of ' '
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"t", "h"}, {"th", "e"}, {space, "c"}, {space + "c", "a"}, {space + "ca", "t"}};
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [a, b] : merges) {
    vocab[a + b] = vocab.size();
    merge_list.push_back(a + " " + b);
  }
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                                     {"use_regex", true}};
  const nlohmann::json tokenizer = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Sequence"},
                         {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}}},
      {"post_processor", byte_level}, {"decoder", byte_level},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                 {"ignore_merges", false}, {"vocab", vocab}, {"merges", merge_list}}}};
  std::filesystem::create_directories(dir);
  write_text((dir / "tokenizer.json").string(), tokenizer.dump());
  write_text((dir / "tokenizer_config.json").string(),
             R"({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"})");
}

}  // namespace lmzoo::test
