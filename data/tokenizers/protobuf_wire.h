// Reading the protobuf wire format by hand (varint, 64-bit, length-delimited and 32-bit fields), enough for
// SentencePiece's model proto. Leaves out: groups, packed repeated fields, any schema.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string_view>

namespace lmzoo {

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}

  using VarintField = std::function<void(int, uint64_t)>;
  using BytesField = std::function<void(int, std::string_view)>;
  using Fixed32Field = std::function<void(int, uint32_t)>;

  // Calls VARINT(field, value), BYTES(field, bytes) or FIXED32(field, bits) for each field of the message, in
  // order; skips 64-bit ones. Throws std::runtime_error for a malformed message.
  void each(const VarintField& varint, const BytesField& bytes, const Fixed32Field& fixed32 = nullptr) {
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
        case 5: {
          if (4 > data_.size() - pos_) fail();
          uint32_t bits = 0;
          for (int i = 3; i >= 0; --i) bits = (bits << 8) | static_cast<unsigned char>(data_[pos_ + size_t(i)]);
          pos_ += 4;
          if (fixed32) fixed32(field, bits);
          break;
        }
        default: fail();
      }
    }
  }

  // The float whose IEEE-754 bits a fixed32 field holds.
  static float as_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
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

}  // namespace lmzoo
