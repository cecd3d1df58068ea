// Tokenizer files in memory: read whole, written with write(2) + fsync, or placed in a temporary directory.
#include "data/tokenizer_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace lmzoo {

namespace {

[[noreturn]] void fail(const std::string& verb, const std::string& path, int error) {
  throw std::runtime_error("cannot " + verb + " " + path + ": " + std::strerror(error));
}

// Opens PATH (O_RDONLY for a directory), fsyncs and closes it.
void write_and_sync(const std::string& path, const std::string* bytes) {
  const int fd = bytes ? ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                       : ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("write", path, errno);
  for (size_t done = 0; bytes && done < bytes->size();) {
    const ssize_t n = ::write(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      fail("write", path, error);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 && bytes) {
    const int error = errno;
    ::close(fd);
    fail("write", path, error);
  }
  if (::close(fd) != 0 && bytes) fail("write", path, errno);
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_files_durably(const std::string& dir, const TokenizerFiles& files) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  for (const auto& [name, bytes] : files) write_and_sync((fs::path(dir) / name).string(), &bytes);
  write_and_sync(dir, nullptr);
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
