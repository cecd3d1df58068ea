// safetensors: every dtype round-trips (scalars, empty and non-contiguous tensors, metadata), files of a plain
// Python writer read right and ours parse right in Python, one refusal per validation rule, a seeded fuzz of
// headers, sharded directories, and a write that fails (EFBIG) leaving nothing behind.
#include "tests/catch_compat.h"

#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "data/safetensors.h"
#include "tests/cli_helpers.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::string kReferenceScript = std::string(LMZOO_SOURCE_DIR) + "/tests/safetensors_reference.py";

const std::vector<std::pair<std::string, torch::ScalarType>> kAllDtypes = {
    {"F32", torch::kFloat}, {"F16", torch::kHalf}, {"BF16", torch::kBFloat16}, {"F64", torch::kDouble},
    {"I64", torch::kLong},  {"I32", torch::kInt},  {"I16", torch::kShort},     {"I8", torch::kChar},
    {"U8", torch::kByte},   {"BOOL", torch::kBool}};

std::string le64(uint64_t n) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return bytes;
}

// A file: the length prefix, HEADER as given (no padding) and DATA.
std::string file_bytes(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

// One header entry as JSON text.
std::string entry(const std::string& dtype, const std::string& shape, uint64_t begin, uint64_t end) {
  return "{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(begin) + "," +
         std::to_string(end) + "]}";
}

// Distinct bit patterns of SHAPE in DTYPE (float values exact in every float dtype).
torch::Tensor pattern(torch::ScalarType dtype, std::vector<int64_t> shape, int64_t salt = 0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const torch::Tensor i = torch::arange(n, torch::kLong) + salt;
  const torch::Tensor k = (i * 7).remainder(13) - 6;
  torch::Tensor t;
  if (dtype == torch::kBool) t = i.remainder(3) == 0;
  else if (dtype == torch::kByte) t = (i * 37).remainder(256).to(dtype);
  else if (torch::isFloatingType(dtype)) t = (k.to(torch::kDouble) * 0.625).to(dtype);
  else t = (k * 9).to(dtype);
  return t.reshape(shape);
}

// Same dtype, shape and bytes.
bool same(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const torch::Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.numel() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), size_t(ca.numel()) * ca.element_size()) == 0;
}

// Every tensor of the file at PATH, read.
std::vector<std::pair<std::string, torch::Tensor>> read_all(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const std::string& name : file.names()) out.emplace_back(name, file.tensor(name));
  return out;
}

// The message of the SafetensorsError that opening PATH and reading every tensor throws ("" when it loads).
std::string load_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

// Writes BYTES as a file and returns the cause of its refusal: what follows "PATH is not a valid safetensors
// file: " in the one-line message.
std::string refusal(const TempDir& dir, const std::string& bytes) {
  const std::string path = dir / "model.safetensors";
  write_text(path, bytes);
  const std::string message = load_error(path);
  const std::string prefix = path + " is not a valid safetensors file: ";
  INFO("message: " << message);
  CHECK(message.find('\n') == std::string::npos);
  REQUIRE(message.compare(0, prefix.size(), prefix) == 0);
  return message.substr(prefix.size());
}

// A valid two-tensor file with the header entries replaced: HEADER_A and HEADER_B for tensors 'a' (F32 [2]) and
// 'b' (I8 [4]); the data region holds 12 bytes.
std::string two_tensors(const std::string& a, const std::string& b, const std::string& data = std::string(12, '\1')) {
  return file_bytes("{\"a\":" + a + ",\"b\":" + b + "}", data);
}

bool have_python() { return std::system("/usr/bin/python3 -c 'import json, struct' >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("every dtype round-trips, with scalars, empty and non-contiguous tensors", "[safetensors]") {
  TempDir dir;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& [name, dtype] : kAllDtypes) {
    tensors.emplace_back(name + ".full", pattern(dtype, {2, 3}));
    tensors.emplace_back(name + ".scalar", pattern(dtype, {}, 5));
    tensors.emplace_back(name + ".empty", pattern(dtype, {3, 0, 2}));
    tensors.emplace_back(name + ".transposed", pattern(dtype, {3, 4}, 1).t());
    tensors.emplace_back(name + ".strided", pattern(dtype, {4, 6}, 2).slice(1, 1, 6, 2));
  }
  torch::manual_seed(7);
  tensors.emplace_back("random", torch::randn({5, 7}));
  REQUIRE_FALSE(tensors[3].second.is_contiguous());
  const std::string path = dir / "all.safetensors";
  write_safetensors(path, tensors);

  std::vector<std::pair<std::string, torch::Tensor>> read;
  {
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::vector<std::string> names;
    for (const auto& [name, t] : tensors) names.push_back(name);
    CHECK(file.names() == names);  // in the order given
    CHECK(file.header_bytes() % 8 == 0);
    CHECK(file.metadata().empty());
    for (const auto& [name, t] : tensors) {
      CHECK(file.dtype(name) == t.scalar_type());
      CHECK(file.shape(name) == t.sizes().vec());
      read.emplace_back(name, file.tensor(name));
    }
  }  // the file is unmapped here: the tensors own their bytes
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(same(read[i].second, tensors[i].second));
    CHECK(read[i].second.device().is_cpu());
  }
  CHECK(read[1].second.dim() == 0);
  CHECK(read[2].second.numel() == 0);
}

