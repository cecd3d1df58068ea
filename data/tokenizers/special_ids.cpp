// SpecialIds' membership test, listing and error, and lmzoo's native ids.
#include "data/tokenizers/special_ids.h"

#include <algorithm>
#include <stdexcept>

namespace lmzoo {

bool SpecialIds::contains(int64_t id) const {
  if (id < 0) return false;
  for (int s : {pad, unk, bos, eos, mask, cls, sep}) {
    if (id == s) return true;
  }
  return std::find(sentinels.begin(), sentinels.end(), id) != sentinels.end();
}

std::vector<int> SpecialIds::ids() const {
  std::vector<int> out(sentinels.begin(), sentinels.end());
  for (int s : {pad, unk, bos, eos, mask, cls, sep}) out.push_back(s);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(out.begin(), std::lower_bound(out.begin(), out.end(), 0));
  return out;
}

int SpecialIds::require(int id, const std::string& token, const std::string& objective) const {
  if (id >= 0) return id;
  throw std::invalid_argument("objective " + objective + " needs a " + token + " token; the " +
                              (tokenizer.empty() ? std::string("given") : tokenizer) + " tokenizer has none");
}

SpecialIds native_special_ids() {
  SpecialIds s;
  s.pad = special::kPad;
  s.unk = special::kUnk;
  s.bos = special::kBos;
  s.eos = special::kEos;
  s.mask = special::kMask;
  s.cls = special::kCls;
  s.sep = special::kSep;
  for (int i = 0; i < special::kNumSentinels; ++i) s.sentinels.push_back(special::kSentinel0 + i);
  s.tokenizer = "sentencepiece";
  return s;
}

}  // namespace lmzoo
