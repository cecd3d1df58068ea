// Unigram as the Rust tokenizers library's Unigram::encode_optimized and tokenize.
#include "data/tokenizers/hf_json/unigram_model.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "data/tokenizers/hf_json/text_pipeline.h"  // TokenizerJsonError

namespace lmzoo::hf {

namespace {

constexpr double kUnkPenalty = 10.0;

size_t utf8_len(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

}  // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> pieces, int unk_id, bool byte_fallback)
    : pieces_(std::move(pieces)), unk_id_(unk_id), byte_fallback_(byte_fallback) {
  min_score_ = std::numeric_limits<double>::infinity();
  trie_.emplace_back();
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const auto& [piece, score] = pieces_[id];
    ids_[piece] = int(id);
    min_score_ = std::min(min_score_, score);
    int node = 0;
    for (unsigned char c : piece) {
      const auto it = trie_[size_t(node)].next.find(c);
      if (it != trie_[size_t(node)].next.end()) {
        node = it->second;
      } else {
        trie_.emplace_back();
        trie_[size_t(node)].next[c] = int(trie_.size()) - 1;
        node = int(trie_.size()) - 1;
      }
    }
    trie_[size_t(node)].terminal = true;
  }
  for (auto& n : trie_) n.id = -1;
  for (size_t id = 0; id < pieces_.size(); ++id) {  // ids_ holds each spelling's last id
    int node = 0;
    for (unsigned char c : pieces_[id].first) node = trie_[size_t(node)].next.at(c);
    trie_[size_t(node)].id = ids_.at(pieces_[id].first);
  }
}

int UnigramModel::token_to_id(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string* UnigramModel::id_to_token(int id) const {
  return id >= 0 && size_t(id) < pieces_.size() ? &pieces_[size_t(id)].first : nullptr;
}

std::vector<std::string> UnigramModel::segment(const std::string& text) const {
  struct Best {
    int id = 0;
    double score = 0;
    long starts_at = -1;  // -1: no path ends here yet
  };
  const size_t size = text.size();
  const double unk_score = min_score_ - kUnkPenalty;
  std::vector<Best> best(size + 1);
  for (size_t start = 0; start < size;) {
    const double here = best[start].score;
    const size_t mblen = std::min(utf8_len(static_cast<unsigned char>(text[start])), size - start);
    bool has_single = false;
    int node = 0;
    for (size_t pos = start; pos < size; ++pos) {  // every piece that is a prefix of text[start..]
      const auto it = trie_[size_t(node)].next.find(static_cast<unsigned char>(text[pos]));
      if (it == trie_[size_t(node)].next.end()) break;
      node = it->second;
      if (!trie_[size_t(node)].terminal) continue;
      const size_t end = pos + 1;
      const int id = trie_[size_t(node)].id;
      const double candidate = pieces_[size_t(id)].second + here;
      Best& target = best[end];
      if (target.starts_at < 0 || candidate > target.score) target = Best{id, candidate, long(start)};
      if (end - start == mblen) has_single = true;
    }
    if (!has_single) {
      if (unk_id_ < 0) throw TokenizerJsonError("model.unk_id: null, and the text holds a character no piece covers");
      Best& target = best[start + mblen];
      const double candidate = unk_score + here;
      if (target.starts_at < 0 || candidate > target.score) target = Best{unk_id_, candidate, long(start)};
    }
    start += mblen;
  }
  std::vector<std::string> results, unk_run;
  const auto flush = [&] {
    if (unk_run.empty()) return;
    std::string fused;
    for (auto it = unk_run.rbegin(); it != unk_run.rend(); ++it) fused += *it;
    results.push_back(std::move(fused));
    unk_run.clear();
  };
  for (size_t end = size; end > 0;) {
    const Best& node = best[end];
    const size_t start = size_t(node.starts_at);
    if (unk_id_ >= 0 && node.id == unk_id_) {
      unk_run.push_back(text.substr(start, end - start));
    } else {
      flush();
      results.push_back(text.substr(start, end - start));
    }
    end = start;
  }
  flush();
  std::reverse(results.begin(), results.end());
  return results;
}

void UnigramModel::tokenize(const std::string& word, std::vector<int>& out) const {
  if (word.empty()) return;
  for (const std::string& piece : segment(word)) {
    const auto it = ids_.find(piece);
    if (it != ids_.end()) {
      out.push_back(it->second);
      continue;
    }
    if (byte_fallback_) {
      std::vector<int> bytes;
      for (unsigned char c : piece) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", c);
        const int id = token_to_id(name);
        if (id < 0) break;
        bytes.push_back(id);
      }
      if (bytes.size() == piece.size()) {
        out.insert(out.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (unk_id_ < 0) throw TokenizerJsonError("model.unk_id: null, and the text holds a character no piece covers");
    out.push_back(unk_id_);
  }
}

}  // namespace lmzoo::hf
