// Tokenizer files in memory: read whole, written durably (base/durable_io.h), or placed in a temporary directory.
#include "data/tokenizers/tokenizer_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "base/durable_io.h"

namespace fs = std::filesystem;

namespace lmzoo {

void write_files_durably(const std::string& dir, const TokenizerFiles& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  for (const auto& [name, bytes] : files) write_file_durably((fs::path(dir) / name).string(), bytes);
  sync_directory(dir);
}

TempFilesDir::TempFilesDir(const TokenizerFiles& files) {
  std::random_device device;
  const fs::path base = fs::temp_directory_path() / ("lmzoo-tokenizer-" + std::to_string(::getpid()) + "-" +
                                                     std::to_string(device()));
  fs::create_directories(base);
  path_ = base.string();
  for (const auto& [name, bytes] : files) {
    std::ofstream out(base / name, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (out) continue;
    std::error_code ec;
    fs::remove_all(base, ec);
    throw std::runtime_error("cannot write " + (base / name).string());
  }
}

TempFilesDir::~TempFilesDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace lmzoo