TEST_CASE("the writer's bytes are the reference layout: header in the given order, space padding, packed data",
          "[safetensors]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  write_safetensors(path, {{"w", torch::tensor({1.0f, -2.0f})}, {"n", torch::tensor({int8_t(-1)}, torch::kChar)}},
                    {{"k", "v"}});
  std::string header =
      "{\"__metadata__\":{\"k\":\"v\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"n\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[8,9]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\xc0\xff", 9);
  CHECK(read_text(path) == file_bytes(header, data));
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);  // no sibling left
}

TEST_CASE("metadata round-trips; a file without it has none", "[safetensors]") {
  TempDir dir;
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"empty", ""}, {"unicode", "h\xc3\xa9llo \xe2\x9c\x93"}, {"quote\"and\\", "line\nbreak"}};
  write_safetensors(dir / "m.safetensors", {{"x", torch::ones({2})}}, metadata);
  CHECK(SafetensorsFile::open(dir / "m.safetensors").metadata() == metadata);
  write_safetensors(dir / "none.safetensors", {{"x", torch::ones({2})}});
  CHECK(SafetensorsFile::open(dir / "none.safetensors").metadata().empty());
  CHECK(read_text(dir / "none.safetensors").find("__metadata__") == std::string::npos);
  write_safetensors(dir / "nothing.safetensors", {}, {{"only", "metadata"}});
  const SafetensorsFile nothing = SafetensorsFile::open(dir / "nothing.safetensors");
  CHECK(nothing.names().empty());
  CHECK(nothing.metadata().at("only") == "metadata");
}

namespace {

// The values tests/safetensors_reference.py writes: element i from k = (i * 37) % 23 - 11.
torch::Tensor reference_values(const std::string& dtype, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const torch::Tensor i = torch::arange(n, torch::kLong);
  const torch::Tensor k = (i * 37).remainder(23) - 11;
  torch::Tensor t;
  if (dtype == "F32") t = (k.to(torch::kDouble) / 3.0).to(torch::kFloat);
  if (dtype == "F64") t = k.to(torch::kDouble) / 3.0;
  if (dtype == "F16") t = (k.to(torch::kDouble) * 0.375).to(torch::kHalf);
  if (dtype == "BF16") t = (k.to(torch::kDouble) * 0.375).to(torch::kBFloat16);
  if (dtype == "I64") t = k * int64_t(1000000007) * 1000;
  if (dtype == "I32") t = (k * 100000007).to(torch::kInt);
  if (dtype == "I16") t = (k * 1001).to(torch::kShort);
  if (dtype == "I8") t = (k * 11).to(torch::kChar);
  if (dtype == "U8") t = (i * 37).remainder(256).to(torch::kByte);
  if (dtype == "BOOL") t = i.remainder(3) == 0;
  return t.reshape(shape);
}

// "[2,3]" as the Python reader prints shapes.
std::string compact_shape(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t d = 0; d < t.dim(); ++d) text += (d ? "," : "") + std::to_string(t.size(d));
  return text + "]";
}

// Checks one "tensor NAME DTYPE SHAPE v..." line of the Python reader against T (exactly, sign of zero included).
void check_python_line(std::istringstream& fields, const std::string& dtype, const torch::Tensor& t) {
  std::string shape;
  fields >> shape;
  CHECK(shape == compact_shape(t));
  const bool floating = torch::isFloatingType(t.scalar_type());
  const torch::Tensor flat = t.reshape({-1}).to(floating ? torch::kDouble : torch::kLong).contiguous();
  int64_t j = 0;
  for (std::string v; fields >> v; ++j) {
    REQUIRE(j < flat.numel());
    if (floating) {
      const double expected = flat.data_ptr<double>()[j], got = std::stod(v);
      CHECK((got == expected && std::signbit(got) == std::signbit(expected)));
    } else {
      CHECK(std::stoll(v) == flat.data_ptr<int64_t>()[j]);
    }
  }
  CHECK(j == flat.numel());
}

}  // namespace

TEST_CASE("a file written by a plain Python writer reads with the right values", "[safetensors]") {
  if (!have_python()) {
    WARN("skipped: no /usr/bin/python3");
    return;
  }
  TempDir dir;
  const std::string path = dir / "python.safetensors";
  REQUIRE(std::system(("/usr/bin/python3 " + kReferenceScript + " write " + path).c_str()) == 0);
  const SafetensorsFile file = SafetensorsFile::open(path);
  // Data order, though the Python header lists the names sorted.
  const std::vector<std::string> names = {"f32", "f16", "bf16", "f64", "i64", "i32",
                                          "i16", "i8",  "u8",   "bool", "scalar", "empty"};
  CHECK(file.names() == names);
  const std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> expected = {
      {"f32", "F32", {2, 3}}, {"f16", "F16", {4}},  {"bf16", "BF16", {2, 2}}, {"f64", "F64", {3}},
      {"i64", "I64", {2, 2}}, {"i32", "I32", {5}},  {"i16", "I16", {3}},      {"i8", "I8", {4}},
      {"u8", "U8", {2, 3}},   {"bool", "BOOL", {5}}, {"scalar", "F32", {}},   {"empty", "I64", {0, 3}}};
  for (const auto& [name, dtype, shape] : expected) {
    INFO(name);
    CHECK(file.info(name).dtype_name == dtype);
    CHECK(same(file.tensor(name), reference_values(dtype, shape)));
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"written_by", "safetensors_reference.py"}};
  CHECK(file.metadata() == metadata);
}

