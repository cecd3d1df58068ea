// Added-token extraction as the Rust library's AddedVocabulary::extract_and_normalize and find_matches.
#include "data/tokenizers/hf_json/added_vocabulary.h"

#include <utf8proc.h>

#include "data/unicode/unicode_props.h"

namespace lmzoo::hf {

namespace {

// The code point ending just before byte AT of valid UTF-8 TEXT, and its start.
char32_t char_before(const std::string& text, size_t at, size_t* start) {
  size_t i = at - 1;
  while (i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  utf8proc_int32_t cp = 0;
  utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i), utf8proc_ssize_t(at - i), &cp);
  if (start) *start = i;
  return char32_t(cp);
}

char32_t char_at(const std::string& text, size_t at, size_t* len) {
  utf8proc_int32_t cp = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + at),
                                  utf8proc_ssize_t(text.size() - at), &cp);
  if (len) *len = n > 0 ? size_t(n) : 1;
  return char32_t(cp);
}

// Rust regex's \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control.
bool is_word_char(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189)) {
    return true;  // circled and squared letters: Alphabetic though category So
  }
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace

void AddedVocabulary::Matcher::add(const std::string& pattern, int token) {
  if (pattern.empty()) return;
  int node = 0;
  for (unsigned char c : pattern) {
    int next = -1;
    for (const auto& [byte, child] : nodes[size_t(node)].next) {
      if (byte == c) next = child;
    }
    if (next < 0) {
      nodes.emplace_back();
      next = int(nodes.size()) - 1;
      nodes[size_t(node)].next.emplace_back(c, next);
    }
    node = next;
  }
  if (nodes[size_t(node)].token < 0) nodes[size_t(node)].token = token;
  first_byte[static_cast<unsigned char>(pattern[0])] = true;
}

std::pair<size_t, int> AddedVocabulary::Matcher::longest_at(const std::string& text, size_t at) const {
  std::pair<size_t, int> best{0, -1};
  if (!first_byte[static_cast<unsigned char>(text[at])]) return best;
  int node = 0;
  for (size_t i = at; i < text.size(); ++i) {
    int next = -1;
    for (const auto& [byte, child] : nodes[size_t(node)].next) {
      if (byte == static_cast<unsigned char>(text[i])) next = child;
    }
    if (next < 0) break;
    node = next;
    if (nodes[size_t(node)].token >= 0) best = {i + 1 - at, nodes[size_t(node)].token};
  }
  return best;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)) {
  // The Rust library's tries hold the special tokens first, then the others; among equal patterns the first wins.
  for (bool special : {true, false}) {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const AddedToken& t = tokens_[i];
      if (t.special != special || t.content.empty()) continue;
      if (t.normalized) {
        normalized_.add(normalizer ? normalizer->normalize(t.content) : t.content, int(i));
        any_normalized_ = true;
      } else {
        raw_.add(t.content, int(i));
        any_raw_ = true;
      }
    }
  }
}

void AddedVocabulary::split(const std::string& text, bool starts_input, const Matcher& matcher, bool split_special,
                            std::vector<Segment>& out) const {
  size_t start_offset = 0;
  const auto push_text = [&](size_t from, size_t to) {
    if (to > from) out.push_back(Segment{text.substr(from, to - from), -1, starts_input && from == 0});
  };
  for (size_t at = 0; at < text.size();) {
    const auto [len, index] = matcher.longest_at(text, at);
    if (index < 0) {
      ++at;
      continue;
    }
    size_t start = at, stop = at + len;
    at = stop;  // a discarded match still consumes its bytes, as the Rust library's match iterator does
    const AddedToken& token = tokens_[size_t(index)];
    if (split_special && token.special) continue;
    if (token.single_word) {
      const bool start_space = start == 0 || !is_word_char(char_before(text, start, nullptr));
      const bool stop_space = stop == text.size() || !is_word_char(char_at(text, stop, nullptr));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) {  // \s*$ on the text before the match, but never into the previous split
      size_t s = start;
      while (s > start_offset) {
        size_t prev = 0;
        if (!unicode::is_white_space(char_before(text, s, &prev))) break;
        s = prev;
      }
      start = s;
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t n = 0;
        if (!unicode::is_white_space(char_at(text, stop, &n))) break;
        stop += n;
      }
      at = stop;
    }
    push_text(start_offset, start);
    out.push_back(Segment{text.substr(start, stop - start), token.id, false});
    start_offset = stop;
  }
  push_text(start_offset, text.size());
}

std::vector<Segment> AddedVocabulary::extract_and_normalize(const std::string& text, const Normalizer* normalizer,
                                                            bool split_special_tokens) const {
  std::vector<Segment> first;
  if (any_raw_) {
    split(text, true, raw_, split_special_tokens, first);
  } else if (!text.empty()) {
    first.push_back(Segment{text, -1, true});
  }
  std::vector<Segment> out;
  for (Segment& s : first) {
    if (s.id >= 0) {
      out.push_back(std::move(s));
      continue;
    }
    std::string normalized = normalizer ? normalizer->normalize(s.text) : std::move(s.text);
    if (any_normalized_) {
      split(normalized, s.starts_input, normalized_, split_special_tokens, out);
    } else if (!normalized.empty()) {
      out.push_back(Segment{std::move(normalized), -1, s.starts_input});
    }
  }
  return out;
}

}  // namespace lmzoo::hf
