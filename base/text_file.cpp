// read_file_bytes and read_whole_file: a file's bytes, the latter refusing directories by name.
#include "base/text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lmzoo {

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path + " is a directory, not a text file");
  return read_file_bytes(path);
}

}  // namespace lmzoo
