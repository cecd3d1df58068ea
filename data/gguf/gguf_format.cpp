// GGUF type codes and metadata values (gguf_format.h). Leaves out: the file's bytes.
#include "data/gguf/gguf_format.h"

#include <stdexcept>

namespace lmzoo {

uint32_t gguf_file_type(GgufTensorType type) {
  switch (type) {
    case GgufTensorType::kF32: return 0;   // LLAMA_FTYPE_ALL_F32
    case GgufTensorType::kF16: return 1;   // LLAMA_FTYPE_MOSTLY_F16
    case GgufTensorType::kQ8_0: return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    case GgufTensorType::kBF16: return 32; // LLAMA_FTYPE_MOSTLY_BF16
  }
  return 0;
}

uint64_t gguf_tensor_bytes(GgufTensorType type, uint64_t elements) {
  switch (type) {
    case GgufTensorType::kF32: return elements * 4;
    case GgufTensorType::kF16:
    case GgufTensorType::kBF16: return elements * 2;
    case GgufTensorType::kQ8_0: return elements / kQ8Block * kQ8BlockBytes;
  }
  return 0;
}

GgufValue GgufValue::u32(uint32_t v) {
  GgufValue x;
  x.type = GgufValueType::kUint32;
  x.u = v;
  return x;
}
GgufValue GgufValue::i32(int32_t v) {
  GgufValue x;
  x.type = GgufValueType::kInt32;
  x.i = v;
  return x;
}
GgufValue GgufValue::u64(uint64_t v) {
  GgufValue x;
  x.type = GgufValueType::kUint64;
  x.u = v;
  return x;
}
GgufValue GgufValue::f32(float v) {
  GgufValue x;
  x.type = GgufValueType::kFloat32;
  x.f = v;
  return x;
}
GgufValue GgufValue::boolean(bool v) {
  GgufValue x;
  x.type = GgufValueType::kBool;
  x.u = v ? 1 : 0;
  return x;
}
GgufValue GgufValue::string(std::string v) {
  GgufValue x;
  x.type = GgufValueType::kString;
  x.s = std::move(v);
  return x;
}
GgufValue GgufValue::string_array(std::vector<std::string> v) {
  GgufValue x;
  x.type = GgufValueType::kArray;
  x.element = GgufValueType::kString;
  x.strings = std::move(v);
  return x;
}
GgufValue GgufValue::number_array(GgufValueType element, std::vector<double> v) {
  GgufValue x;
  x.type = GgufValueType::kArray;
  x.element = element;
  x.numbers = std::move(v);
  return x;
}

int64_t GgufValue::as_int(const std::string& key) const {
  switch (type) {
    case GgufValueType::kUint8: case GgufValueType::kUint16: case GgufValueType::kUint32:
    case GgufValueType::kUint64: case GgufValueType::kBool: return static_cast<int64_t>(u);
    case GgufValueType::kInt8: case GgufValueType::kInt16: case GgufValueType::kInt32:
    case GgufValueType::kInt64: return i;
    default: throw std::runtime_error("GGUF key " + key + " is not an integer");
  }
}

double GgufValue::as_number(const std::string& key) const {
  if (type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64) return f;
  return static_cast<double>(as_int(key));
}

const std::string& GgufValue::as_string(const std::string& key) const {
  if (type != GgufValueType::kString) throw std::runtime_error("GGUF key " + key + " is not a string");
  return s;
}

}  // namespace lmzoo
