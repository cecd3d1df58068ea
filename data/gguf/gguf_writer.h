// Writes a GGUF v3 file: header, metadata, tensor infos, then each tensor's bytes at a 32-byte aligned offset,
// into a hidden sibling that is fsynced and renamed over the target (base/durable_io.h): a full disk or a crash
// leaves the target as it was. Leaves out: what the keys and tensors mean (models/gguf_architecture.h).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "data/gguf/gguf_format.h"

namespace lmzoo {

class GgufWriter {
 public:
  void add(const std::string& key, GgufValue value);
  // Stores X (any float dtype) as TYPE: f32/f16/bf16 converted, q8_0 quantized (its last dimension a multiple of 32).
  void add_tensor(const std::string& name, const torch::Tensor& x, GgufTensorType type);
  // The whole file's bytes (tests, and the writer itself).
  std::string header_bytes() const;  // everything before the data section, padded to the alignment
  void write(const std::string& path) const;
  const GgufMetadata& metadata() const { return metadata_; }

 private:
  struct Tensor {
    GgufTensorInfo info;
    std::string bytes;
  };
  GgufMetadata metadata_;
  std::vector<Tensor> tensors_;
  uint64_t data_size_ = 0;
};

}  // namespace lmzoo
