// Tokenizer keys of a GGUF file (gguf_tokenizer.h). Leaves out: llama.cpp's other tokenizer models (rwkv, ugm, wpm).
#include "data/gguf/gguf_tokenizer.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "data/tokenizers/spm_settings.h"

namespace lmzoo {

namespace {

// llama.cpp's token types (llama_token_type).
constexpr double kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

const std::string* file_of(const Tokenizer& t, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const auto it = t.files().find(name);
    if (it != t.files().end()) return &it->second;
  }
  return nullptr;
}

nlohmann::json parse_json(const std::string& bytes, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::invalid_argument("the tokenizer's " + what + " is not valid JSON");
  return j;
}

// tokens[id] from a {piece: id} map; gaps are refused.
std::vector<std::string> tokens_by_id(const nlohmann::json& vocab, std::vector<std::string> tokens) {
  for (const auto& [piece, id] : vocab.items()) {
    const int64_t i = id.get<int64_t>();
    if (i < 0) throw std::invalid_argument("the tokenizer's vocabulary holds a negative id");
    if (static_cast<size_t>(i) >= tokens.size()) tokens.resize(i + 1);
    tokens[i] = piece;
  }
  return tokens;
}

std::vector<std::string> merges_from_text(const std::string& text) {
  std::vector<std::string> merges;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    merges.push_back(line);
  }
  return merges;
}

// llama.cpp's name for a tokenizer.json byte-level pre-tokenizer (its pre-tokenizer regexes are hard-coded per name).
std::string pre_tokenizer_name(const nlohmann::json& pre) {
  const std::string dump = pre.dump();
  auto has = [&dump](const char* s) { return dump.find(s) != std::string::npos; };
  if (pre.is_null()) throw std::invalid_argument("a tokenizer.json without a pre-tokenizer has no llama.cpp twin");
  if (has("\"Digits\"") && has("individual_digits\":true") && has("\"ByteLevel\"") && !has("\"Split\"")) return "smollm";
  if (has("\\\\p{N}{1,3}")) return "llama-bpe";
  if (has("[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}|")) return "qwen2";
  if (pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true)) return "gpt-2";
  throw std::invalid_argument("tokenizer.json pre-tokenizer " + pre.value("type", std::string("?")) +
                              " is not one llama.cpp names (gpt-2, llama-bpe, qwen2, smollm byte-level BPE)");
}

void pad_tokens(std::vector<std::string>& tokens, std::vector<double>& types, std::vector<double>* scores,
                int64_t rows) {
  if (static_cast<int64_t>(tokens.size()) > rows) {
    throw std::invalid_argument("the tokenizer has " + std::to_string(tokens.size()) + " ids but the embedding " +
                                std::to_string(rows) + " rows");
  }
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < rows; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types.push_back(kUnused);
    if (scores != nullptr) scores->push_back(-1000.0);
  }
}

// The llama (SentencePiece BPE) tokenizer of the SentencePiece model PROTO: its pieces, scores and types.
void add_spm_pieces(GgufWriter& writer, const std::string& proto, GgufTokenizerSummary& summary,
                    std::vector<std::string>& tokens, std::vector<double>& types, std::vector<double>& scores,
                    bool& add_bos) {
  const SpmSettings s = read_spm_settings(proto);
  using MT = SpmSettings::ModelType;
  if (s.model_type == MT::kUnigram || s.model_type == MT::kWord) {
    throw std::invalid_argument(std::string("a ") + (s.model_type == MT::kUnigram ? "unigram" : "word") +
                                " SentencePiece model has no GGUF tokenizer llama.cpp cuts the same way "
                                "(its llama tokenizer merges BPE pieces; train with --model-type bpe)");
  }
  if (s.has_charsmap || s.remove_extra_whitespaces || s.treat_whitespace_as_suffix || !s.escape_whitespaces) {
    throw std::invalid_argument("a SentencePiece model with normalisation " +
                                (s.normalizer_name.empty() ? std::string("rules") : s.normalizer_name) +
                                " (or squeezed/suffixed whitespace) has no GGUF tokenizer: llama.cpp does not normalise");
  }
  for (const SpmPiece& p : read_spm_pieces(proto)) {
    tokens.push_back(p.piece);
    scores.push_back(p.score);
    types.push_back(static_cast<double>(static_cast<int>(p.type)));
  }
  summary.model = "llama";
  writer.add("tokenizer.ggml.add_space_prefix", GgufValue::boolean(s.add_dummy_prefix));
  add_bos = s.add_dummy_prefix;  // Hugging Face's Llama SentencePiece models (lmzoo's own have no dummy prefix)
}

}  // namespace

