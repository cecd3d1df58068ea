// WordPiece as the Rust tokenizers library's WordPiece::tokenize.
#include "data/tokenizers/hf_json/wordpiece_model.h"

#include "data/tokenizers/hf_json/text_pipeline.h"  // TokenizerJsonError

namespace lmzoo::hf {

namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

WordPieceModel::WordPieceModel(const std::unordered_map<std::string, int>& vocab, WordPieceConfig config)
    : config_(std::move(config)), vocab_(vocab) {
  for (const auto& [token, id] : vocab_) vocab_r_.add(id, token);
}

int WordPieceModel::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

int WordPieceModel::unk_id() const {
  const int id = token_to_id(config_.unk_token);
  if (id < 0) {
    throw TokenizerJsonError("model.unk_token: '" + config_.unk_token + "' is not in model.vocab, and a word has "
                             "no WordPiece split");
  }
  return id;
}

void WordPieceModel::tokenize(const std::string& word, std::vector<int>& out) const {
  int64_t chars = 0;
  for (char c : word) chars += is_continuation(c) ? 0 : 1;
  if (chars > config_.max_input_chars_per_word) {
    out.push_back(unk_id());
    return;
  }
  std::vector<int> pieces;
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int found = -1;
    while (start < end) {
      candidate.clear();
      if (start > 0) candidate = config_.continuing_subword_prefix;
      candidate.append(word, start, end - start);
      const auto it = vocab_.find(candidate);
      if (it != vocab_.end()) {
        found = it->second;
        break;
      }
      --end;  // back by the last character of the candidate
      while (end > start && is_continuation(word[end])) --end;
    }
    if (found < 0) {
      out.push_back(unk_id());
      return;
    }
    pieces.push_back(found);
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace lmzoo::hf