TEST_CASE("a file written here parses in a plain Python reader with identical values", "[safetensors]") {
  if (!have_python()) {
    WARN("skipped: no /usr/bin/python3");
    return;
  }
  TempDir dir;
  torch::manual_seed(3);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t i64_min = std::numeric_limits<int64_t>::min(), i64_max = std::numeric_limits<int64_t>::max();
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"randn", torch::randn({3, 4})},
      {"specials", torch::tensor({inf, -inf, -0.0f, 1e-45f, 3.4e38f})},
      {"f16", torch::randn({5}).to(torch::kHalf)},
      {"bf16", torch::randn({2, 3}).to(torch::kBFloat16)},
      {"f64", torch::randn({4}, torch::kDouble)},
      {"i64", torch::tensor({i64_min, i64_max, int64_t(0), int64_t(-1)})},
      {"i32", torch::tensor({std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()})},
      {"i16", pattern(torch::kShort, {2, 2})},
      {"i8", torch::tensor({-128, 127, 0}, torch::kChar)},
      {"u8", torch::tensor({0, 255, 7}, torch::kByte)},
      {"bool", pattern(torch::kBool, {4})},
      {"scalar", torch::tensor(2.5, torch::kDouble)},
      {"empty", torch::zeros({0, 3}, torch::kFloat)},
      {"transposed", pattern(torch::kFloat, {2, 3}).t()}};
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "h\xc3\xa9llo \"q\""}};
  const std::string path = dir / "cpp.safetensors";
  write_safetensors(path, tensors, metadata);
  REQUIRE(std::system(("/usr/bin/python3 " + kReferenceScript + " read " + path + " > " + (dir / "out")).c_str()) == 0);
  std::istringstream lines(read_text(dir / "out"));
  size_t n = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string kind, name, dtype;
    fields >> kind;
    if (kind == "__metadata__") {
      CHECK(line.substr(kind.size() + 1) == nlohmann::json(metadata).dump());
      continue;
    }
    fields >> name >> dtype;
    REQUIRE(n < tensors.size());
    INFO(line);
    CHECK(name == tensors[n].first);  // data in the order given
    check_python_line(fields, dtype, tensors[n].second);
    ++n;
  }
  CHECK(n == tensors.size());
}

// One test case per validation rule.

TEST_CASE("a file shorter than 8 bytes is refused", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, ""), Catch::Contains("the file has 0 bytes, fewer than the 8 of the header length"));
  CHECK_THAT(refusal(dir, std::string(7, '\0')), Catch::Contains("the file has 7 bytes"));
}

TEST_CASE("a header length past the end of the file or above the 100 MB cap is refused", "[safetensors]") {
  TempDir dir;
  const std::string header = "{}";
  CHECK_THAT(refusal(dir, le64(3) + header),
             Catch::Contains("the header length 3 runs past the end of the file (2 bytes follow the length)"));
  CHECK_THAT(refusal(dir, le64(~uint64_t(0)) + header),
             Catch::Contains("the header length 18446744073709551615 exceeds the cap of 100000000 bytes"));
  CHECK_THAT(refusal(dir, le64(100000001) + header), Catch::Contains("exceeds the cap"));
  CHECK(load_error(dir / "model.safetensors") != "");
  write_text(dir / "empty.safetensors", le64(2) + header);  // the smallest valid file
  CHECK(SafetensorsFile::open(dir / "empty.safetensors").names().empty());
}

TEST_CASE("a header that is not JSON, or not a JSON object, is refused", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, file_bytes("{\"a\":", "")), Catch::Contains("the header is not valid JSON (parse error"));
  CHECK_THAT(refusal(dir, file_bytes("{}x", "")), Catch::Contains("the header is not valid JSON"));
  CHECK_THAT(refusal(dir, file_bytes("", "")), Catch::Contains("the header is not valid JSON"));
  CHECK_THAT(refusal(dir, file_bytes(std::string("{\0}", 3), "")), Catch::Contains("not valid JSON"));
  // Not UTF-8: byte 2 of the header, 8 + 2 in the file.
  CHECK_THAT(refusal(dir, file_bytes("{\"\xff\":1}", "")),
             Catch::Contains("the header is not UTF-8: invalid byte 0xFF at byte offset 10"));
  CHECK_THAT(refusal(dir, file_bytes("[1, 2]", "")), Catch::Contains("the header is a JSON array, not an object"));
  CHECK_THAT(refusal(dir, file_bytes("7", "")), Catch::Contains("the header is a JSON number, not an object"));
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK_THAT(refusal(dir, file_bytes(deep, "")), Catch::Contains("the header nests deeper than 32 levels"));
}

