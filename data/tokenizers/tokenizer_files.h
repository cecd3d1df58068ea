// A tokenizer's files held in memory (name -> bytes): reading them, writing them durably into a directory, and
// materialising them in a temporary directory for loaders that read paths. Leaves out: which files a kind has.
#pragma once
#include <map>
#include <string>

#include "base/text_file.h"  // read_file_bytes, which the readers of tokenizer files use

namespace lmzoo {

using TokenizerFiles = std::map<std::string, std::string>;  // file name -> bytes

// Writes each file into DIR (created if missing), each fsynced, then DIR; throws "cannot write PATH: reason".
void write_files_durably(const std::string& dir, const TokenizerFiles& files);

// A fresh private directory holding FILES, removed (quietly) when it goes out of scope.
class TempFilesDir {
 public:
  explicit TempFilesDir(const TokenizerFiles& files);
  ~TempFilesDir();
  TempFilesDir(const TempFilesDir&) = delete;
  TempFilesDir& operator=(const TempFilesDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace lmzoo
