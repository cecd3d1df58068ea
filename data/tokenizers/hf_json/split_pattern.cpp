// The tokenizers' text cutting: find_matches over an Oniguruma regex or a character predicate, and the five
// delimiter behaviours as the Rust NormalizedString::split folds them. Leaves out: alignment bookkeeping.
#include "data/tokenizers/hf_json/split_pattern.h"

#include <algorithm>

namespace lmzoo::hf {

namespace {

// The code point at S[I] (valid UTF-8) and its length in bytes.
char32_t decode_at(std::string_view s, size_t i, size_t& length) {
  const auto c = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  if (c < 0x80) return length = 1, c;
  if (c < 0xE0) return length = 2, static_cast<char32_t>(c & 0x1F) << 6 | cont(1);
  if (c < 0xF0) return length = 3, static_cast<char32_t>(c & 0x0F) << 12 | cont(1) << 6 | cont(2);
  return length = 4, static_cast<char32_t>(c & 0x07) << 18 | cont(1) << 12 | cont(2) << 6 | cont(3);
}

}  // namespace

std::vector<MatchRange> find_matches(const OnigRegex& regex, std::string_view text) {
  if (text.empty()) return {{0, 0, false}};
  std::vector<MatchRange> out;
  size_t prev = 0;
  for (const auto& [b, e] : regex.find_all(text)) {
    if (prev != b) out.push_back({prev, b, false});
    out.push_back({b, e, true});
    prev = e;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
  return out;
}

std::vector<MatchRange> find_matches(std::string_view text, const std::function<bool(char32_t)>& is_delim) {
  if (text.empty()) return {{0, 0, false}};
  std::vector<MatchRange> out;
  size_t last = 0;
  for (size_t i = 0; i < text.size();) {
    size_t n;
    const char32_t c = decode_at(text, i, n);
    if (is_delim(c)) {
      if (last < i) out.push_back({last, i, false});
      out.push_back({i, i + n, true});
      last = i + n;
    }
    i += n;
  }
  if (last < text.size()) out.push_back({last, text.size(), false});
  return out;
}

void invert_matches(std::vector<MatchRange>& matches) {
  for (MatchRange& m : matches) m.is_match = !m.is_match;
}

std::vector<std::pair<size_t, size_t>> split_ranges(std::vector<MatchRange> matches, SplitBehavior behavior) {
  std::vector<std::pair<size_t, size_t>> out;
  out.reserve(matches.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const MatchRange& m : matches) {
        if (!m.is_match) out.emplace_back(m.begin, m.end);
      }
      break;
    case SplitBehavior::Isolated:
      for (const MatchRange& m : matches) out.emplace_back(m.begin, m.end);
      break;
    case SplitBehavior::Contiguous:  // a run of ranges with the same flag becomes one piece
      for (const MatchRange& m : matches) {
        if (m.is_match == previous_match && !out.empty()) out.back().second = m.end;
        else out.emplace_back(m.begin, m.end);
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:  // a match after a non-match extends that piece
      for (const MatchRange& m : matches) {
        if (m.is_match && !previous_match && !out.empty()) out.back().second = m.end;
        else out.emplace_back(m.begin, m.end);
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:  // the same fold from the right: a match before a non-match starts it
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) out.back().first = it->begin;
        else out.emplace_back(it->begin, it->end);
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

}  // namespace lmzoo::hf
