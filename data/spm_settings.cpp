// Reads SpmSettings from a serialized sentencepiece.ModelProto: trainer_spec (2) and normalizer_spec (3), each
// a length-delimited message of varint and length-delimited fields (field numbers of sentencepiece_model.proto).
#include "data/spm_settings.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string_view>

namespace lmzoo {

namespace {

constexpr int kTrainerSpec = 2, kNormalizerSpec = 3;
constexpr int kModelType = 3, kSplitByWhitespace = 22, kTreatWhitespaceAsSuffix = 24;
constexpr int kName = 1, kCharsmap = 2, kAddDummyPrefix = 3, kRemoveExtraWhitespaces = 4, kEscapeWhitespaces = 5;

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}

  // Calls VARINT(field, value) or BYTES(field, bytes) for each field of the message; skips fixed-width ones.
  void each(const std::function<void(int, uint64_t)>& varint,
            const std::function<void(int, std::string_view)>& bytes) {
    while (pos_ < data_.size()) {
      const uint64_t key = read_varint();
      const int field = static_cast<int>(key >> 3);
      switch (key & 7) {
        case 0: varint(field, read_varint()); break;
        case 1: skip(8); break;
        case 2: {
          const uint64_t n = read_varint();
          if (n > data_.size() - pos_) fail();
          bytes(field, data_.substr(pos_, n));
          pos_ += n;
          break;
        }
        case 5: skip(4); break;
        default: fail();
      }
    }
  }

 private:
  [[noreturn]] static void fail() { throw std::runtime_error("not a SentencePiece model file (malformed protobuf)"); }
  void skip(size_t n) {
    if (n > data_.size() - pos_) fail();
    pos_ += n;
  }
  uint64_t read_varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail();
      const auto byte = static_cast<unsigned char>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail();
  }

  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

SpmSettings read_spm_settings(const std::string& model_proto) {
  SpmSettings s;
  const auto no_bytes = [](int, std::string_view) {};
  const auto trainer = [&](std::string_view spec) {
    WireReader(spec).each(
        [&](int field, uint64_t v) {
          if (field == kModelType) s.model_type = static_cast<SpmSettings::ModelType>(v);
          if (field == kSplitByWhitespace) s.split_by_whitespace = v != 0;
          if (field == kTreatWhitespaceAsSuffix) s.treat_whitespace_as_suffix = v != 0;
        },
        no_bytes);
  };
  const auto normalizer = [&](std::string_view spec) {
    WireReader(spec).each(
        [&](int field, uint64_t v) {
          if (field == kAddDummyPrefix) s.add_dummy_prefix = v != 0;
          if (field == kRemoveExtraWhitespaces) s.remove_extra_whitespaces = v != 0;
          if (field == kEscapeWhitespaces) s.escape_whitespaces = v != 0;
        },
        [&](int field, std::string_view bytes) {
          if (field == kName) s.normalizer_name = std::string(bytes);
          if (field == kCharsmap) s.has_charsmap = !bytes.empty();
        });
  };
  WireReader(model_proto).each([](int, uint64_t) {},
                               [&](int field, std::string_view bytes) {
                                 if (field == kTrainerSpec) trainer(bytes);
                                 if (field == kNormalizerSpec) normalizer(bytes);
                               });
  return s;
}

}  // namespace lmzoo