TEST_CASE("an entry that is not an object, lacks a field or has an extra one is refused", "[safetensors]") {
  TempDir dir;
  const std::string b = entry("I8", "[4]", 8, 12);
  CHECK_THAT(refusal(dir, two_tensors("5", b)), Catch::Contains("tensor 'a' is a JSON number, not an object"));
  CHECK_THAT(refusal(dir, two_tensors("[]", b)), Catch::Contains("tensor 'a' is a JSON array, not an object"));
  CHECK_THAT(refusal(dir, two_tensors("{\"shape\":[2],\"data_offsets\":[0,8]}", b)),
             Catch::Contains("tensor 'a' has no \"dtype\""));
  CHECK_THAT(refusal(dir, two_tensors("{\"dtype\":\"F32\",\"data_offsets\":[0,8]}", b)),
             Catch::Contains("tensor 'a' has no \"shape\""));
  CHECK_THAT(refusal(dir, two_tensors("{\"dtype\":\"F32\",\"shape\":[2]}", b)),
             Catch::Contains("tensor 'a' has no \"data_offsets\""));
  CHECK_THAT(refusal(dir, two_tensors("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}", b)),
             Catch::Contains("tensor 'a' has the unknown field 'x'"));
  CHECK(load_error(dir / "model.safetensors") != "");
  write_text(dir / "ok.safetensors", two_tensors(entry("F32", "[2]", 0, 8), b));
  CHECK(load_error(dir / "ok.safetensors") == "");  // the same file with the entries intact loads
}

TEST_CASE("a dtype that is not a string or not supported is refused by name", "[safetensors]") {
  TempDir dir;
  const std::string b = entry("I8", "[4]", 8, 12);
  CHECK_THAT(refusal(dir, two_tensors(entry("U16", "[4]", 0, 8), b)),
             Catch::Contains("tensor 'a' has the dtype 'U16', not one of F32, F16, BF16, F64, I64, I32, I16, I8, U8, "
                             "BOOL"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F8_E4M3", "[8]", 0, 8), b)), Catch::Contains("the dtype 'F8_E4M3'"));
  CHECK_THAT(refusal(dir, two_tensors(entry("f32", "[2]", 0, 8), b)), Catch::Contains("the dtype 'f32'"));
  CHECK_THAT(refusal(dir, two_tensors("{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}", b)),
             Catch::Contains("tensor 'a' has the dtype 4, not a string"));
}

TEST_CASE("shape entries that are negative or not integers are refused", "[safetensors]") {
  TempDir dir;
  const std::string b = entry("I8", "[4]", 8, 12);
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[-2]", 0, 8), b)),
             Catch::Contains("tensor 'a' has the shape entry -2, not an integer in [0, 2^63)"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2.0]", 0, 8), b)), Catch::Contains("the shape entry 2.0,"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[1e1]", 0, 8), b)), Catch::Contains("the shape entry 10.0,"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[\"2\"]", 0, 8), b)), Catch::Contains("the shape entry \"2\","));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[9223372036854775808]", 0, 8), b)),
             Catch::Contains("the shape entry 9223372036854775808,"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "2", 0, 8), b)),
             Catch::Contains("tensor 'a' has a shape that is a JSON number, not an array"));
}

TEST_CASE("data_offsets that are not two integers, or end before they begin, are refused", "[safetensors]") {
  TempDir dir;
  const std::string b = entry("I8", "[4]", 8, 12);
  const auto with_offsets = [](const std::string& offsets) {
    return "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + offsets + "}";
  };
  CHECK_THAT(refusal(dir, two_tensors(with_offsets("[0]"), b)),
             Catch::Contains("tensor 'a' has the data_offsets [0], not two non-negative integers"));
  CHECK_THAT(refusal(dir, two_tensors(with_offsets("[0,8,9]"), b)), Catch::Contains("not two non-negative"));
  CHECK_THAT(refusal(dir, two_tensors(with_offsets("[-1,7]"), b)), Catch::Contains("not two non-negative"));
  CHECK_THAT(refusal(dir, two_tensors(with_offsets("[0,8.5]"), b)), Catch::Contains("not two non-negative"));
  CHECK_THAT(refusal(dir, two_tensors(with_offsets("{\"0\":8}"), b)), Catch::Contains("not two non-negative"));
  CHECK_THAT(refusal(dir, two_tensors(with_offsets("[8,0]"), b)),
             Catch::Contains("tensor 'a' has the data_offsets [8,0], which end before they begin"));
}

