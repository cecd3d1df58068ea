// Durable file-system steps with exact errors: files written and fsynced with POSIX calls, directories
// created, fsynced, renamed and removed; every failure throws one line "cannot VERB PATH: strerror".
#pragma once
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

namespace lmzoo {

// What every failure here throws: one line "cannot VERB PATH: strerror(error)", with the errno kept.
struct IoError : std::runtime_error {
  IoError(const std::string& what, int error) : std::runtime_error(what), error(error) {}
  int error;
};

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

// A file opened for appending (created if missing). append() writes a record whole and fsyncs it; when that fails
// (a full disk, EFBIG) it cuts the file back to its size before the record, so the file is as it was, and throws
// "cannot write PATH: cause".
class AppendFile {
 public:
  explicit AppendFile(std::string path);  // throws "cannot open PATH for writing: cause"
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(const std::string& bytes);

 private:
  std::string path_;
  int fd_ = -1;
};

// Writes bytes to path and fsyncs it.
void write_file_durably(const std::string& path, const std::string& bytes);
// Replaces PATH whole: FILL writes into a hidden sibling (.NAME.tmp-PID-N), which is fsynced, renamed over PATH
// and its directory fsynced. On any failure the sibling is removed, PATH is left as it was, and the error is
// thrown as one line "cannot write PATH: cause" (ENOSPC, EFBIG, ... from the first failed write).
void replace_file_durably(const std::string& path, const std::function<void(DurableFile&)>& fill);
void replace_file_durably(const std::string& path, const std::string& bytes);

// A directory written under a hidden sibling of TARGET (.NAME.tmp-PID) and moved into place whole by commit():
// renamed to TARGET when TARGET is absent or empty, else its files renamed over TARGET's, LAST_FILE last. Parent
// directories are created; when not committed (a failure), the sibling and the parents this object created are
// removed and TARGET is left as it was. Siblings of TARGET that dead processes left are removed first.
class StagedDirectory {
 public:
  explicit StagedDirectory(std::string target);  // throws "cannot create PATH: cause"
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  const std::string& path() const { return staging_; }  // where to write
  // Runs WORK(path()); a std::runtime_error it throws is rethrown with path() in its message replaced by TARGET,
  // so that "cannot write TARGET/model.safetensors: No space left on device" names the file the user asked for.
  void fill(const std::function<void(const std::string&)>& work);
  void commit(const std::string& last_file = "");

 private:
  std::string target_, staging_, created_;  // created_: the outermost parent this object made, or ""
  bool committed_ = false;
};
// Removes the hidden siblings .NAME.tmp-PID and .NAME.tmp-PID-N of TARGET that processes no longer alive left
// behind (killed, or stopped by a second Ctrl-C mid-write); those of live processes stay. Errors are ignored.
void remove_dead_processes_siblings(const std::string& target) noexcept;
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
