// Reads a GGUF v2/v3 file (memory-mapped) and validates it before anything is used: magic, version, counts that fit
// the file, strings and arrays inside it, known value and tensor types, tensors inside the data section and aligned.
// Leaves out: what the keys and tensors mean (models/gguf_architecture.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/gguf/gguf_format.h"

namespace lmzoo {

// A damaged or unsupported file: one line naming the file and what is wrong.
class GgufFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GgufFile {
 public:
  // Throws GgufFormatError ("PATH: not a GGUF file (magic ...)", "...: tensor 'x' ends past the data section").
  static GgufFile open(const std::string& path);
  // The same from bytes in memory (tests).
  static GgufFile parse(std::string bytes, const std::string& name);

  uint32_t version() const { return version_; }
  const GgufMetadata& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;  // nullptr when absent
  const GgufValue& get(const std::string& key) const;   // throws GgufFormatError naming a missing key
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // A tensor's values as float32 on the CPU in its PyTorch shape (f16/bf16 widened, q8_0 dequantized).
  torch::Tensor tensor(const GgufTensorInfo& info) const;
  const std::string& name() const { return name_; }

 private:
  struct Bytes;
  std::shared_ptr<Bytes> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> tensors_;
  uint64_t data_offset_ = 0;
  void read();
};

}  // namespace lmzoo
