// safetensors: the validating mmap reader, the durable writer and sharded directories. Leaves out big-endian hosts
// (refused at compile time), dtypes beyond the ten in kDtypes, and reading tensors in place from the mapping.
#include "data/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/durable_io.h"
#include "data/unicode/utf8.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian: a big-endian host would need byte swaps here");

namespace lmzoo {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // keeps the header's order

namespace {

struct Dtype {
  const char* name;
  torch::ScalarType type;
  uint64_t size;
};

const Dtype kDtypes[] = {{"F32", torch::kFloat, 4},  {"F16", torch::kHalf, 2}, {"BF16", torch::kBFloat16, 2},
                         {"F64", torch::kDouble, 8}, {"I64", torch::kLong, 8}, {"I32", torch::kInt, 4},
                         {"I16", torch::kShort, 2},  {"I8", torch::kChar, 1},  {"U8", torch::kByte, 1},
                         {"BOOL", torch::kBool, 1}};
const char kDtypeList[] = "F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL";
constexpr int kMaxJsonDepth = 32;  // a valid header nests 3 deep (root, entry, shape)
constexpr uint64_t kInt64Max = uint64_t(std::numeric_limits<int64_t>::max());

const Dtype* dtype_by_name(const std::string& name) {
  for (const Dtype& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const Dtype* dtype_by_type(torch::ScalarType type) {
  for (const Dtype& d : kDtypes) {
    if (type == d.type) return &d;
  }
  return nullptr;
}

// MESSAGE with control characters (a hostile name's newlines) written as \xNN, so that it stays one line.
std::string one_line(const std::string& message) {
  std::string out;
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    const char hex[] = "0123456789abcdef";
    out += "\\x";
    out += hex[u >> 4];
    out += hex[u & 15];
  }
  return out;
}

// 'NAME', cut to 120 bytes (at a UTF-8 character boundary).
std::string in_quotes(const std::string& name) {
  if (name.size() <= 120) return "'" + name + "'";
  size_t cut = 120;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return "'" + name.substr(0, cut) + "...'";
}

// A JSON value as written, cut to 60 bytes.
std::string brief(const Json& value) {
  const std::string text = value.dump();
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

[[noreturn]] void throw_error(const std::string& message) { throw SafetensorsError(one_line(message)); }

// Throws PREFIX + cause: the file and the subject a validation step is about.
struct Failure {
  std::string prefix;
  [[noreturn]] void operator()(const std::string& cause) const { throw_error(prefix + cause); }
};

Failure invalid_file(const std::string& path, const std::string& subject = "") {
  return Failure{path + " is not a valid safetensors file: " + subject};
}

struct JsonRefusal {
  std::string cause;
};

// TEXT as JSON, refusing what nlohmann would accept silently: a key twice in one object (it keeps the last) and
// nesting deeper than kMaxJsonDepth.
Json parse_strict_json(const std::string& text, const Failure& fail) {
  std::vector<std::set<std::string>> keys;  // the keys seen so far in each open object
  const Json::parser_callback_t check = [&keys](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) {
      if (depth >= kMaxJsonDepth) throw JsonRefusal{"nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
      if (event == Json::parse_event_t::object_start) keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second) {
      throw JsonRefusal{"has the key " + in_quotes(parsed.get<std::string>()) + " twice in one object"};
    }
    return true;
  };
  try {
    return Json::parse(text, check);
  } catch (const JsonRefusal& e) {
    fail(e.cause);
  } catch (const nlohmann::json::exception& e) {
    const std::string what = e.what();
    const size_t tag_end = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    fail("is not valid JSON (" + (tag_end == std::string::npos ? what : what.substr(tag_end + 2)) + ")");
  }
}

std::vector<int64_t> parse_shape(const Json& shape, const Failure& fail) {
  if (!shape.is_array()) fail("has a shape that is a JSON " + std::string(shape.type_name()) + ", not an array");
  std::vector<int64_t> sizes;
  for (const Json& size : shape) {
    if (!size.is_number_unsigned() || size.get<uint64_t>() > kInt64Max) {
      fail("has the shape entry " + brief(size) + ", not an integer in [0, 2^63)");
    }
    sizes.push_back(int64_t(size.get<uint64_t>()));
  }
  return sizes;
}

// The byte size of SHAPE of DTYPE; refuses one whose nonzero sizes multiply past int64 (torch's strides) or whose
// bytes overflow 64 bits.
uint64_t byte_size(const std::vector<int64_t>& shape, const Dtype& dtype, const Failure& fail) {
  uint64_t nonzero_product = 1;
  bool empty = false;
  for (const int64_t size : shape) {
    if (size == 0) {
      empty = true;
    } else if (nonzero_product > kInt64Max / uint64_t(size)) {
      fail("has shape " + shape_text(shape) + ", too many elements");
    } else {
      nonzero_product *= uint64_t(size);
    }
  }
  if (empty) return 0;
  if (nonzero_product > std::numeric_limits<uint64_t>::max() / dtype.size) {
    fail("has shape " + shape_text(shape) + " of " + dtype.name + ", whose byte size overflows 64 bits");
  }
  return nonzero_product * dtype.size;
}

SafetensorsTensorInfo parse_info(const std::string& path, const std::string& name, const Json& entry) {
  const Failure fail = invalid_file(path, "tensor " + in_quotes(name) + " ");
  if (!entry.is_object()) fail("is a JSON " + std::string(entry.type_name()) + ", not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) fail("has no \"" + std::string(field) + "\"");
  }
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets") {
      fail("has the unknown field " + in_quotes(it.key()));
    }
  }
  const Json& dtype_json = entry["dtype"];
  if (!dtype_json.is_string()) fail("has the dtype " + brief(dtype_json) + ", not a string");
  const Dtype* dtype = dtype_by_name(dtype_json.get<std::string>());
  if (dtype == nullptr) {
    fail("has the dtype " + in_quotes(dtype_json.get<std::string>()) + ", not one of " + kDtypeList);
  }
  SafetensorsTensorInfo info;
  info.name = name;
  info.dtype_name = dtype->name;
  info.dtype = dtype->type;
  info.shape = parse_shape(entry["shape"], fail);
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail("has the data_offsets " + brief(offsets) + ", not two non-negative integers");
  }
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  if (info.begin > info.end) fail("has the data_offsets " + brief(offsets) + ", which end before they begin");
  const uint64_t expected = byte_size(info.shape, *dtype, fail);
  if (info.end - info.begin != expected) {
    fail("has " + std::to_string(info.end - info.begin) + " bytes for shape " + shape_text(info.shape) + " of " +
         dtype->name + " (" + std::to_string(expected) + " expected)");
  }
  return info;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const Json& metadata) {
  const Failure fail = invalid_file(path, "__metadata__ ");
  if (!metadata.is_object()) fail("is a JSON " + std::string(metadata.type_name()) + ", not an object");
  std::map<std::string, std::string> out;
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    if (!it.value().is_string()) {
      fail("entry " + in_quotes(it.key()) + " is a JSON " + it.value().type_name() + ", not a string");
    }
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

// The whole file mapped read-only, its size in *BYTES (at least the 8 bytes of the length prefix).
std::shared_ptr<const unsigned char> map_file(const std::string& path, uint64_t* bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw_error("cannot open " + path + ": " + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_error("cannot open " + path + ": not a regular file");
  }
  *bytes = uint64_t(st.st_size);
  if (*bytes < 8) {
    ::close(fd);
    invalid_file(path)("the file has " + std::to_string(*bytes) + " bytes, fewer than the 8 of the header length");
  }
  void* p = ::mmap(nullptr, size_t(*bytes), PROT_READ, MAP_PRIVATE, fd, 0);
  const int error = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw_error("cannot memory-map " + path + ": " + std::strerror(error));
  const size_t length = size_t(*bytes);
  return std::shared_ptr<const unsigned char>(static_cast<const unsigned char*>(p), [length](const unsigned char* m) {
    ::munmap(const_cast<unsigned char*>(m), length);
  });
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  file.path_ = path;
  file.map_ = map_file(path, &file.file_bytes_);
  file.parse_header();
  file.check_layout();
  return file;
}

void SafetensorsFile::parse_header() {
  const Failure fail = invalid_file(path_);
  const unsigned char* bytes = map_.get();
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | bytes[i];
  if (length > kSafetensorsMaxHeaderBytes) {
    fail("the header length " + std::to_string(length) + " exceeds the cap of " +
         std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
  if (length > file_bytes_ - 8) {
    fail("the header length " + std::to_string(length) + " runs past the end of the file (" +
         std::to_string(file_bytes_ - 8) + " bytes follow the length)");
  }
  header_bytes_ = length;
  // A copy, so that the parser reads ordinary heap memory (and sanitizers see every byte it touches).
  const std::string text(reinterpret_cast<const char*>(bytes + 8), size_t(length));
  if (const size_t at = find_invalid_utf8(text); at != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", unsigned(static_cast<unsigned char>(text[at])));
    fail("the header is not UTF-8: invalid byte " + std::string(byte) + " at byte offset " + std::to_string(8 + at));
  }
  const Json header = parse_strict_json(text, invalid_file(path_, "the header "));
  if (!header.is_object()) fail("the header is a JSON " + std::string(header.type_name()) + ", not an object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      metadata_ = parse_metadata(path_, it.value());
      continue;
    }
    index_[it.key()] = infos_.size();
    infos_.push_back(parse_info(path_, it.key(), it.value()));
  }
}

// The tensors' byte ranges, sorted, must tile the data region: no overlap, no hole, nothing past or after them.
void SafetensorsFile::check_layout() {
  const Failure fail = invalid_file(path_);
  std::vector<size_t> order(infos_.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    return std::make_pair(infos_[a].begin, infos_[a].end) < std::make_pair(infos_[b].begin, infos_[b].end);
  });
  const uint64_t data = data_bytes();
  const auto range = [](const SafetensorsTensorInfo& t) {
    return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")";
  };
  for (const SafetensorsTensorInfo& t : infos_) {
    if (t.end > data) {
      fail("tensor " + in_quotes(t.name) + " at bytes " + range(t) + " ends past the data region of " +
           std::to_string(data) + " bytes");
    }
  }
  const SafetensorsTensorInfo* previous = nullptr;
  uint64_t covered = 0;
  for (const size_t i : order) {
    const SafetensorsTensorInfo& t = infos_[i];
    if (t.begin < covered) {
      fail("tensor " + in_quotes(t.name) + " at bytes " + range(t) + " overlaps tensor " + in_quotes(previous->name) +
           " at " + range(*previous));
    }
    if (t.begin > covered) {
      fail("bytes [" + std::to_string(covered) + ", " + std::to_string(t.begin) +
           ") of the data region belong to no tensor");
    }
    covered = t.end;
    previous = &t;
    names_.push_back(t.name);
  }
  if (covered != data) {
    fail("bytes [" + std::to_string(covered) + ", " + std::to_string(data) +
         ") at the end of the data region belong to no tensor");
  }
}

const SafetensorsTensorInfo& SafetensorsFile::info(const std::string& name) const {
  const auto found = index_.find(name);
  if (found == index_.end()) throw_error(path_ + " has no tensor " + in_quotes(name));
  return infos_[found->second];
}

torch::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsTensorInfo& t = info(name);
  const uint64_t bytes = t.end - t.begin;
  if (8 + header_bytes_ + t.end > file_bytes_) throw_error(path_ + ": tensor " + in_quotes(name) + " out of bounds");
  const unsigned char* source = map_.get() + 8 + header_bytes_ + t.begin;
  if (t.dtype == torch::kBool) {  // any other byte would be an invalid C++ bool
    for (uint64_t i = 0; i < bytes; ++i) {
      if (source[i] > 1) {
        invalid_file(path_, "tensor " + in_quotes(name) + " ")("of BOOL holds the byte " + std::to_string(source[i]) +
                                                            " at element " + std::to_string(i) + ", not 0 or 1");
      }
    }
  }
  torch::Tensor out = torch::empty(t.shape, torch::TensorOptions().dtype(t.dtype));
  if (uint64_t(out.numel()) * uint64_t(out.element_size()) != bytes) {
    throw_error(path_ + ": tensor " + in_quotes(name) + " does not match its byte range");
  }
  if (bytes > 0) std::memcpy(out.data_ptr(), source, size_t(bytes));
  return out;
}

