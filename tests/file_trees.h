// What a command left on disk, for fault tests: the bytes of every file under a path, and the hidden entries (the
// temporary siblings a write or checkpoint swap would leave) of a directory.
#pragma once
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tests/cli_helpers.h"

namespace lmzoo::test {

// Relative path -> bytes of every regular file under PATH (a file alone: its name -> its bytes).
inline std::map<std::string, std::string> tree_bytes(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(path)) return {{path.filename().string(), read_text(path)}};
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(path)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), path).string()] = read_text(e.path());
  }
  return files;
}

// The names in DIR that start with a dot, the run lock .lock excepted.
inline std::set<std::string> hidden_entries(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.' && name != ".lock") names.insert(name);
  }
  return names;
}

}  // namespace lmzoo::test
