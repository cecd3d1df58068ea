// Durable file-system steps with POSIX calls, so that errno (ENOSPC, EIO, EACCES, EFBIG, ...) is exact
// and every failure is one line naming the path and the cause.
#include "train/durable_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace lmzoo {

namespace {

[[noreturn]] void fail(const std::string& verb, const std::string& path, int error) {
  throw std::runtime_error("cannot " + verb + " " + path + ": " + std::strerror(error));
}

}  // namespace

DurableFile::DurableFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("write", path_, errno);
}

DurableFile::~DurableFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t DurableFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  size_t left = error_ == 0 && fd_ >= 0 ? n : 0;
  while (left > 0) {
    const ssize_t written = ::write(fd_, p, left);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) {
      error_ = errno;
      break;
    }
    p += written;
    left -= static_cast<size_t>(written);
  }
  return n;
}

void DurableFile::finish() {
  if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
  if (::close(fd_) != 0 && error_ == 0 && errno != EINTR) error_ = errno;
  fd_ = -1;
  if (error_ != 0) fail("write", path_, error_);
}

void write_file_durably(const std::string& path, const std::string& bytes) {
  DurableFile file(path);
  file.write(bytes.data(), bytes.size());
  file.finish();
}

void make_directory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) fail("create", path, errno);
}

void sync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("sync", path, errno);
  // EINVAL: this file system cannot sync directories (its metadata is as durable as it gets).
  const int error = ::fsync(fd) != 0 && errno != EINVAL ? errno : 0;
  ::close(fd);
  if (error != 0) fail("sync", path, error);
}

void rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + from + " to " + to + ": " + std::strerror(errno));
  }
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) throw std::runtime_error("cannot remove " + path + ": " + ec.message());
}

void remove_tree_quietly(const std::string& path) noexcept {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace lmzoo