namespace {

// T on the CPU, contiguous, of a dtype a safetensors file can hold.
torch::Tensor writable(const std::string& name, const torch::Tensor& t, const Failure& fail) {
  if (!t.defined()) fail("tensor " + in_quotes(name) + " is undefined");
  if (t.layout() != torch::kStrided) fail("tensor " + in_quotes(name) + " is not a dense (strided) tensor");
  if (dtype_by_type(t.scalar_type()) == nullptr) {
    fail("tensor " + in_quotes(name) + " has the dtype " + c10::toString(t.scalar_type()) +
         ", which safetensors files here do not hold (" + kDtypeList + ")");
  }
  return t.to(torch::kCPU).contiguous();
}

// The header JSON, padded with spaces to a multiple of 8 bytes (as the reference writer pads it).
std::string header_text(const Json& header, const Failure& fail) {
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    fail("a tensor name or a metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// Writes the length prefix, HEADER and the bytes of DATA in place of PATH (base/durable_io.h's
// replace_file_durably: nothing partial is left, a previous file stays as it was when the write fails).
void write_durably(const std::string& path, const std::string& header, const std::vector<torch::Tensor>& data) {
  try {
    replace_file_durably(path, [&](DurableFile& file) {
      unsigned char prefix[8];
      for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));
      file.write(prefix, sizeof(prefix));
      file.write(header.data(), header.size());
      for (const torch::Tensor& t : data) {
        if (t.numel() > 0) file.write(t.data_ptr(), size_t(t.numel()) * t.element_size());
      }
    });
  } catch (const IoError& e) {
    throw_error(e.what());
  }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const Failure fail{"cannot write " + path + ": "};
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") fail("the tensor name __metadata__ is reserved for the metadata");
    if (!seen.insert(name).second) fail("the tensor name " + in_quotes(name) + " is given twice");
    data.push_back(writable(name, tensor, fail));
    const torch::Tensor& t = data.back();
    const uint64_t bytes = uint64_t(t.numel()) * uint64_t(t.element_size());
    header[name] = Json{{"dtype", dtype_by_type(t.scalar_type())->name},
                        {"shape", t.sizes().vec()},
                        {"data_offsets", Json::array({offset, offset + bytes})}};
    offset += bytes;
  }
  write_durably(path, header_text(header, fail), data);
}