GgufTokenizerSummary add_gguf_tokenizer(GgufWriter& writer, const Tokenizer& tokenizer, int64_t rows,
                                        const std::string& checkpoint_template) {
  GgufTokenizerSummary summary;
  std::vector<std::string> tokens, merges;
  std::vector<double> types, scores;
  bool add_bos = false;
  switch (tokenizer.kind()) {
    case TokenizerKind::kGpt2Bpe: {
      const std::string* vocab = file_of(tokenizer, {"vocab.json", "encoder.json"});
      const std::string* merge_text = file_of(tokenizer, {"merges.txt", "vocab.bpe"});
      if (vocab == nullptr || merge_text == nullptr) throw std::invalid_argument("the GPT-2 tokenizer lacks vocab.json or merges.txt");
      tokens = tokens_by_id(parse_json(*vocab, "vocab.json"), {});
      merges = merges_from_text(*merge_text);
      summary.model = "gpt2";
      summary.pre = "gpt-2";  // llama.cpp's name for GPT-2's pre-tokenizer regex
      break;
    }
    case TokenizerKind::kHfJson: {
      const std::string* text = file_of(tokenizer, {"tokenizer.json"});
      if (text == nullptr) throw std::invalid_argument("the tokenizer lacks tokenizer.json");
      const nlohmann::json j = parse_json(*text, "tokenizer.json");
      const nlohmann::json& model = j.at("model");
      const std::string* spm_model = file_of(tokenizer, {"tokenizer.model", "spiece.model"});
      if ((model.value("type", "") != "BPE" || model.value("byte_fallback", false)) && spm_model != nullptr) {
        add_spm_pieces(writer, *spm_model, summary, tokens, types, scores, add_bos);  // the model it was made from
        break;
      }
      if (model.value("type", "") != "BPE" || model.value("byte_fallback", false)) {
        throw std::invalid_argument("a tokenizer.json " + model.value("type", std::string("?")) +
                                    " model that is not byte-level BPE has no GGUF form lmzoo writes");
      }
      summary.pre = pre_tokenizer_name(j.value("pre_tokenizer", nlohmann::json()));
      tokens = tokens_by_id(model.at("vocab"), {});
      for (const auto& m : model.at("merges")) {
        merges.push_back(m.is_array() ? m[0].get<std::string>() + " " + m[1].get<std::string>() : m.get<std::string>());
      }
      std::vector<bool> special(tokens.size(), false), added(tokens.size(), false);
      if (j.contains("added_tokens")) {
        for (const auto& a : j["added_tokens"]) {
          const int64_t id = a.at("id").get<int64_t>();
          if (id < 0) continue;
          if (static_cast<size_t>(id) >= tokens.size()) {
            tokens.resize(id + 1);
            special.resize(id + 1);
            added.resize(id + 1);
          }
          tokens[id] = a.at("content").get<std::string>();
          added[id] = true;
          special[id] = a.value("special", false);
        }
      }
      for (size_t i = 0; i < tokens.size(); ++i) types.push_back(special[i] ? kControl : added[i] ? kUserDefined : kNormal);
      summary.model = "gpt2";
      break;
    }
    case TokenizerKind::kSentencePiece:
      add_spm_pieces(writer, tokenizer.serialized(), summary, tokens, types, scores, add_bos);
      break;
    case TokenizerKind::kWordPiece:
      throw std::invalid_argument("a WordPiece tokenizer (BERT's) has no GGUF form for decoder models");
  }
  if (types.empty()) {
    for (size_t i = 0; i < tokens.size(); ++i) types.push_back(tokenizer.is_special(static_cast<int>(i)) ? kControl : kNormal);
  }
  summary.tokens = static_cast<int64_t>(tokens.size());
  pad_tokens(tokens, types, summary.model == "llama" ? &scores : nullptr, rows);

  // tokenizer_config.json's add_bos_token and chat_template, where the tokenizer has one (the checkpoint's own
  // template first).
  std::string chat_template = checkpoint_template;
  if (const std::string* config = file_of(tokenizer, {"tokenizer_config.json"})) {
    const nlohmann::json c = nlohmann::json::parse(*config, nullptr, false);
    if (c.is_object()) {
      if (c.contains("add_bos_token") && c["add_bos_token"].is_boolean()) add_bos = c["add_bos_token"].get<bool>();
      if (chat_template.empty() && c.contains("chat_template") && c["chat_template"].is_string())
        chat_template = c["chat_template"].get<std::string>();
    }
  }

  writer.add("tokenizer.ggml.model", GgufValue::string(summary.model));
  if (!summary.pre.empty()) writer.add("tokenizer.ggml.pre", GgufValue::string(summary.pre));
  writer.add("tokenizer.ggml.tokens", GgufValue::string_array(std::move(tokens)));
  if (!scores.empty()) writer.add("tokenizer.ggml.scores", GgufValue::number_array(GgufValueType::kFloat32, std::move(scores)));
  writer.add("tokenizer.ggml.token_type", GgufValue::number_array(GgufValueType::kInt32, std::move(types)));
  if (!merges.empty()) writer.add("tokenizer.ggml.merges", GgufValue::string_array(std::move(merges)));
  const SpecialIds& sp = tokenizer.special();
  const int bos = sp.bos >= 0 ? sp.bos : sp.cls, eos = sp.eos >= 0 ? sp.eos : sp.sep;
  if (bos >= 0) writer.add("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<uint32_t>(bos)));
  if (eos >= 0) writer.add("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<uint32_t>(eos)));
  if (sp.unk >= 0) writer.add("tokenizer.ggml.unknown_token_id", GgufValue::u32(static_cast<uint32_t>(sp.unk)));
  if (sp.pad >= 0) writer.add("tokenizer.ggml.padding_token_id", GgufValue::u32(static_cast<uint32_t>(sp.pad)));
  writer.add("tokenizer.ggml.add_bos_token", GgufValue::boolean(add_bos));
  writer.add("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
  if (!chat_template.empty()) {
    writer.add("tokenizer.chat_template", GgufValue::string(chat_template));
    summary.chat_template = true;
  }
  return summary;
}

}  // namespace lmzoo
