// GGUF v3 writer (gguf_writer.h). Leaves out: big-endian files and splitting into shards.
#include "data/gguf/gguf_writer.h"

#include <cstring>
#include <stdexcept>

#include "base/durable_io.h"
#include "data/gguf/q8_0.h"

namespace lmzoo {

namespace {

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_number(std::string& out, GgufValueType type, double v) {
  switch (type) {
    case GgufValueType::kUint8: put<uint8_t>(out, static_cast<uint8_t>(v)); break;
    case GgufValueType::kInt8: put<int8_t>(out, static_cast<int8_t>(v)); break;
    case GgufValueType::kUint16: put<uint16_t>(out, static_cast<uint16_t>(v)); break;
    case GgufValueType::kInt16: put<int16_t>(out, static_cast<int16_t>(v)); break;
    case GgufValueType::kUint32: put<uint32_t>(out, static_cast<uint32_t>(v)); break;
    case GgufValueType::kInt32: put<int32_t>(out, static_cast<int32_t>(v)); break;
    case GgufValueType::kFloat32: put<float>(out, static_cast<float>(v)); break;
    case GgufValueType::kBool: put<uint8_t>(out, v != 0 ? 1 : 0); break;
    case GgufValueType::kUint64: put<uint64_t>(out, static_cast<uint64_t>(v)); break;
    case GgufValueType::kInt64: put<int64_t>(out, static_cast<int64_t>(v)); break;
    case GgufValueType::kFloat64: put<double>(out, v); break;
    case GgufValueType::kString:
    case GgufValueType::kArray: throw std::invalid_argument("GGUF: not a numeric type");
  }
}

void put_value(std::string& out, const GgufValue& v) {
  put<uint32_t>(out, static_cast<uint32_t>(v.type));
  switch (v.type) {
    case GgufValueType::kString: put_string(out, v.s); return;
    case GgufValueType::kArray:
      put<uint32_t>(out, static_cast<uint32_t>(v.element));
      if (v.element == GgufValueType::kString) {
        put<uint64_t>(out, v.strings.size());
        for (const auto& s : v.strings) put_string(out, s);
      } else {
        put<uint64_t>(out, v.numbers.size());
        for (double x : v.numbers) put_number(out, v.element, x);
      }
      return;
    case GgufValueType::kFloat32: case GgufValueType::kFloat64: put_number(out, v.type, v.f); return;
    case GgufValueType::kInt64: put<int64_t>(out, v.i); return;
    case GgufValueType::kInt8: case GgufValueType::kInt16: case GgufValueType::kInt32:
      put_number(out, v.type, static_cast<double>(v.i));
      return;
    case GgufValueType::kUint64: put<uint64_t>(out, v.u); return;
    default: put_number(out, v.type, static_cast<double>(v.u)); return;
  }
}

uint64_t aligned(uint64_t n) { return (n + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment; }

std::string tensor_bytes(const torch::Tensor& x, GgufTensorType type) {
  torch::Tensor t;
  switch (type) {
    case GgufTensorType::kF32: t = x.to(torch::kFloat32).contiguous(); break;
    case GgufTensorType::kF16: t = x.to(torch::kFloat32).to(torch::kHalf).contiguous(); break;
    case GgufTensorType::kBF16: t = x.to(torch::kFloat32).to(torch::kBFloat16).contiguous(); break;
    case GgufTensorType::kQ8_0: return quantize_q8_0(x);
  }
  return std::string(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
}

}  // namespace

void GgufWriter::add(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, const torch::Tensor& x, GgufTensorType type) {
  if (type == GgufTensorType::kQ8_0 && (x.dim() == 0 || x.size(-1) % kQ8Block != 0)) {
    throw std::invalid_argument("tensor " + name + ": q8_0 needs rows of a multiple of 32 values");
  }
  Tensor t;
  t.info.name = name;
  t.info.shape = x.sizes().vec();
  t.info.type = type;
  t.info.offset = data_size_;
  t.bytes = tensor_bytes(x, type);
  t.info.bytes = t.bytes.size();
  data_size_ = aligned(data_size_ + t.bytes.size());
  tensors_.push_back(std::move(t));
}

std::string GgufWriter::header_bytes() const {
  std::string out;
  put<uint32_t>(out, kGgufMagic);
  put<uint32_t>(out, kGgufVersion);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(out, key);
    put_value(out, value);
  }
  for (const auto& t : tensors_) {
    put_string(out, t.info.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.info.shape.size()));
    for (auto d = t.info.shape.rbegin(); d != t.info.shape.rend(); ++d) put<uint64_t>(out, static_cast<uint64_t>(*d));
    put<uint32_t>(out, static_cast<uint32_t>(t.info.type));
    put<uint64_t>(out, t.info.offset);
  }
  out.resize(aligned(out.size()), '\0');
  return out;
}

void GgufWriter::write(const std::string& path) const {
  replace_file_durably(path, [this](DurableFile& file) {
    const std::string header = header_bytes();
    file.write(header.data(), header.size());
    static const char zeros[kGgufAlignment] = {};
    for (const auto& t : tensors_) {
      file.write(t.bytes.data(), t.bytes.size());
      const uint64_t pad = aligned(t.bytes.size()) - t.bytes.size();
      if (pad > 0) file.write(zeros, pad);
    }
  });
}

}  // namespace lmzoo
