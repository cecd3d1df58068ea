// Durable file-system steps with POSIX calls, so that errno (ENOSPC, EIO, EACCES, EFBIG, ...) is exact
// and every failure is one line naming the path and the cause.
#include "base/durable_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& verb, const std::string& path, int error) {
  throw IoError("cannot " + verb + " " + path + ": " + std::strerror(error), error);
}

// The hidden sibling .NAME.tmp-PIDSUFFIX of PATH (a path with a file name).
std::string hidden_sibling(const fs::path& path, const std::string& suffix) {
  return (path.parent_path() / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + suffix))
      .string();
}

// Writes all N bytes of DATA to FD; 0, or the errno of the write that failed.
int write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t written = ::write(fd, p, n);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return errno;
    p += written;
    n -= static_cast<size_t>(written);
  }
  return 0;
}

std::string parent_of(const fs::path& path) { return path.has_parent_path() ? path.parent_path().string() : "."; }

// PATH made absolute and normal, without a trailing separator ("out/" and "." name directories too).
fs::path absolute_target(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
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
  if (error_ == 0 && fd_ >= 0) error_ = write_all(fd_, data, n);
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

AppendFile::AppendFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("open", path_ + " for writing", errno);
}

AppendFile::~AppendFile() { ::close(fd_); }

void AppendFile::append(const std::string& bytes) {
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  int error = size < 0 ? errno : write_all(fd_, bytes.data(), bytes.size());
  if (error == 0 && ::fsync(fd_) != 0) error = errno;
  if (error == 0) return;
  if (size >= 0 && ::ftruncate(fd_, size) == 0) ::fsync(fd_);  // what was there before, exactly
  fail("write", path_, error);
}

void replace_file_durably(const std::string& path, const std::function<void(DurableFile&)>& fill) {
  static std::atomic<unsigned> serial{0};  // distinct names for concurrent writers in one process
  const std::string tmp = hidden_sibling(path, "-" + std::to_string(serial++));
  try {
    DurableFile file(tmp);
    fill(file);
    file.finish();
    rename_path(tmp, path);
    sync_directory(parent_of(path));
  } catch (const IoError& e) {
    remove_tree_quietly(tmp);
    throw IoError("cannot write " + path + ": " + std::strerror(e.error), e.error);
  } catch (...) {
    remove_tree_quietly(tmp);
    throw;
  }
}

void replace_file_durably(const std::string& path, const std::string& bytes) {
  replace_file_durably(path, [&bytes](DurableFile& file) { file.write(bytes.data(), bytes.size()); });
}

// The pid in NAME when it is .PREFIX.tmp-PID or .PREFIX.tmp-PID-N, else 0.
static pid_t staging_pid(const std::string& name, const std::string& prefix) {
  const std::string head = "." + prefix + ".tmp-";
  if (name.compare(0, head.size(), head) != 0) return 0;
  const std::string rest = name.substr(head.size());
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || (digits != std::string::npos && rest[digits] != '-') || rest.size() > 24) return 0;
  return pid_t(std::stoll(rest.substr(0, digits)));
}

void remove_dead_processes_siblings(const std::string& target) noexcept {
  try {
    const fs::path absolute = absolute_target(target);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(absolute.parent_path(), ec)) {
      const pid_t pid = staging_pid(entry.path().filename().string(), absolute.filename().string());
      if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) remove_tree_quietly(entry.path());
    }
  } catch (...) {  // best effort: a directory that cannot be listed keeps its leftovers
  }
}

StagedDirectory::StagedDirectory(std::string target) : target_(std::move(target)) {
  const fs::path absolute = absolute_target(target_);
  remove_dead_processes_siblings(target_);
  const fs::path parent = absolute.parent_path();
  std::error_code ec;
  for (fs::path p = parent; p.has_relative_path() && !fs::exists(p, ec); p = p.parent_path()) created_ = p.string();
  staging_ = hidden_sibling(absolute, "");
  if (fs::exists(absolute, ec) && !fs::is_directory(absolute, ec)) fail("write", target_, ENOTDIR);
  try {
    fs::create_directories(parent, ec);
    if (ec) throw IoError("cannot create " + parent.string() + ": " + ec.message(), ec.value());
    remove_tree(staging_);  // left by an earlier process that had this pid
    make_directory(staging_);
  } catch (...) {
    if (!created_.empty()) remove_tree_quietly(created_);
    throw;
  }
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  remove_tree_quietly(staging_);
  if (!created_.empty()) remove_tree_quietly(created_);
}

void StagedDirectory::fill(const std::function<void(const std::string&)>& work) {
  try {
    work(staging_);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.find(staging_) == std::string::npos) throw;
    fs::path shown = fs::path(target_).lexically_normal();  // as the user gave it, without a trailing '/'
    if (!shown.has_filename() && shown.has_parent_path()) shown = shown.parent_path();
    throw std::runtime_error(replace_all(what, staging_, shown.string()));
  }
}

void StagedDirectory::commit(const std::string& last_file) {
  const fs::path target = absolute_target(target_);
  std::error_code ec;
  if (!fs::exists(target, ec)) {
    rename_path(staging_, target.string());
    sync_directory(target.parent_path().string());
    committed_ = true;
    return;
  }
  if (!fs::is_directory(target, ec)) fail("write", target_, ENOTDIR);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(staging_)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  std::stable_partition(names.begin(), names.end(), [&](const std::string& name) { return name != last_file; });
  for (const auto& name : names) rename_path((fs::path(staging_) / name).string(), (target / name).string());
  sync_directory(target.string());
  committed_ = true;
  remove_tree_quietly(staging_);
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
    const int error = errno;
    throw IoError("cannot rename " + from + " to " + to + ": " + std::strerror(error), error);
  }
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) throw IoError("cannot remove " + path + ": " + ec.message(), ec.value());
}

void remove_tree_quietly(const std::string& path) noexcept {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace lmzoo
