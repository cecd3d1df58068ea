// A compiled Oniguruma regex (RAII) with the settings of the Rust onig crate's Regex::new, which the Hugging Face
// tokenizers use: UTF-8, ONIG_SYNTAX_ONIGURUMA, no options. Leaves out: captures, replacement, other encodings.
#pragma once
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lmzoo::hf {

// A pattern Oniguruma refuses; what() is Oniguruma's own message.
struct RegexError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OnigRegex {
 public:
  // Compiles PATTERN (UTF-8); throws RegexError with Oniguruma's message if it is not a valid pattern.
  explicit OnigRegex(const std::string& pattern);
  ~OnigRegex();
  OnigRegex(const OnigRegex&) = delete;
  OnigRegex& operator=(const OnigRegex&) = delete;

  // Every match in TEXT (valid UTF-8) as [begin, end) byte offsets, left to right, as the onig crate's find_iter
  // gives them: each search starts where the last match ended; an empty match right at the end of the previous
  // match is skipped by moving one character on. Safe to call from several threads at once.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // True if the whole of TEXT matches.
  bool full_match(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* regex_ = nullptr;  // OnigRegex (regex_t*), kept out of this header
};

}  // namespace lmzoo::hf
