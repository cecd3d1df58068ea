// Tokenizer files from GGUF keys (gguf_import_tokenizer.h). Leaves out: rwkv, ugm (t5) and wpm (bert) tokenizers.
#include "data/gguf/gguf_import_tokenizer.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace lmzoo {

namespace {

constexpr int64_t kControl = 3, kUserDefined = 4, kUnused = 5;

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void tag(std::string& out, int field, int wire) { varint(out, static_cast<uint64_t>(field) << 3 | wire); }
void bytes_field(std::string& out, int field, const std::string& b) {
  tag(out, field, 2);
  varint(out, b.size());
  out += b;
}
void varint_field(std::string& out, int field, uint64_t v) {
  tag(out, field, 0);
  varint(out, v);
}
void float_field(std::string& out, int field, float f) {
  tag(out, field, 5);
  char b[4];
  std::memcpy(b, &f, 4);  // little-endian hosts only (as the rest of the GGUF code)
  out.append(b, 4);
}

const std::vector<std::string>& strings(const GgufFile& f, const std::string& key) {
  const GgufValue& v = f.get(key);
  if (v.type != GgufValueType::kArray || v.element != GgufValueType::kString) {
    throw GgufFormatError(f.name() + ": " + key + " is not an array of strings");
  }
  return v.strings;
}

std::vector<double> numbers(const GgufFile& f, const std::string& key, size_t n, double fallback) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return std::vector<double>(n, fallback);
  if (v->type != GgufValueType::kArray || v->element == GgufValueType::kString || v->numbers.size() != n) {
    throw GgufFormatError(f.name() + ": " + key + " does not hold one number per token");
  }
  return v->numbers;
}

int64_t id_or(const GgufFile& f, const char* key, int64_t fallback) {
  const GgufValue* v = f.find(key);
  return v == nullptr ? fallback : v->as_int(key);
}

nlohmann::json pre_tokenizer(const std::string& pre, const std::string& file) {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                                     {"use_regex", true}};
  if (pre.empty() || pre == "gpt-2" || pre == "default") return byte_level;
  if (pre == "smollm") {
    return {{"type", "Sequence"},
            {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}};
  }
  std::string digits;
  if (pre == "llama-bpe") digits = "\\p{N}{1,3}";
  if (pre == "qwen2") digits = "\\p{N}";
  if (digits.empty()) throw GgufFormatError(file + ": tokenizer.ggml.pre " + pre + " is not one lmzoo reads (gpt-2, llama-bpe, qwen2, smollm)");
  nlohmann::json no_regex = byte_level;
  no_regex["use_regex"] = false;
  const std::string regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" + digits +
                            "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
            no_regex}}};
}

// tokenizer.json of a "gpt2" model: byte-level BPE with the named pre-tokenizer; control and user-defined tokens
// as added tokens.
std::string bpe_tokenizer_json(const GgufFile& f, const std::vector<std::string>& tokens, const std::vector<double>& types) {
  const std::string merges_key = "tokenizer.ggml.merges";  // named: g++ 14 warns of a reference through a temporary
  const std::vector<std::string>& merges = strings(f, merges_key);
  const GgufValue* pre = f.find("tokenizer.ggml.pre");
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab[tokens[i]] = i;
    const int64_t type = static_cast<int64_t>(types[i]);
    if (type == kControl || type == kUserDefined) {
      added.push_back({{"id", i}, {"content", tokens[i]}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", type != kControl}, {"special", type == kControl}});
    }
  }
  nlohmann::json j = {{"version", "1.0"},
                      {"truncation", nullptr},
                      {"padding", nullptr},
                      {"added_tokens", added},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", pre_tokenizer(pre ? pre->as_string("tokenizer.ggml.pre") : "", f.name())},
                      {"post_processor", nullptr},
                      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
                      {"model",
                       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                        {"ignore_merges", false}, {"vocab", vocab}, {"merges", merges}}}};
  return j.dump();
}

