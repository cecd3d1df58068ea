// RunLock: flock(LOCK_EX | LOCK_NB) on RUN_DIR/.lock; the holder's pid is written into the file for the message.
#include "train/checkpoint/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace lmzoo {

namespace {
std::string holder_pid(int fd) {
  char buffer[32] = {};
  const ssize_t n = pread(fd, buffer, sizeof buffer - 1, 0);
  std::string pid(buffer, n > 0 ? size_t(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "another process" : "process " + pid;
}
}  // namespace

RunLock::RunLock(const std::string& run_dir) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) throw std::runtime_error("cannot create run directory " + run_dir + ": " + ec.message());
  const std::string path = run_dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? holder_pid(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      throw std::runtime_error(run_dir + " is in use by another lmzoo train (" + holder +
                               "); wait for it to finish or use another --out");
    }
    throw std::runtime_error("cannot lock " + path + ": " + std::strerror(error));
  }
  // The pid only makes a second process's message clearer: a failed write leaves the lock held all the same.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace lmzoo
