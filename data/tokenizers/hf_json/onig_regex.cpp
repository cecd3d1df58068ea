// Oniguruma behind OnigRegex: one-time library initialisation for UTF-8, compile with the onig crate's settings,
// the find_iter loop of the onig crate (search from the last match's end, step over a repeated empty match).
// Leaves out: a cache of compiled patterns.
#include "data/tokenizers/hf_json/onig_regex.h"

#include <mutex>
#include <oniguruma.h>

namespace lmzoo::hf {

namespace {

void initialize_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return std::string(reinterpret_cast<const char*>(buf), n > 0 ? static_cast<size_t>(n) : 0);
}

struct RegionDeleter {
  void operator()(OnigRegion* r) const { onig_region_free(r, 1); }
};

// The character length of the UTF-8 sequence starting with byte C (1 for a stray continuation byte).
size_t utf8_length(unsigned char c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

}  // namespace

OnigRegex::OnigRegex(const std::string& pattern) : pattern_(pattern) {
  initialize_once();
  regex_t* reg = nullptr;
  OnigErrorInfo info;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int rc = onig_new(&reg, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_ONIGURUMA,
                          &info);
  if (rc != ONIG_NORMAL) throw RegexError(onig_message(rc, &info));
  regex_ = reg;
}

OnigRegex::~OnigRegex() {
  if (regex_) onig_free(static_cast<regex_t*>(regex_));
}

std::vector<std::pair<size_t, size_t>> OnigRegex::find_all(std::string_view text) const {
  auto* reg = static_cast<regex_t*>(regex_);
  std::unique_ptr<OnigRegion, RegionDeleter> region(onig_region_new());
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = str + text.size();
  std::vector<std::pair<size_t, size_t>> out;
  size_t from = 0;
  bool matched_before = false;
  size_t last_match_end = 0;
  while (from <= text.size()) {
    onig_region_clear(region.get());
    const int at = onig_search(reg, str, end, str + from, end, region.get(), ONIG_OPTION_NONE);
    if (at == ONIG_MISMATCH) break;
    if (at < 0) throw RegexError("regex '" + pattern_ + "': " + onig_message(at, nullptr));
    const auto b = static_cast<size_t>(region->beg[0]), e = static_cast<size_t>(region->end[0]);
    if (b == e && matched_before && last_match_end == e) {  // no empty match right after the last match
      from += from < text.size() ? utf8_length(static_cast<unsigned char>(text[from])) : 1;
      continue;
    }
    from = e;
    matched_before = true;
    last_match_end = e;
    out.emplace_back(b, e);
  }
  return out;
}

bool OnigRegex::full_match(std::string_view text) const {
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const int n = onig_match(static_cast<regex_t*>(regex_), str, str + text.size(), str, nullptr, ONIG_OPTION_NONE);
  if (n < 0 && n != ONIG_MISMATCH) throw RegexError("regex '" + pattern_ + "': " + onig_message(n, nullptr));
  return n == static_cast<int>(text.size());
}

}  // namespace lmzoo::hf