TEST_CASE("a byte count that overflows or differs from the shape is refused", "[safetensors]") {
  TempDir dir;
  const std::string b = entry("I8", "[4]", 8, 12);
  CHECK(refusal(dir, two_tensors(entry("F32", "[2, 3]", 0, 8), b)) ==
        "tensor 'a' has 8 bytes for shape [2, 3] of F32 (24 expected)");
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[]", 0, 8), b)),
             Catch::Contains("tensor 'a' has 8 bytes for shape [] of F32 (4 expected)"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[0]", 0, 8), b)), Catch::Contains("(0 expected)"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[4611686018427387904]", 0, 8), b)),
             Catch::Contains("tensor 'a' has shape [4611686018427387904] of F32, whose byte size overflows 64 bits"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[4294967296, 4294967296]", 0, 8), b)),
             Catch::Contains("tensor 'a' has shape [4294967296, 4294967296], too many elements"));
  // A zero size makes the count 0, but the other sizes must still multiply within int64.
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[0, 4294967296, 4294967296]", 0, 8), b)),
             Catch::Contains("too many elements"));
}

TEST_CASE("a tensor ending past the data region is refused", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 0, 8), entry("I8", "[5]", 8, 13))),
             Catch::Contains("tensor 'b' at bytes [8, 13) ends past the data region of 12 bytes"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 0, 8), entry("I8", "[4]", 8, 12), "")),
             Catch::Contains("ends past the data region of 0 bytes"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[0]", 18446744073709551615ull, 18446744073709551615ull),
                                      entry("I8", "[4]", 8, 12))),
             Catch::Contains("tensor 'a' at bytes [18446744073709551615, 18446744073709551615) ends past"));
}

TEST_CASE("overlapping byte ranges are refused", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 0, 8), entry("I8", "[4]", 4, 8))),
             Catch::Contains("tensor 'b' at bytes [4, 8) overlaps tensor 'a' at [0, 8)"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 0, 8), entry("I8", "[8]", 0, 8), std::string(8, '\1'))),
             Catch::Contains("overlaps tensor"));
}

TEST_CASE("holes and trailing bytes in the data region are refused", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 4, 12), entry("I8", "[4]", 12, 16), std::string(16, 1))),
             Catch::Contains("bytes [0, 4) of the data region belong to no tensor"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 0, 8), entry("I8", "[4]", 10, 14), std::string(14, 1))),
             Catch::Contains("bytes [8, 10) of the data region belong to no tensor"));
  CHECK_THAT(refusal(dir, two_tensors(entry("F32", "[2]", 0, 8), entry("I8", "[4]", 8, 12), std::string(13, 1))),
             Catch::Contains("bytes [12, 13) at the end of the data region belong to no tensor"));
  CHECK_THAT(refusal(dir, file_bytes("{}", "x")), Catch::Contains("bytes [0, 1) at the end of the data region"));
}

TEST_CASE("duplicate tensor names and duplicate keys are refused", "[safetensors]") {
  TempDir dir;
  const std::string a = entry("F32", "[2]", 0, 8);
  CHECK_THAT(refusal(dir, file_bytes("{\"a\":" + a + ",\"a\":" + entry("I8", "[4]", 8, 12) + "}", std::string(12, 1))),
             Catch::Contains("the header has the key 'a' twice in one object"));
  const std::string dtype_twice = "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  CHECK_THAT(refusal(dir, file_bytes(dtype_twice, std::string(8, 1))),
             Catch::Contains("the header has the key 'dtype' twice in one object"));
  CHECK_THAT(refusal(dir, file_bytes("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", "")),
             Catch::Contains("the key 'k' twice"));
  CHECK_THAT(refusal(dir, file_bytes("{\"__metadata__\":{},\"__metadata__\":{}}", "")),
             Catch::Contains("the key '__metadata__' twice"));
  // Equal keys in different objects are fine.
  write_text(dir / "ok.safetensors", file_bytes("{\"__metadata__\":{\"a\":\"x\"},\"a\":" + a + "}", std::string(8, 1)));
  CHECK(load_error(dir / "ok.safetensors") == "");
}

TEST_CASE("a __metadata__ that is not a string to string object is refused", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, file_bytes("{\"__metadata__\":[\"a\"]}", "")),
             Catch::Contains("__metadata__ is a JSON array, not an object"));
  CHECK_THAT(refusal(dir, file_bytes("{\"__metadata__\":null}", "")),
             Catch::Contains("__metadata__ is a JSON null, not an object"));
  CHECK_THAT(refusal(dir, file_bytes("{\"__metadata__\":{\"n\":1}}", "")),
             Catch::Contains("__metadata__ entry 'n' is a JSON number, not a string"));
  CHECK_THAT(refusal(dir, file_bytes("{\"__metadata__\":{\"o\":{\"x\":\"y\"}}}", "")),
             Catch::Contains("__metadata__ entry 'o' is a JSON object, not a string"));
}

