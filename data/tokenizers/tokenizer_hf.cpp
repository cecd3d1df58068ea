// Hugging Face backends behind Tokenizer: GPT-2 byte-level BPE (<|endoftext|> as bos and eos) and BERT WordPiece
// ([SEP] as eos, options from tokenizer_config.json). Leaves out: the tokenizers themselves (data/tokenizers/gpt2_bpe.h,
// data/tokenizers/wordpiece.h) and tokenizer.json.
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/tokenizers/gpt2_bpe.h"
#include "data/tokenizers/gpt2_cuts.h"
#include "data/tokenizers/tokenizer_backend.h"
#include "data/tokenizers/wordpiece.h"

namespace lmzoo {

namespace {

std::vector<int> to_int(const std::vector<int64_t>& ids) { return std::vector<int>(ids.begin(), ids.end()); }
std::vector<int64_t> to_int64(const std::vector<int>& ids) { return std::vector<int64_t>(ids.begin(), ids.end()); }

// What both tokenizers answer alike: ids as int.
template <typename Tok>
class ForwardingBackend : public TokenizerBackend {
 public:
  explicit ForwardingBackend(Tok tok) : tok_(std::move(tok)) {}
  std::vector<int> encode(const std::string& text) const override { return to_int(tok_.encode(text)); }
  std::string decode(const std::vector<int>& ids) const override { return tok_.decode(to_int64(ids)); }
  std::string id_to_piece(int id) const override { return tok_.id_to_piece(id); }
  int piece_to_id(const std::string& piece) const override { return int(tok_.piece_to_id(piece)); }
  int vocab_size() const override { return int(tok_.vocab_size()); }

 protected:
  Tok tok_;
};

class Gpt2Backend : public ForwardingBackend<Gpt2BpeTokenizer> {
 public:
  explicit Gpt2Backend(Gpt2BpeTokenizer tok) : ForwardingBackend(std::move(tok)) {
    for (const auto& piece : tok_.special_tokens()) controls_.push_back(int(tok_.piece_to_id(piece)));
    bytes_.resize(size_t(tok_.vocab_size()));
    for (int id = 0; id < vocab_size(); ++id) {
      if (is_control(id) || tok_.piece_to_id(tok_.id_to_piece(id)) != id) continue;  // controls and holes: none
      bytes_[size_t(id)] = tok_.decode({id});
    }
  }
  // <|endoftext|> written in the text is its id (HF's GPT2TokenizerFast) unless split_special_tokens is on.
  std::vector<int> encode(const std::string& text) const override { return to_int(tok_.encode(text, !split_special_)); }
  void set_split_special_tokens(bool on) override { split_special_ = on; }
  bool is_word_start(int id) const override { return !bytes_[size_t(id)].empty() && bytes_[size_t(id)][0] == ' '; }
  // The pattern's sure match ends (gpt2_cut_at), never inside a special token written in the text.
  TextCut cut_at(std::string_view text, size_t pos, bool) const override {
    const TextCut cut = gpt2_cut_at(text, pos);
    if (!cut.found()) return cut;
    for (const auto& special : tok_.special_tokens()) {
      const size_t from = pos >= special.size() ? pos - special.size() + 1 : 0;
      const size_t at = text.substr(from, pos + special.size() - 1 - from).find(special);
      if (at != std::string_view::npos) return {};
    }
    return cut;
  }
  int piece_bytes(int id) const override { return int(bytes_[size_t(id)].size()); }
  bool is_control(int id) const override {
    for (int c : controls_) if (c == id) return true;
    return false;
  }

 private:
  std::vector<int> controls_;       // ids of the special tokens (<|endoftext|>)
  std::vector<std::string> bytes_;  // id -> the bytes it decodes to ("" for controls)
  bool split_special_ = false;
};

class WordPieceBackend : public ForwardingBackend<WordPieceTokenizer> {
 public:
  explicit WordPieceBackend(WordPieceTokenizer tok) : ForwardingBackend(std::move(tok)) {}
  bool is_word_start(int id) const override { return tok_.id_to_piece(id).rfind("##", 0) != 0; }
  // WordPiece drops spaces and may lower-case, so this approximates: the piece's length without "##", plus one
  // for the space before a word; 0 for [CLS]-style pieces.
  int piece_bytes(int id) const override {
    const std::string piece = tok_.id_to_piece(id);
    if (piece.size() > 2 && piece.front() == '[' && piece.back() == ']') return 0;
    return is_word_start(id) ? int(piece.size()) + 1 : int(piece.size()) - 2;
  }
  bool is_control(int) const override { return false; }
  // Before ASCII white space: BERT's basic tokenizer splits words there whatever surrounds it.
  TextCut cut_at(std::string_view text, size_t pos, bool) const override {
    const char c = pos > 0 && pos < text.size() ? text[pos] : 'x';
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' ? TextCut{pos, pos} : TextCut{};
  }
};

// tokenizer_config.json's switches (absent keys keep WordPieceOptions' defaults, as HF's BertTokenizer).
WordPieceOptions wordpiece_options(const std::string& config_json) {
  WordPieceOptions o;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(std::string("tokenizer_config.json is not valid JSON: ") + e.what());
  }
  auto flag = [&](const char* key, bool& out) {
    if (j.contains(key) && j[key].is_boolean()) out = j[key].get<bool>();
  };
  flag("do_lower_case", o.do_lower_case);
  flag("tokenize_chinese_chars", o.tokenize_chinese_chars);
  if (j.contains("strip_accents") && j["strip_accents"].is_boolean()) o.strip_accents = j["strip_accents"].get<bool>();
  return o;
}

}  // namespace

LoadedBackend load_gpt2_backend(const std::string& dir, const TokenizerFiles& files) {
  auto backend = std::make_unique<Gpt2Backend>(Gpt2BpeTokenizer::load(dir));
  LoadedBackend loaded;
  const int eos = backend->piece_to_id("<|endoftext|>");
  loaded.special.bos = loaded.special.eos = eos >= 0 && backend->is_control(eos) ? eos : -1;
  loaded.special.tokenizer = "gpt2-bpe";
  loaded.files = files;
  loaded.backend = std::move(backend);
  return loaded;
}

LoadedBackend load_wordpiece_backend(const std::string& dir, const TokenizerFiles& files) {
  const auto config = files.find("tokenizer_config.json");
  const WordPieceOptions options = config == files.end() ? WordPieceOptions{} : wordpiece_options(config->second);
  WordPieceTokenizer tok = WordPieceTokenizer::load(dir + "/vocab.txt", options);
  LoadedBackend loaded;
  SpecialIds& s = loaded.special;
  s.pad = int(tok.pad_id());
  s.unk = int(tok.unk_id());
  s.cls = int(tok.cls_id());
  s.sep = int(tok.sep_id());
  s.mask = int(tok.mask_id());
  s.eos = s.sep;  // BERT has no </s>: [SEP] separates documents
  s.tokenizer = "wordpiece";
  loaded.files = files;
  loaded.backend = std::make_unique<WordPieceBackend>(std::move(tok));
  return loaded;
}

}  // namespace lmzoo
