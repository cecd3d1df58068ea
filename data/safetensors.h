// safetensors checkpoints: a memory-mapped reader that validates the whole file before handing out a tensor, a
// durable writer, and sharded directories (model.safetensors.index.json). Leaves out: big-endian hosts, dtypes
// outside F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL (F8_*, U16-U64, complex), and zero-copy views into the mapping.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace lmzoo {

// The one exception type of this file's functions; its message is one line naming the file and the cause, e.g.
// "m.safetensors is not a valid safetensors file: tensor 'w' has 12 bytes for shape [2, 3] of F32 (24 expected)".
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The header's description of one tensor.
struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype_name;  // "F32", "BF16", ...
  torch::ScalarType dtype = torch::kFloat;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets [begin, end) in the data region (after the header)
  uint64_t end = 0;
};

// The header length prefix may not exceed this (as the reference implementation).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// A safetensors file mapped read-only. open() validates everything (header length, JSON, every entry, and that
// the tensors' byte ranges tile the data region exactly), so tensor() never reads outside the file. Copies share
// the mapping, which lives until the last copy goes. (A file truncated by someone else while mapped can still
// raise SIGBUS: mmap's contract, not a format error.)
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  // The tensor names in the order their bytes lie in the file (zero-byte tensors in header order among equals).
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const SafetensorsTensorInfo& info(const std::string& name) const;  // throws for an unknown name
  torch::ScalarType dtype(const std::string& name) const { return info(name).dtype; }
  const std::vector<int64_t>& shape(const std::string& name) const { return info(name).shape; }
  // A CPU tensor of the stored dtype and shape that owns a copy of the bytes (it outlives this object).
  torch::Tensor tensor(const std::string& name) const;
  // The "__metadata__" object (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t header_bytes() const { return header_bytes_; }  // N of the length prefix
  uint64_t data_bytes() const { return file_bytes_ - 8 - header_bytes_; }

 private:
  SafetensorsFile() = default;
  void parse_header();
  void check_layout();

  std::string path_;
  std::shared_ptr<const unsigned char> map_;  // the whole file; munmap()ed by the deleter
  uint64_t file_bytes_ = 0;
  uint64_t header_bytes_ = 0;
  std::vector<SafetensorsTensorInfo> infos_;  // in header order
  std::vector<std::string> names_;            // file order
  std::map<std::string, size_t> index_;       // name -> infos_ index
  std::map<std::string, std::string> metadata_;
};

// Writes TENSORS in the given order (each moved to the CPU and made contiguous; names unique, not "__metadata__")
// and METADATA (omitted when empty) to PATH: header padded with spaces to a multiple of 8 bytes, data packed.
// Durable: written and fsynced as a hidden sibling ".NAME.tmp-PID-N", renamed over PATH, the directory fsynced; on
// any failure (ENOSPC, EFBIG, an unsupported dtype) PATH is untouched, no sibling is left, and SafetensorsError
// says why in one line.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Every tensor of a Hugging Face style directory: DIR/model.safetensors, or where that is absent the shards named
// by DIR/model.safetensors.index.json ({"metadata": {...}, "weight_map": {tensor: file}}). Refuses a shard name
// that is not a plain file name in DIR, a missing shard, a tensor the weight_map places in a shard that lacks it,
// a tensor in two shards, and a shard tensor the weight_map does not list.
std::map<std::string, torch::Tensor> load_safetensors_dir(const std::string& dir);

}  // namespace lmzoo
