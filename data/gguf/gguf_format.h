// GGUF v3 (ggml's model file, as llama.cpp reads it): the value and tensor type codes, the constants and the plain
// structs a file is made of. Leaves out: reading and writing bytes (gguf_reader.h, gguf_writer.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/enum_table.h"

namespace lmzoo {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kGgufAlignment = 32;      // general.alignment's default, and what lmzoo writes
constexpr int64_t kQ8Block = 32;             // weights per q8_0 block
constexpr int64_t kQ8BlockBytes = 2 + 32;    // fp16 scale d, then 32 int8

// A metadata value's type code (gguf_type in ggml's gguf.h).
enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6, kBool = 7,
  kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

// The tensor types lmzoo writes and reads (ggml_type codes); any other code in a file is refused by number.
enum class GgufTensorType : uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30 };

template <>
struct EnumTable<GgufTensorType> {
  static constexpr const char* what = "GGUF tensor type";
  static constexpr EnumEntry<GgufTensorType> entries[] = {
      {GgufTensorType::kF32, "f32", "32-bit floats (exact)"},
      {GgufTensorType::kF16, "f16", "16-bit floats; norms and biases stay f32"},
      {GgufTensorType::kQ8_0, "q8_0", "8-bit blocks of 32 with an fp16 scale (2-D weights); norms and biases stay f32"},
      {GgufTensorType::kBF16, "bf16", "bfloat16; norms and biases stay f32"},
  };
};

// general.file_type (llama_ftype) for a file whose matrices are of TYPE.
uint32_t gguf_file_type(GgufTensorType type);

// Bytes of a tensor of ELEMENTS values of TYPE (q8_0: ELEMENTS a multiple of 32).
uint64_t gguf_tensor_bytes(GgufTensorType type, uint64_t elements);

// One metadata value: a scalar of TYPE, or an array of ELEMENT values (strings, integers or floats).
struct GgufValue {
  GgufValueType type = GgufValueType::kUint32;
  GgufValueType element = GgufValueType::kUint32;  // arrays only
  uint64_t u = 0;       // unsigned integers and bool
  int64_t i = 0;        // signed integers
  double f = 0;         // floats
  std::string s;        // a string
  std::vector<std::string> strings;  // an array of strings
  std::vector<double> numbers;       // an array of numbers (any numeric element type, bool included)

  static GgufValue u32(uint32_t v);
  static GgufValue i32(int32_t v);
  static GgufValue u64(uint64_t v);
  static GgufValue f32(float v);
  static GgufValue boolean(bool v);
  static GgufValue string(std::string v);
  static GgufValue string_array(std::vector<std::string> v);
  static GgufValue number_array(GgufValueType element, std::vector<double> v);
  // The value as an integer (any integer type or bool) or a number (any numeric type); throws std::runtime_error
  // naming KEY otherwise.
  int64_t as_int(const std::string& key) const;
  double as_number(const std::string& key) const;
  const std::string& as_string(const std::string& key) const;
};

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;  // in file order

// A tensor as the file describes it: shape in PyTorch order (outermost first; the file stores it reversed, ne[0]
// innermost), offset relative to the data section.
struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  GgufTensorType type = GgufTensorType::kF32;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

}  // namespace lmzoo
