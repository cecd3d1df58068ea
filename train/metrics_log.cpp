// metrics.jsonl writer, and its cut back to a resumed step.
#include "train/metrics_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace lmzoo {

namespace {
[[noreturn]] void write_failed(const std::string& path) {
  throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno ? errno : EIO));
}
}  // namespace

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error("cannot open " + path + " for writing: " + std::strerror(errno));
}

void MetricsLog::append(const nlohmann::json& record) {
  errno = 0;
  out_ << record.dump() << "\n";
  out_.flush();
  if (!out_) write_failed(path_);
}

void truncate_metrics_after(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("step", int64_t{-1}) >= 0 && record.value("step", int64_t{-1}) <= step) {
      kept += line + "\n";
    }
  }
  in.close();
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(tmp);
  errno = 0;
  bool ok = ::write(fd, kept.data(), kept.size()) == ssize_t(kept.size()) && ::fsync(fd) == 0;
  int error = errno;
  ::close(fd);
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false, error = errno;
  if (!ok) {
    std::remove(tmp.c_str());
    errno = error;
    write_failed(path);
  }
}

}  // namespace lmzoo