// tokenizer.model (a SentencePiece ModelProto) of a "llama" model: pieces with scores and types, BPE, identity
// normalisation with the file's dummy prefix, the special ids.
std::string sentencepiece_model(const GgufFile& f, const std::vector<std::string>& tokens,
                                const std::vector<double>& types, int64_t unk, int64_t bos, int64_t eos, int64_t pad) {
  const std::vector<double> scores = numbers(f, "tokenizer.ggml.scores", strings(f, "tokenizer.ggml.tokens").size(), 0);
  const GgufValue* prefix = f.find("tokenizer.ggml.add_space_prefix");
  const bool dummy_prefix = prefix == nullptr || prefix->as_int("tokenizer.ggml.add_space_prefix") != 0;
  std::string proto;
  bool byte_fallback = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string piece;
    bytes_field(piece, 1, tokens[i]);
    float_field(piece, 2, static_cast<float>(scores[i]));
    const int64_t type = static_cast<int64_t>(types[i]);
    if (type < 1 || type > 6) throw GgufFormatError(f.name() + ": token " + std::to_string(i) + " has type " + std::to_string(type));
    if (type == 6) byte_fallback = true;
    varint_field(piece, 3, static_cast<uint64_t>(type));
    bytes_field(proto, 1, piece);
  }
  std::string trainer;
  varint_field(trainer, 3, 2);  // model_type: BPE
  varint_field(trainer, 35, byte_fallback ? 1 : 0);
  varint_field(trainer, 40, static_cast<uint64_t>(unk >= 0 ? unk : 0));
  varint_field(trainer, 41, static_cast<uint64_t>(bos));
  varint_field(trainer, 42, static_cast<uint64_t>(eos));
  varint_field(trainer, 43, static_cast<uint64_t>(pad));
  bytes_field(proto, 2, trainer);
  std::string normalizer;
  bytes_field(normalizer, 1, "identity");
  varint_field(normalizer, 3, dummy_prefix ? 1 : 0);
  varint_field(normalizer, 4, 0);  // remove_extra_whitespaces
  varint_field(normalizer, 5, 1);  // escape_whitespaces
  bytes_field(proto, 3, normalizer);
  return proto;
}

}  // namespace

TokenizerFiles tokenizer_files_from_gguf(const GgufFile& f) {
  const std::string model = f.get("tokenizer.ggml.model").as_string("tokenizer.ggml.model");
  std::vector<std::string> tokens = strings(f, "tokenizer.ggml.tokens");
  const std::vector<double> types = numbers(f, "tokenizer.ggml.token_type", tokens.size(), 1);
  // The converter's "[PAD<i>]" rows past the tokenizer's vocabulary are not tokens.
  while (!tokens.empty() && types[tokens.size() - 1] == kUnused &&
         tokens.back() == "[PAD" + std::to_string(tokens.size() - 1) + "]") {
    tokens.pop_back();
  }
  const int64_t bos = id_or(f, "tokenizer.ggml.bos_token_id", -1), eos = id_or(f, "tokenizer.ggml.eos_token_id", -1);
  const int64_t unk = id_or(f, "tokenizer.ggml.unknown_token_id", -1), pad = id_or(f, "tokenizer.ggml.padding_token_id", -1);
  auto token_at = [&](int64_t id) -> nlohmann::json {
    return id >= 0 && static_cast<size_t>(id) < tokens.size() ? nlohmann::json(tokens[id]) : nlohmann::json();
  };
  TokenizerFiles files;
  nlohmann::json config = {{"add_bos_token", id_or(f, "tokenizer.ggml.add_bos_token", 0) != 0},
                           {"add_eos_token", false}};
  if (!token_at(bos).is_null()) config["bos_token"] = token_at(bos);
  if (!token_at(eos).is_null()) config["eos_token"] = token_at(eos);
  if (!token_at(unk).is_null()) config["unk_token"] = token_at(unk);
  if (!token_at(pad).is_null()) config["pad_token"] = token_at(pad);
  if (const GgufValue* t = f.find("tokenizer.chat_template")) config["chat_template"] = t->as_string("tokenizer.chat_template");

  if (model == "gpt2") {
    files["tokenizer.json"] = bpe_tokenizer_json(f, tokens, types);
  } else if (model == "llama") {
    files["tokenizer.model"] = sentencepiece_model(f, tokens, types, unk, bos, eos, pad);
  } else {
    throw GgufFormatError(f.name() + ": tokenizer.ggml.model " + model + " is not one lmzoo imports (gpt2, llama)");
  }
  files["tokenizer_config.json"] = config.dump(2) + "\n";
  return files;
}

}  // namespace lmzoo