namespace {

// model.safetensors.index.json's weight_map (tensor -> shard file name), each shard a plain name inside the
// directory. Other top-level keys than "metadata" and "weight_map" are ignored.
std::map<std::string, std::string> read_weight_map(const std::string& index_path) {
  const Failure fail{index_path + " is not a valid safetensors index: "};
  std::error_code ec;
  const uintmax_t size = fs::file_size(index_path, ec);
  if (ec) throw_error("cannot read " + index_path + ": " + ec.message());
  if (size > kSafetensorsMaxHeaderBytes) fail("it has " + std::to_string(size) + " bytes, more than the cap");
  std::ifstream in(index_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw_error("cannot read " + index_path);
  const Json index = parse_strict_json(text.str(), Failure{fail.prefix + "the index "});
  if (!index.is_object()) fail("it is a JSON " + std::string(index.type_name()) + ", not an object");
  if (index.contains("metadata") && !index["metadata"].is_object()) fail("\"metadata\" is not an object");
  if (!index.contains("weight_map") || !index["weight_map"].is_object()) fail("it has no \"weight_map\" object");
  std::map<std::string, std::string> weight_map;
  const Json& map = index["weight_map"];
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it.value().is_string()) {
      fail("the weight_map gives tensor " + in_quotes(it.key()) + " the file " + brief(it.value()) + ", not a string");
    }
    const std::string file = it.value().get<std::string>();
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
        file.find('\0') != std::string::npos) {
      fail("the weight_map puts tensor " + in_quotes(it.key()) + " in " + in_quotes(file) +
           ", not a file name inside the directory");
    }
    weight_map[it.key()] = file;
  }
  return weight_map;
}

