// WordPiece after HF's BertTokenizer: special tokens split out first, then BasicTokenizer and greedy longest-match-
// first. Where Python's BertTokenizer and the Rust BertNormalizer (what AutoTokenizer loads) differ, this follows
// Rust: unassigned code points (Cn) are kept, not removed; the CJK block 0x2B820-0x2B91F is not spaced out; accents
// are stripped before lower-casing; categories, lower case and NFD are the Rust library's (data/unicode/unicode_props.h).
// Leaves out the NFC step newer transformers releases add before the whitespace split (it only matters for cased
// vocabularies on text not already in NFC) and HF's clean_up_tokenization_spaces.
#include "data/tokenizers/wordpiece.h"

#include <fstream>

#include "data/unicode/unicode_props.h"

namespace lmzoo {

namespace {

const std::u32string kSpecials[] = {U"[CLS]", U"[SEP]", U"[MASK]", U"[PAD]", U"[UNK]"};  // never split

bool is_special(const std::u32string& s) {
  for (const auto& sp : kSpecials) {
    if (s == sp) return true;
  }
  return false;
}

// The CJK Unified Ideographs blocks BERT puts spaces around (not Hangul, kana or CJK punctuation), with the Rust
// BertNormalizer's 0x2B920 where Python's BERT has 0x2B820.
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_bert_whitespace(char32_t c) {  // \t \n \r and White_Space (Rust); Python's Zs alone splits the same
  return c == U'\t' || c == U'\n' || c == U'\r' || unicode::is_white_space(c);
}

// Categories Cc, Cf and Co as Rust's is_other() has them (Cn, unassigned, is kept; Python drops it too), not \t \n \r.
bool is_bert_control(char32_t c) {
  return c != U'\t' && c != U'\n' && c != U'\r' && unicode::is_other_assigned(c);
}

// _clean_text and _tokenize_chinese_chars: drop NUL, U+FFFD and controls, white space to ' ', CJK spaced out.
std::u32string clean(const std::u32string& text, bool space_cjk) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
    if (is_bert_whitespace(c)) {
      out.push_back(U' ');
    } else if (space_cjk && is_cjk(c)) {
      out += {U' ', c, U' '};
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Python's str.split(): runs of non-space characters.
std::vector<std::u32string> split_on_space(const std::u32string& text) {
  std::vector<std::u32string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && unicode::is_python_space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !unicode::is_python_space(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

}  // namespace

WordPieceTokenizer WordPieceTokenizer::load(const std::string& vocab_path, const WordPieceOptions& options) {
  std::ifstream in(vocab_path, std::ios::binary);
  if (!in) throw HfTokenizerError("cannot read WordPiece vocabulary " + vocab_path);
  WordPieceTokenizer tok;
  tok.options_ = options;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int64_t id = static_cast<int64_t>(tok.pieces_.size());
    (void)utf8_to_code_points(line, vocab_path + " line " + std::to_string(id + 1));
    tok.ids_[line] = id;
    tok.pieces_.push_back(line);
  }
  tok.unk_id_ = tok.piece_to_id("[UNK]");
  if (tok.unk_id_ < 0) throw HfTokenizerError(vocab_path + " has no [UNK] line: not a BERT WordPiece vocabulary");
  if (options.max_input_chars_per_word < 1) throw HfTokenizerError("max_input_chars_per_word must be at least 1");
  return tok;
}

// As the Rust BertNormalizer: accents stripped (NFD, nonspacing marks dropped) first, then lower case.
std::u32string WordPieceTokenizer::normalize_word(const std::u32string& word) const {
  std::u32string w;
  if (options_.strip_accents.value_or(options_.do_lower_case)) {
    for (char32_t c : nfd(word)) {
      if (!unicode::is_nonspacing_mark(c)) w.push_back(c);
    }
  } else {
    w = word;
  }
  if (!options_.do_lower_case) return w;
  std::u32string lower;
  for (char32_t c : w) unicode::append_lower(c, lower);
  return lower;
}

void WordPieceTokenizer::basic_tokenize_chunk(const std::u32string& chunk, std::vector<std::string>& out) const {
  for (const std::u32string& word : split_on_space(clean(chunk, options_.tokenize_chinese_chars))) {
    if (is_special(word)) {
      out.push_back(code_points_to_utf8(word));
      continue;
    }
    std::u32string piece;
    for (char32_t c : normalize_word(word)) {  // every punctuation mark is a token of its own
      if (!unicode::is_bert_punctuation(c)) {
        piece.push_back(c);
        continue;
      }
      if (!piece.empty()) out.push_back(code_points_to_utf8(piece));
      piece.clear();
      out.push_back(code_points_to_utf8(std::u32string(1, c)));
    }
    if (!piece.empty()) out.push_back(code_points_to_utf8(piece));
  }
}

std::vector<std::string> WordPieceTokenizer::basic_tokenize(const std::string& text) const {
  const std::u32string s = utf8_to_code_points(text);
  std::vector<std::string> out;
  size_t start = 0;  // special tokens come out first, wherever they stand (HF's added-token split)
  while (start <= s.size()) {
    size_t best = std::u32string::npos;
    const std::u32string* which = nullptr;
    for (const auto& sp : kSpecials) {
      const size_t at = s.find(sp, start);
      if (at != std::u32string::npos && (best == std::u32string::npos || at < best)) {
        best = at;
        which = &sp;
      }
    }
    basic_tokenize_chunk(s.substr(start, best == std::u32string::npos ? std::u32string::npos : best - start), out);
    if (!which) break;
    out.push_back(code_points_to_utf8(*which));
    start = best + which->size();
  }
  return out;
}

// Greedy longest-match-first: the longest prefix in the vocabulary, then the longest "##" continuation, and so
// on; one [UNK] for the whole word if some position has no match or the word is too long.
void WordPieceTokenizer::word_pieces(const std::string& word, std::vector<std::string>& out) const {
  std::vector<size_t> starts;  // byte offset of each code point, and the end
  for (size_t i = 0; i < word.size(); ++i) {
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  const size_t n = starts.size();
  starts.push_back(word.size());
  if (n > static_cast<size_t>(options_.max_input_chars_per_word)) {
    out.push_back("[UNK]");
    return;
  }
  std::vector<std::string> pieces;
  for (size_t begin = 0; begin < n;) {
    size_t end = n;
    for (; end > begin; --end) {
      std::string sub = (begin > 0 ? "##" : "") + word.substr(starts[begin], starts[end] - starts[begin]);
      if (ids_.count(sub)) {
        pieces.push_back(std::move(sub));
        break;
      }
    }
    if (end == begin) {
      out.push_back("[UNK]");
      return;
    }
    begin = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

std::vector<std::string> WordPieceTokenizer::tokenize(const std::string& text) const {
  std::vector<std::string> out;
  for (const std::string& word : basic_tokenize(text)) {
    if (is_special(utf8_to_code_points(word))) out.push_back(word);
    else word_pieces(word, out);
  }
  return out;
}

std::vector<int64_t> WordPieceTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  std::vector<int64_t> ids;
  if (add_special_tokens) ids.push_back(cls_id() >= 0 ? cls_id() : unk_id_);
  for (const std::string& piece : tokenize(text)) {
    const int64_t id = piece_to_id(piece);
    ids.push_back(id >= 0 ? id : unk_id_);
  }
  if (add_special_tokens) ids.push_back(sep_id() >= 0 ? sep_id() : unk_id_);
  return ids;
}

std::string WordPieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) (void)id_to_piece(ids[i]);  // throws the message
    const std::string& piece = pieces_[ids[i]];
    if (i > 0 && piece.rfind("##", 0) == 0) joined += piece.substr(2);
    else joined += (i > 0 ? " " : "") + piece;
  }
  std::u32string s = utf8_to_code_points(joined);  // strip() as Python does: its white space at both ends
  size_t a = 0, b = s.size();
  while (a < b && unicode::is_python_space(s[a])) ++a;
  while (b > a && unicode::is_python_space(s[b - 1])) --b;
  return code_points_to_utf8(s.substr(a, b - a));
}

int64_t WordPieceTokenizer::piece_to_id(const std::string& piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

std::string WordPieceTokenizer::id_to_piece(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw HfTokenizerError("token id " + std::to_string(id) + " is not in the WordPiece vocabulary (size " +
                           std::to_string(vocab_size()) + ")");
  }
  return pieces_[id];
}

}  // namespace lmzoo
