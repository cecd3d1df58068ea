// GGUF reader (gguf_reader.h): every count, length and offset is checked against the file's size before it is used.
// Leaves out: big-endian files.
#include "data/gguf/gguf_reader.h"

#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/gguf/q8_0.h"

namespace lmzoo {

struct GgufFile::Bytes {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  std::string owned;       // parse()
  void* map = nullptr;     // open()
  ~Bytes() {
    if (map != nullptr) munmap(map, size);
  }
};

namespace {

class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& name) : data_(data), size_(size), name_(name) {}
  [[noreturn]] void fail(const std::string& what) const { throw GgufFormatError(name_ + ": " + what); }
  void need(uint64_t n, const char* what) const {
    if (n > size_ - pos_) fail(std::string("truncated: ") + what + " at byte " + std::to_string(pos_) + " runs past the end of the file (" + std::to_string(size_) + " bytes)");
  }
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const uint64_t n = get<uint64_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& name_;
};

uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16: case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64: case GgufValueType::kInt64: case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString: case GgufValueType::kArray: return 0;
  }
  return 0;
}

GgufValueType value_type(Cursor& c, const std::string& key) {
  const uint32_t t = c.get<uint32_t>("a value type");
  if (t > static_cast<uint32_t>(GgufValueType::kFloat64)) c.fail("key " + key + " has unknown value type " + std::to_string(t));
  return static_cast<GgufValueType>(t);
}

double read_number(Cursor& c, GgufValueType t, GgufValue* into) {
  switch (t) {
    case GgufValueType::kUint8: return into->u = c.get<uint8_t>("a value");
    case GgufValueType::kInt8: return static_cast<double>(into->i = c.get<int8_t>("a value"));
    case GgufValueType::kUint16: return into->u = c.get<uint16_t>("a value");
    case GgufValueType::kInt16: return static_cast<double>(into->i = c.get<int16_t>("a value"));
    case GgufValueType::kUint32: return into->u = c.get<uint32_t>("a value");
    case GgufValueType::kInt32: return static_cast<double>(into->i = c.get<int32_t>("a value"));
    case GgufValueType::kFloat32: return into->f = c.get<float>("a value");
    case GgufValueType::kBool: return into->u = c.get<uint8_t>("a value") != 0;
    case GgufValueType::kUint64: return static_cast<double>(into->u = c.get<uint64_t>("a value"));
    case GgufValueType::kInt64: return static_cast<double>(into->i = c.get<int64_t>("a value"));
    case GgufValueType::kFloat64: return into->f = c.get<double>("a value");
    case GgufValueType::kString: case GgufValueType::kArray: break;
  }
  return 0;
}

GgufValue read_value(Cursor& c, const std::string& key) {
  GgufValue v;
  v.type = value_type(c, key);
  if (v.type == GgufValueType::kString) {
    v.s = c.string("a string value");
  } else if (v.type == GgufValueType::kArray) {
    v.element = value_type(c, key);
    if (v.element == GgufValueType::kArray) c.fail("key " + key + " is an array of arrays (not supported)");
    const uint64_t n = c.get<uint64_t>("an array length");
    const uint64_t least = v.element == GgufValueType::kString ? 8 : scalar_size(v.element);
    if (n > c.left() / least) c.fail("key " + key + " claims " + std::to_string(n) + " elements, more than the file holds");
    if (v.element == GgufValueType::kString) {
      v.strings.reserve(n);
      for (uint64_t j = 0; j < n; ++j) v.strings.push_back(c.string("a string in an array"));
    } else {
      v.numbers.reserve(n);
      GgufValue scratch;
      for (uint64_t j = 0; j < n; ++j) v.numbers.push_back(read_number(c, v.element, &scratch));
    }
  } else {
    read_number(c, v.type, &v);
  }
  return v;
}

bool known_tensor_type(uint32_t t) {
  for (const auto& e : EnumTable<GgufTensorType>::entries) {
    if (static_cast<uint32_t>(e.value) == t) return true;
  }
  return false;
}

}  // namespace

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f;
  f.name_ = path;
  f.bytes_ = std::make_shared<Bytes>();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("cannot read " + path + ": not a regular file");
  }
  f.bytes_->size = static_cast<uint64_t>(st.st_size);
  if (f.bytes_->size > 0) {
    void* map = mmap(nullptr, f.bytes_->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      throw std::runtime_error("cannot map " + path + ": " + std::strerror(errno));
    }
    f.bytes_->map = map;
    f.bytes_->data = static_cast<const uint8_t*>(map);
  }
  ::close(fd);
  f.read();
  return f;
}

GgufFile GgufFile::parse(std::string bytes, const std::string& name) {
  GgufFile f;
  f.name_ = name;
  f.bytes_ = std::make_shared<Bytes>();
  f.bytes_->owned = std::move(bytes);
  f.bytes_->data = reinterpret_cast<const uint8_t*>(f.bytes_->owned.data());
  f.bytes_->size = f.bytes_->owned.size();
  f.read();
  return f;
}

