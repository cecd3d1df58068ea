// The tokenizer.json backend behind Tokenizer: data/tokenizers/hf_json/tokenizer_json.h over the file's bytes, special
// ids from tokenizer_config.json, and the per-id facts Tokenizer asks for. Leaves out: the pipeline itself.
#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/decoders.h"
#include "data/tokenizers/hf_json/tokenizer_json.h"
#include "data/tokenizers/tokenizer_backend.h"
#include "data/unicode/unicode_text.h"

namespace lmzoo {

namespace {

class HfJsonBackend : public TokenizerBackend {
 public:
  explicit HfJsonBackend(std::unique_ptr<hf::TokenizerJson> tok) : tok_(std::move(tok)) {
    const int n = tok_->vocab_size();
    bytes_.resize(size_t(n));
    word_start_.resize(size_t(n), false);
    const bool byte_level = tok_->uses("decoder:ByteLevel");
    const bool metaspace = tok_->uses("decoder:Metaspace") || tok_->uses("pre_tokenizer:Metaspace");
    const bool wordpiece = tok_->uses("model:WordPiece");
    for (int id = 0; id < n; ++id) {
      const std::string* token = tok_->id_to_token(id);
      if (!token || tok_->is_special_added(id)) continue;
      bytes_[size_t(id)] = piece_text(*token, byte_level, metaspace, wordpiece);
      word_start_[size_t(id)] = wordpiece ? token->rfind("##", 0) != 0 : !bytes_[size_t(id)].empty() && bytes_[size_t(id)][0] == ' ';
    }
  }
  std::vector<int> encode(const std::string& text) const override { return tok_->encode(text, split_special_); }
  // No cut is exact for every pipeline a tokenizer.json can describe, so a document is encoded whole (BPE, WordPiece
  // and Unigram stay near linear); one past prepare's document limit must be cut: after a newline.
  TextCut cut_at(std::string_view text, size_t pos, bool forced) const override {
    return forced && pos > 0 && pos < text.size() && text[pos - 1] == '\n' ? TextCut{pos, pos} : TextCut{};
  }
  std::string decode(const std::vector<int>& ids) const override { return tok_->decode(ids); }
  std::string id_to_piece(int id) const override {
    const std::string* t = tok_->id_to_token(id);
    return t ? *t : "";
  }
  int piece_to_id(const std::string& piece) const override { return tok_->token_to_id(piece); }
  int vocab_size() const override { return tok_->vocab_size(); }
  bool is_word_start(int id) const override { return word_start_[size_t(id)]; }
  int piece_bytes(int id) const override { return int(bytes_[size_t(id)].size()); }
  bool is_control(int id) const override { return tok_->is_special_added(id); }
  void set_split_special_tokens(bool on) override { split_special_ = on; }
  bool add_special_tokens(std::vector<int>& ids) const override {
    ids = tok_->post_process(std::move(ids));
    return true;
  }

 private:
  // The text a token stands for on its own: byte-level characters as bytes, "▁" as a space, <0xXX> as one byte,
  // WordPiece's "##" dropped (a word start gets the space before it).
  static std::string piece_text(const std::string& token, bool byte_level, bool metaspace, bool wordpiece) {
    if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') return std::string(1, '\0');
    if (wordpiece) return token.rfind("##", 0) == 0 ? token.substr(2) : " " + token;
    std::string out;
    const std::u32string chars = utf8_to_code_points(token, "token");
    if (byte_level) {
      for (char32_t c : chars) {
        const int b = hf::byte_level_char_to_byte(c);
        if (b < 0) return token;
        out.push_back(char(b));
      }
      return out;
    }
    for (char32_t c : chars) {
      if (metaspace && c == 0x2581) out.push_back(' ');
      else append_utf8(c, out);
    }
    return out;
  }

  std::unique_ptr<hf::TokenizerJson> tok_;
  std::vector<std::string> bytes_;
  std::vector<bool> word_start_;
  bool split_special_ = false;
};

}  // namespace

LoadedBackend load_hf_json_backend(const TokenizerFiles& files) {
  const auto json = files.find("tokenizer.json");
  if (json == files.end()) throw std::runtime_error("tokenizer.json: missing");
  std::unique_ptr<hf::TokenizerJson> tok;
  try {
    tok = hf::TokenizerJson::parse(json->second);
  } catch (const hf::TokenizerJsonError& e) {
    throw std::runtime_error(std::string("tokenizer.json: ") + e.what());
  }
  LoadedBackend loaded;
  const auto config = files.find("tokenizer_config.json");
  try {
    loaded.special = hf::special_ids_from_config(*tok, config == files.end() ? "" : config->second);
  } catch (const hf::TokenizerJsonError& e) {
    throw std::runtime_error(std::string("tokenizer_config.json: ") + e.what());
  }
  loaded.files = files;
  loaded.backend = std::make_unique<HfJsonBackend>(std::move(tok));
  return loaded;
}

}  // namespace lmzoo