TEST_CASE("bad BOOL bytes, hostile names, unknown tensors and unreadable paths fail in one line", "[safetensors]") {
  TempDir dir;
  CHECK_THAT(refusal(dir, file_bytes("{\"m\":" + entry("BOOL", "[3]", 0, 3) + "}", std::string("\1\0\2", 3))),
             Catch::Contains("tensor 'm' of BOOL holds the byte 2 at element 2, not 0 or 1"));
  // A name with a newline and a very long one: the message stays one short line.
  const std::string newline = refusal(dir, file_bytes("{\"a\\nb\":" + entry("F32", "[2]", 0, 4) + "}", "1234"));
  CHECK_THAT(newline, Catch::StartsWith("tensor 'a\\x0ab' has 4 bytes"));
  const std::string long_name(5000, 'n');
  CHECK(refusal(dir, file_bytes("{\"" + long_name + "\":5}", "")).size() < 200);

  write_safetensors(dir / "ok.safetensors", {{"x", torch::ones({2})}});
  const SafetensorsFile file = SafetensorsFile::open(dir / "ok.safetensors");
  CHECK_THROWS_AS(file.tensor("y"), SafetensorsError);
  CHECK_THROWS_WITH(file.info("y"), dir / "ok.safetensors" + " has no tensor 'y'");
  CHECK_THAT(load_error(dir / "missing.safetensors"), Catch::Contains("cannot open " + dir / "missing.safetensors" +
                                                                      ": No such file or directory"));
  CHECK_THAT(load_error(dir.path.string()),
             Catch::Contains("cannot open " + dir.path.string() + ": not a regular file"));
}

TEST_CASE("the writer refuses unsupported dtypes and bad names, writing nothing", "[safetensors]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  const auto write_error = [&](const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata = {}) {
    try {
      write_safetensors(path, tensors, metadata);
    } catch (const SafetensorsError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(write_error({{"ok", torch::ones({2})}, {"c", torch::ones({2}, torch::kComplexFloat)}}) ==
        "cannot write " + path + ": tensor 'c' has the dtype ComplexFloat, which safetensors files here do not hold "
        "(F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
  CHECK_THAT(write_error({{"s", torch::eye(3).to_sparse()}}), Catch::Contains("tensor 's' is not a dense"));
  CHECK_THAT(write_error({{"u", torch::Tensor()}}), Catch::Contains("tensor 'u' is undefined"));
  CHECK_THAT(write_error({{"d", torch::ones({1})}, {"d", torch::ones({1})}}),
             Catch::Contains("the tensor name 'd' is given twice"));
  CHECK_THAT(write_error({{"__metadata__", torch::ones({1})}}), Catch::Contains("__metadata__ is reserved"));
  CHECK_THAT(write_error({{"bad\xff", torch::ones({1})}}), Catch::Contains("not valid UTF-8"));
  CHECK_THAT(write_error({}, {{"k", "\xc3"}}), Catch::Contains("not valid UTF-8"));
  CHECK(fs::is_empty(dir.path));
}

namespace {

// A valid file of several dtypes, a scalar, an empty tensor and metadata, as bytes.
std::string fuzz_base(const TempDir& dir) {
  torch::manual_seed(11);
  write_safetensors(dir / "base.safetensors",
                    {{"wte", torch::randn({4, 3})},
                     {"ids", torch::arange(5, torch::kLong)},
                     {"ln.bias", torch::randn({3}).to(torch::kBFloat16)},
                     {"mask", pattern(torch::kBool, {2, 2})},
                     {"empty", torch::zeros({0, 2}, torch::kByte)},
                     {"scale", torch::tensor(0.5).to(torch::kHalf)},
                     {"f64", torch::randn({2}, torch::kDouble)}},
                    {{"format", "pt"}});
  return read_text(dir / "base.safetensors");
}

// A random edit of the header's JSON: offsets swapped or moved, a shape or dtype changed, a field dropped or added,
// a name duplicated, the metadata broken.
std::string edit_json(const std::string& header, std::mt19937_64& rng) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(header);
  std::vector<std::string> names;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "__metadata__") names.push_back(it.key());
  }
  const auto pick = [&](size_t n) { return size_t(rng() % n); };
  auto& e = j[names[pick(names.size())]];
  auto& other = j[names[pick(names.size())]];
  const nlohmann::ordered_json values[] = {-1, 0, 1, 2, 3, 7, uint64_t(1) << 62, uint64_t(1) << 63, 1.5, "x", nullptr,
                                           ~uint64_t(0)};
  const nlohmann::ordered_json& value = values[pick(std::size(values))];
  switch (pick(10)) {
    case 0: std::swap(e["data_offsets"], other["data_offsets"]); break;
    case 1: if (!e["shape"].empty()) e["shape"][pick(e["shape"].size())] = value; break;
    case 2: e["shape"].push_back(value); break;
    case 3: if (!e["shape"].empty()) e["shape"].erase(pick(e["shape"].size())); break;
    case 4: e["dtype"] = std::vector<std::string>{"F32", "F16", "BF16", "I64", "I8", "BOOL", "U16"}[pick(7)]; break;
    case 5: e["data_offsets"][pick(2)] = value; break;
    case 6: e["data_offsets"] = {e["data_offsets"][1], e["data_offsets"][0]}; break;
    case 7: e.erase(std::vector<std::string>{"dtype", "shape", "data_offsets"}[pick(3)]); break;
    case 8: e[pick(2) ? "extra" : "dtype"] = value; break;
    default: j["__metadata__"][pick(2) ? "format" : "n"] = value; break;
  }
  std::string text = j.dump();
  if (pick(4) == 0) {  // a duplicated name, which a JSON object cannot express
    const size_t at = text.find("\"ids\"");
    if (at != std::string::npos) text.replace(at, 5, "\"wte\"");
  }
  return text;
}

}  // namespace

