// The special-token ids of a tokenizer (pad, unk, bos, eos, mask, cls, sep, sentinels) and lmzoo's own fixed ones.
// Leaves out: which tokenizer has which (data/tokenizers/tokenizer.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmzoo {

// Fixed special-token ids of lmzoo's own (native) SentencePiece tokenizers.
namespace special {
constexpr int kPad = 0;
constexpr int kUnk = 1;
constexpr int kBos = 2;     // <s>
constexpr int kEos = 3;     // </s>, also the document separator in token streams
constexpr int kMask = 4;    // [MASK]
constexpr int kCls = 5;     // [CLS]
constexpr int kSep = 6;     // [SEP]
constexpr int kSentinel0 = 7;  // <extra_id_0>; <extra_id_i> = kSentinel0 + i
constexpr int kNumSentinels = 100;
constexpr int kNumSpecial = kSentinel0 + kNumSentinels;  // ids [0, 107) are special
}  // namespace special

struct SpecialIds {  // -1 where the tokenizer has none
  int pad = -1, unk = -1, bos = -1, eos = -1, mask = -1, cls = -1, sep = -1;
  std::vector<int> sentinels;  // sentinels[i] = id of <extra_id_i>; empty if none

  // True for any of the ids above (sentinels included).
  bool contains(int64_t id) const;
  // The distinct ids above (those >= 0), ascending.
  std::vector<int> ids() const;
  // The id an objective needs; throws std::invalid_argument "objective OBJECTIVE needs a TOKEN token; the
  // TOKENIZER tokenizer has none" when it is -1.
  int require(int id, const std::string& token, const std::string& objective) const;
  std::string tokenizer;  // the tokenizer kind's name, for messages ("sentencepiece", "gpt2-bpe", "wordpiece")
};

// The ids of lmzoo's native SentencePiece tokenizers (the constants above).
SpecialIds native_special_ids();

}  // namespace lmzoo
