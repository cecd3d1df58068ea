// BPE as the Rust tokenizers library's BPE::tokenize: merge_word, then merges applied lowest rank first (leftmost on
// a tie) from a priority queue of candidate pairs, stale entries skipped.
#include "data/tokenizers/hf_json/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "data/tokenizers/hf_json/json_fields.h"

namespace lmzoo::hf {

namespace {

uint64_t pair_key(int a, int b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }

size_t utf8_len(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

}  // namespace

BpeModel::BpeModel(const std::unordered_map<std::string, int>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeConfig config,
                   const std::string& path)
    : config_(std::move(config)), vocab_(vocab) {
  for (const auto& [token, id] : vocab_) vocab_r_.add(id, token);
  const size_t prefix_len = config_.continuing_subword_prefix ? config_.continuing_subword_prefix->size() : 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const std::string where = path + ".merges[" + std::to_string(i) + "]";
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end()) json_error(where, "token '" + a + "' is not in " + path + ".vocab");
    if (ib == vocab_.end()) json_error(where, "token '" + b + "' is not in " + path + ".vocab");
    if (b.size() < prefix_len || (b.size() > prefix_len && (static_cast<unsigned char>(b[prefix_len]) & 0xC0) == 0x80)) {
      json_error(where, "token '" + b + "' is shorter than continuing_subword_prefix");
    }
    const std::string merged = a + b.substr(prefix_len);
    const auto im = vocab_.find(merged);
    if (im == vocab_.end()) json_error(where, "the merged token '" + merged + "' is not in " + path + ".vocab");
    merges_[pair_key(ia->second, ib->second)] = Merge{uint32_t(i), im->second};  // a repeated pair: the later rank
  }
  if (config_.unk_token) unk_id_ = token_to_id(*config_.unk_token);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_ids_[b] = token_to_id(name);
  }
}

int BpeModel::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

// Rust's BPE::merge_word: one symbol per character, then Word::merge_all.
std::vector<int> BpeModel::merge_word(const std::string& w) const { return merge_all(character_ids(w)); }

std::vector<int> BpeModel::character_ids(const std::string& w) const {
  std::vector<int> ids;
  ids.reserve(w.size());
  int pending_unk = -1;  // an unknown run not yet added (Rust's `unk`)
  std::string s;
  for (size_t i = 0; i < w.size();) {
    const size_t len = std::min(utf8_len(static_cast<unsigned char>(w[i])), w.size() - i);
    const bool is_first = i == 0, is_last = i + len == w.size();
    s.clear();
    if (!is_first && config_.continuing_subword_prefix) s += *config_.continuing_subword_prefix;
    s.append(w, i, len);
    if (is_last && config_.end_of_word_suffix) s += *config_.end_of_word_suffix;
    i += len;
    const auto it = vocab_.find(s);
    if (it != vocab_.end()) {
      if (pending_unk >= 0) ids.push_back(pending_unk);
      pending_unk = -1;
      ids.push_back(it->second);
      continue;
    }
    if (config_.byte_fallback) {
      bool all = true;
      for (unsigned char c : s) all = all && byte_ids_[c] >= 0;
      if (all) {  // as in Rust, a pending unknown stays pending (added after these bytes)
        for (unsigned char c : s) ids.push_back(byte_ids_[c]);
        continue;
      }
    }
    if (config_.unk_token) {
      if (unk_id_ < 0) {
        throw TokenizerJsonError("model.unk_token: '" + *config_.unk_token + "' is not in model.vocab, and the text "
                                 "holds a character outside the vocabulary");
      }
      if (pending_unk >= 0 && !config_.fuse_unk) ids.push_back(pending_unk);
      pending_unk = unk_id_;
    }
  }
  if (pending_unk >= 0) ids.push_back(pending_unk);
  return ids;
}

std::vector<int> BpeModel::merge_all(const std::vector<int>& ids) const {
  struct Symbol {
    int id;
    int prev, next;
    bool removed;
  };
  std::vector<Symbol> symbols;  // a doubly linked list over the ids
  symbols.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) symbols.push_back(Symbol{ids[i], int(i) - 1, int(i) + 1, false});
  if (!symbols.empty()) symbols.back().next = -1;

  struct Candidate {
    uint32_t rank;
    int pos, new_id;
    bool operator<(const Candidate& o) const {  // the queue's top: lowest rank, then leftmost
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate> queue;
  const auto find_merge = [this](int a, int b) -> const Merge* {
    const auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id)) queue.push({m->rank, int(i), m->new_id});
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& cur = symbols[size_t(top.pos)];
    if (cur.removed || cur.next < 0) continue;
    Symbol& right = symbols[size_t(cur.next)];
    const Merge* m = find_merge(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;  // a stale entry
    cur.id = top.new_id;
    right.removed = true;
    cur.next = right.next;
    if (cur.next >= 0) symbols[size_t(cur.next)].prev = top.pos;
    if (cur.prev >= 0) {
      if (const Merge* pm = find_merge(symbols[size_t(cur.prev)].id, cur.id)) queue.push({pm->rank, cur.prev, pm->new_id});
    }
    if (cur.next >= 0) {
      if (const Merge* nm = find_merge(cur.id, symbols[size_t(cur.next)].id)) queue.push({nm->rank, top.pos, nm->new_id});
    }
  }
  std::vector<int> merged;
  for (const Symbol& sym : symbols) {
    if (!sym.removed) merged.push_back(sym.id);
  }
  return merged;
}

void BpeModel::tokenize(const std::string& word, std::vector<int>& out) const {
  if (word.empty()) return;
  if (config_.ignore_merges) {
    const auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() < kCacheMaxWord;
  if (cacheable) {
    std::shared_lock<std::shared_mutex> lock(cache_mutex_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> ids = merge_word(word);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::unique_lock<std::shared_mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(word, std::move(ids));
  }
}

}  // namespace lmzoo::hf
