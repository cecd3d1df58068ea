// read_whole_file: a text file's bytes, refusing directories by name.
#include "data/text_file.h"

#include <filesystem>
#include <stdexcept>

#include "data/tokenizer_files.h"

namespace lmzoo {

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path + " is a directory, not a text file");
  return read_file_bytes(path);
}

}  // namespace lmzoo