TEST_CASE("seeded mutations of a valid file load within bounds or throw SafetensorsError", "[safetensors][fuzz]") {
  TempDir dir;
  const std::string base = fuzz_base(dir);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(base[size_t(i)])) << (8 * i);
  const std::string header = base.substr(8, n), data = base.substr(8 + n);
  std::mt19937_64 rng(20240611);
  std::vector<std::pair<std::string, std::string>> mutants;  // (what, bytes)
  for (size_t length = 0; length <= 8 + n + 16; ++length) mutants.emplace_back("truncated", base.substr(0, length));
  for (int k = 0; k < 3000; ++k) {
    std::string bytes = base;
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips) bytes[rng() % (8 + n)] ^= char(1 + rng() % 255);
    mutants.emplace_back("byte flips", bytes);
  }
  const uint64_t lengths[] = {0, 1, n - 1, n + 1, n + data.size(), n + data.size() + 1, kSafetensorsMaxHeaderBytes,
                              kSafetensorsMaxHeaderBytes + 1, ~uint64_t(0), uint64_t(1) << 63};
  for (const uint64_t length : lengths) mutants.emplace_back("header length", le64(length) + header + data);
  for (int k = 0; k < 400; ++k) {
    const uint64_t length = k % 2 ? rng() : rng() % (2 * n + 64);
    mutants.emplace_back("random header length", le64(length) + header + data);
  }
  for (int k = 0; k < 3000; ++k) {
    std::string text = edit_json(header, rng);
    if (k % 2) text.append((8 - text.size() % 8) % 8, ' ');
    mutants.emplace_back("json edit", le64(text.size()) + text + data.substr(0, data.size() - k % 3));
  }
  for (int k = 0; k < 200; ++k) {
    std::string bytes = base;
    bytes[8 + n + rng() % data.size()] ^= char(1 + rng() % 255);
    mutants.emplace_back("data flip", bytes);
  }

  const std::string path = dir / "mutant.safetensors";
  size_t loaded = 0, refused = 0;
  std::string failure;
  for (size_t m = 0; m < mutants.size() && failure.empty(); ++m) {
    fs::remove(path);  // a fresh file: ext4 flushes a file truncated and rewritten in place on close (slow)
    write_text(path, mutants[m].second);
    const std::string where = mutants[m].first + " #" + std::to_string(m) + ": ";
    try {
      const SafetensorsFile file = SafetensorsFile::open(path);
      for (const std::string& name : file.names()) {
        const SafetensorsTensorInfo& info = file.info(name);
        const torch::Tensor t = file.tensor(name);
        if (8 + file.header_bytes() + info.end > mutants[m].second.size()) failure = where + name + " out of bounds";
        if (uint64_t(t.numel()) * t.element_size() != info.end - info.begin) failure = where + name + " wrong size";
      }
      ++loaded;
    } catch (const SafetensorsError& e) {
      if (std::string(e.what()).find('\n') != std::string::npos) failure = where + "two lines: " + e.what();
      ++refused;
    } catch (const std::exception& e) {
      failure = where + "another exception: " + e.what();
    }
  }
  INFO(failure);
  CHECK(failure.empty());
  CHECK(loaded > 0);
  CHECK(refused > 0);
  CHECK(loaded + refused == mutants.size());
}

