// Durable file-system steps with exact errors: files written and fsynced with POSIX calls, directories
// created, fsynced, renamed and removed; every failure throws one line "cannot VERB PATH: strerror".
#pragma once
#include <cstddef>
#include <string>

namespace lmzoo {

// A file being written (created or truncated). write() never fails from the caller's view: the first
// error is kept and later writes are skipped, so a writer that cannot stop midway (torch's zip writer,
// which would throw from its destructor) finishes cleanly; finish() fsyncs, closes and throws
// "cannot write PATH: strerror(errno)" for the first error. The destructor closes without syncing.
class DurableFile {
 public:
  explicit DurableFile(std::string path);  // throws when the file cannot be created
  ~DurableFile();
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  size_t write(const void* data, size_t n);  // returns n
  void finish();

 private:
  std::string path_;
  int fd_ = -1;
  int error_ = 0;  // the first errno seen
};

// Writes bytes to path and fsyncs it.
void write_file_durably(const std::string& path, const std::string& bytes);
// mkdir (the parent must exist); throws "cannot create PATH: ..." (EEXIST included).
void make_directory(const std::string& path);
// fsyncs a directory so that the entries created, renamed or removed in it survive a power loss.
void sync_directory(const std::string& path);
// rename(2); throws "cannot rename FROM to TO: ...".
void rename_path(const std::string& from, const std::string& to);
// Removes a file or a directory tree if present; throws "cannot remove PATH: ..." on failure.
void remove_tree(const std::string& path);
// Removes a tree, ignoring errors (cleanup on a path that is already failing).
void remove_tree_quietly(const std::string& path) noexcept;

}  // namespace lmzoo