// Every shard the weight map names, opened (and so validated), by file name.
std::map<std::string, SafetensorsFile> open_shards(const std::string& dir, const std::string& index_path,
                                                   const std::map<std::string, std::string>& weight_map) {
  std::map<std::string, SafetensorsFile> shards;
  for (const auto& [name, file] : weight_map) {
    if (shards.count(file)) continue;
    const std::string path = (fs::path(dir) / file).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw_error(index_path + " names the shard " + in_quotes(file) + " (for tensor " + in_quotes(name) +
                  "), which is not a file in " + dir);
    }
    shards.emplace(file, SafetensorsFile::open(path));
  }
  return shards;
}

// The shards hold exactly the tensors of the weight map, each in the shard it names, none in two.
void check_shards(const std::string& index_path, const std::map<std::string, std::string>& weight_map,
                  const std::map<std::string, SafetensorsFile>& shards) {
  const Failure fail{index_path + " does not match its shards: "};
  std::map<std::string, std::string> holder;  // tensor -> the shard that holds it
  for (const auto& [file, shard] : shards) {
    for (const std::string& name : shard.names()) {
      const auto [it, added] = holder.emplace(name, file);
      if (!added) {
        fail("tensor " + in_quotes(name) + " is in two shards, " + in_quotes(it->second) + " and " + in_quotes(file));
      }
    }
  }
  for (const auto& [name, file] : weight_map) {
    if (!shards.at(file).contains(name)) {
      fail("the weight_map puts tensor " + in_quotes(name) + " in " + in_quotes(file) + ", which does not hold it");
    }
  }
  for (const auto& [name, file] : holder) {
    if (!weight_map.count(name)) {
      fail("the shard " + in_quotes(file) + " holds tensor " + in_quotes(name) +
           ", which the weight_map does not list");
    }
  }
}

}  // namespace

std::map<std::string, torch::Tensor> load_safetensors_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_error(dir + " is not a directory");
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  std::map<std::string, SafetensorsFile> files;
  if (fs::exists(single, ec)) {
    files.emplace("model.safetensors", SafetensorsFile::open(single));
  } else if (fs::exists(index_path, ec)) {
    const auto weight_map = read_weight_map(index_path);
    files = open_shards(dir, index_path, weight_map);
    check_shards(index_path, weight_map, files);
  } else {
    throw_error(dir + " holds neither model.safetensors nor model.safetensors.index.json");
  }
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [file, shard] : files) {
    for (const std::string& name : shard.names()) tensors[name] = shard.tensor(name);
  }
  return tensors;
}

}  // namespace lmzoo