void GgufFile::read() {
  Cursor c(bytes_->data, bytes_->size, name_);
  if (bytes_->size < 4 || c.get<uint32_t>("the magic") != kGgufMagic) c.fail("not a GGUF file (its first 4 bytes are not \"GGUF\")");
  version_ = c.get<uint32_t>("the version");
  if (version_ != 2 && version_ != 3) c.fail("GGUF version " + std::to_string(version_) + " is not supported (2 or 3)");
  const uint64_t n_tensors = c.get<uint64_t>("the tensor count");
  const uint64_t n_kv = c.get<uint64_t>("the metadata count");
  // A key-value pair takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 8 + 4 + 8.
  if (n_kv > c.left() / 13) c.fail("metadata count " + std::to_string(n_kv) + " is more than the file can hold");
  if (n_tensors > c.left() / 32) c.fail("tensor count " + std::to_string(n_tensors) + " is more than the file can hold");
  std::set<std::string> keys;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.string("a metadata key");
    if (!keys.insert(key).second) c.fail("metadata key " + key + " appears twice");
    GgufValue value = read_value(c, key);
    metadata_.emplace_back(std::move(key), std::move(value));
  }
  uint64_t alignment = kGgufAlignment;
  if (const GgufValue* a = find("general.alignment")) {
    const int64_t v = a->as_int("general.alignment");
    if (v <= 0 || (v & (v - 1)) != 0 || v > 65536) c.fail("general.alignment " + std::to_string(v) + " is not a power of two");
    alignment = static_cast<uint64_t>(v);
  }
  std::set<std::string> names;
  for (uint64_t t = 0; t < n_tensors; ++t) {
    GgufTensorInfo info;
    info.name = c.string("a tensor name");
    if (!names.insert(info.name).second) c.fail("tensor " + info.name + " appears twice");
    const uint32_t n_dims = c.get<uint32_t>("a tensor's dimension count");
    if (n_dims == 0 || n_dims > 4) c.fail("tensor " + info.name + " has " + std::to_string(n_dims) + " dimensions (1 to 4)");
    uint64_t elements = 1;
    info.shape.assign(n_dims, 0);
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = c.get<uint64_t>("a tensor dimension");
      if (ne == 0 || ne > (uint64_t{1} << 40) || elements > (uint64_t{1} << 62) / ne) {
        c.fail("tensor " + info.name + " has dimension " + std::to_string(ne) + " (empty or too large)");
      }
      elements *= ne;
      info.shape[n_dims - 1 - d] = static_cast<int64_t>(ne);
    }
    const uint32_t type = c.get<uint32_t>("a tensor type");
    if (!known_tensor_type(type)) {
      c.fail("tensor " + info.name + " has ggml type " + std::to_string(type) + " (lmzoo reads f32, f16, bf16 and q8_0)");
    }
    info.type = static_cast<GgufTensorType>(type);
    if (info.type == GgufTensorType::kQ8_0 && info.shape.back() % kQ8Block != 0) {
      c.fail("tensor " + info.name + " is q8_0 with rows of " + std::to_string(info.shape.back()) + " values (not a multiple of 32)");
    }
    info.offset = c.get<uint64_t>("a tensor offset");
    if (info.offset % alignment != 0) c.fail("tensor " + info.name + " is not aligned to " + std::to_string(alignment) + " bytes");
    info.bytes = gguf_tensor_bytes(info.type, elements);
    tensors_.push_back(std::move(info));
  }
  data_offset_ = (c.pos() + alignment - 1) / alignment * alignment;
  const uint64_t data_size = bytes_->size >= data_offset_ ? bytes_->size - data_offset_ : 0;
  for (const auto& info : tensors_) {
    if (info.offset > data_size || info.bytes > data_size - info.offset) {
      c.fail("tensor " + info.name + " (bytes " + std::to_string(info.offset) + " to " + std::to_string(info.offset + info.bytes) +
             ") lies outside the data section of " + std::to_string(data_size) + " bytes (truncated file?)");
    }
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : metadata_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const GgufValue& GgufFile::get(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) throw GgufFormatError(name_ + ": metadata key " + key + " is missing");
  return *v;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

torch::Tensor GgufFile::tensor(const GgufTensorInfo& info) const {
  const uint8_t* p = bytes_->data + data_offset_ + info.offset;
  int64_t n = 1;
  for (int64_t d : info.shape) n *= d;
  torch::Tensor flat;
  switch (info.type) {
    case GgufTensorType::kF32:
      flat = torch::empty({n}, torch::kFloat32);
      std::memcpy(flat.data_ptr(), p, info.bytes);
      break;
    case GgufTensorType::kF16:
    case GgufTensorType::kBF16:
      flat = torch::empty({n}, info.type == GgufTensorType::kF16 ? torch::kHalf : torch::kBFloat16);
      std::memcpy(flat.data_ptr(), p, info.bytes);
      flat = flat.to(torch::kFloat32);
      break;
    case GgufTensorType::kQ8_0: flat = dequantize_q8_0(p, n); break;
  }
  return flat.reshape(info.shape);
}

}  // namespace lmzoo