namespace {

// DIR/model-0000K-of-00002.safetensors: a and b in the first, c in the second, and the index naming them.
void two_shards(const TempDir& dir, const nlohmann::json& weight_map) {
  write_safetensors(dir / "model-00001-of-00002.safetensors",
                    {{"a", pattern(torch::kFloat, {2, 3})}, {"b", pattern(torch::kLong, {4})}});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", pattern(torch::kBFloat16, {3})}});
  write_text(dir / "model.safetensors.index.json",
             nlohmann::json{{"metadata", {{"total_size", 62}}}, {"weight_map", weight_map}}.dump(2));
}

const nlohmann::json kWeightMap = {{"a", "model-00001-of-00002.safetensors"},
                                   {"b", "model-00001-of-00002.safetensors"},
                                   {"c", "model-00002-of-00002.safetensors"}};

std::string dir_error(const TempDir& dir) {
  try {
    load_safetensors_dir(dir.path.string());
  } catch (const SafetensorsError& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a two-shard directory loads every tensor; a single model.safetensors is read first", "[safetensors]") {
  TempDir dir;
  two_shards(dir, kWeightMap);
  const auto tensors = load_safetensors_dir(dir.path.string());
  REQUIRE(tensors.size() == 3);
  CHECK(same(tensors.at("a"), pattern(torch::kFloat, {2, 3})));
  CHECK(same(tensors.at("b"), pattern(torch::kLong, {4})));
  CHECK(same(tensors.at("c"), pattern(torch::kBFloat16, {3})));

  write_safetensors(dir / "model.safetensors", {{"single", torch::ones({1})}});
  const auto single = load_safetensors_dir(dir.path.string());
  REQUIRE(single.size() == 1);
  CHECK(single.count("single") == 1);
}

TEST_CASE("sharded directories are refused in one line naming the file", "[safetensors]") {
  TempDir dir;
  const std::string index = dir / "model.safetensors.index.json";
  const std::string bad_index = index + " is not a valid safetensors index: ";
  const std::string mismatch = index + " does not match its shards: ";
  nlohmann::json weight_map = kWeightMap;
  SECTION("neither file") {
    CHECK(dir_error(dir) == dir.path.string() + " holds neither model.safetensors nor model.safetensors.index.json");
    CHECK(dir_error(TempDir()) != "");
  }
  SECTION("not a directory") {
    write_text(dir / "f", "x");
    CHECK_THROWS_WITH(load_safetensors_dir(dir / "f"), dir / "f" + " is not a directory");
  }
  SECTION("not JSON, no weight_map, a value not a string, a key twice") {
    two_shards(dir, weight_map);
    write_text(index, "{\"weight_map\": ");
    CHECK_THAT(dir_error(dir), Catch::StartsWith(bad_index + "the index is not valid JSON"));
    write_text(index, "{\"metadata\": {}}");
    CHECK(dir_error(dir) == bad_index + "it has no \"weight_map\" object");
    write_text(index, "{\"metadata\": 3, \"weight_map\": {}}");
    CHECK(dir_error(dir) == bad_index + "\"metadata\" is not an object");
    write_text(index, "{\"weight_map\": {\"a\": 1}}");
    CHECK(dir_error(dir) == bad_index + "the weight_map gives tensor 'a' the file 1, not a string");
    write_text(index, "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"a\": \"x\"}}");
    CHECK(dir_error(dir) == bad_index + "the index has the key 'a' twice in one object");
  }
  SECTION("a shard name that leaves the directory") {
    for (const char* file :
         {"../model-00001-of-00002.safetensors", "sub/x.safetensors", "..", ".", "", "/etc/passwd"}) {
      weight_map["b"] = file;
      two_shards(dir, weight_map);
      CHECK(dir_error(dir) == bad_index + "the weight_map puts tensor 'b' in '" + file +
                                  "', not a file name inside the directory");
    }
  }
  SECTION("a missing shard") {
    weight_map["c"] = "model-00003.safetensors";
    two_shards(dir, weight_map);
    CHECK(dir_error(dir) == index + " names the shard 'model-00003.safetensors' (for tensor 'c'), which is not a " +
                                "file in " + dir.path.string());
  }
  SECTION("a tensor missing from its shard, in two shards, or not listed") {
    weight_map["ghost"] = "model-00002-of-00002.safetensors";
    two_shards(dir, weight_map);
    CHECK(dir_error(dir) == mismatch + "the weight_map puts tensor 'ghost' in 'model-00002-of-00002.safetensors', " +
                                "which does not hold it");
    two_shards(dir, kWeightMap);
    write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", torch::ones({1})}, {"a", torch::ones({1})}});
    CHECK(dir_error(dir) == mismatch + "tensor 'a' is in two shards, 'model-00001-of-00002.safetensors' and "
                                       "'model-00002-of-00002.safetensors'");
    two_shards(dir, kWeightMap);
    write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", torch::ones({1})}, {"d", torch::ones({1})}});
    CHECK(dir_error(dir) == mismatch + "the shard 'model-00002-of-00002.safetensors' holds tensor 'd', which the "
                                       "weight_map does not list");
  }
  SECTION("an invalid shard names the shard") {
    two_shards(dir, weight_map);
    write_text(dir / "model-00002-of-00002.safetensors", "short");
    CHECK_THAT(dir_error(dir), Catch::StartsWith(dir / "model-00002-of-00002.safetensors" +
                                                 " is not a valid safetensors file: the file has 5 bytes"));
  }
}

namespace {

// RLIMIT_FSIZE lowered for this process with SIGXFSZ ignored, so that write() past the limit fails with EFBIG.
struct FileSizeLimit {
  rlimit saved{};
  struct sigaction saved_action {};
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &ignore, &saved_action);
    rlimit lowered = saved;
    lowered.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved);
    sigaction(SIGXFSZ, &saved_action, nullptr);
  }
};

}  // namespace

TEST_CASE("a write that hits the file size limit (EFBIG) leaves no file and keeps the previous one", "[safetensors]") {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  const std::vector<std::pair<std::string, torch::Tensor>> big = {{"w", torch::ones({256, 1024})}};  // 1 MiB
  const bool previous = GENERATE(false, true);
  if (previous) write_safetensors(path, {{"old", torch::zeros({2})}});
  const std::string before = previous ? read_text(path) : "";
  std::string message;
  {
    FileSizeLimit limit(64 * 1024);
    try {
      write_safetensors(path, big);
    } catch (const SafetensorsError& e) {
      message = e.what();
    }
  }
  INFO(message);
  CHECK(message == "cannot write " + path + ": File too large");
  CHECK(fs::exists(path) == previous);
  if (previous) CHECK(read_text(path) == before);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == (previous ? 1 : 0));
  write_safetensors(path, big);  // without the limit it succeeds
  CHECK(same(SafetensorsFile::open(path).tensor("w"), big[0].second));
}
