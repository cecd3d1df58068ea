// How the tokenizers cut a piece of text: the pattern's matches as a list of (range, is_match) covering the text
// (find_matches), and the delimiter behaviours that turn them into pieces. Leaves out: offsets into the original.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_table.h"
#include "data/tokenizers/hf_json/onig_regex.h"

namespace lmzoo::hf {

// tokenizer.json's SplitDelimiterBehavior: what becomes of each match (the delimiter).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// [begin, end) byte range of a text, and whether the pattern matched it.
struct MatchRange {
  size_t begin, end;
  bool is_match;
};

// The regex's matches in TEXT with the text between them, in order, covering TEXT; empty matches are kept (they
// still cut). An empty TEXT gives one non-match (0, 0). As the Rust library's Pattern for its onig regex.
std::vector<MatchRange> find_matches(const OnigRegex& regex, std::string_view text);
// One match per code point for which IS_DELIM holds, and the runs between them (Pattern for Fn(char) -> bool).
std::vector<MatchRange> find_matches(std::string_view text, const std::function<bool(char32_t)>& is_delim);
// Every range with is_match flipped (Split's invert).
void invert_matches(std::vector<MatchRange>& matches);

// The byte ranges of the pieces BEHAVIOR keeps (empty ones included: callers drop them).
std::vector<std::pair<size_t, size_t>> split_ranges(std::vector<MatchRange> matches, SplitBehavior behavior);

}  // namespace lmzoo::hf

namespace lmzoo {
template <>
struct EnumTable<hf::SplitBehavior> {
  static constexpr const char* what = "split behavior";
  static constexpr EnumEntry<hf::SplitBehavior> entries[] = {
      {hf::SplitBehavior::Removed, "Removed", "drop the matches"},
      {hf::SplitBehavior::Isolated, "Isolated", "each match a piece of its own"},
      {hf::SplitBehavior::MergedWithPrevious, "MergedWithPrevious", "a match joins the piece before it"},
      {hf::SplitBehavior::MergedWithNext, "MergedWithNext", "a match joins the piece after it"},
      {hf::SplitBehavior::Contiguous, "Contiguous", "consecutive matches form one piece"},
  };
};
}  // namespace lmzoo
