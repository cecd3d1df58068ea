// Helpers for end-to-end CLI tests: run the built lmzoo binary, capture exit code and output.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "lmzoo_build_paths.h"
#include "lmzoo_test_paths.h"

namespace lmzoo::test {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// A fresh empty directory under the system temp dir, removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("lmzoo_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Runs `BINARY ARGS` through the shell (ARGS already quoted); stdin from STDIN_FILE if given.
inline CliResult run_binary(const std::string& binary, const std::string& args, const std::string& stdin_file = "") {
  TempDir tmp;
  std::string cmd = binary + " " + args + " >" + (tmp / "out") + " 2>" + (tmp / "err");
  if (!stdin_file.empty()) cmd += " <" + stdin_file;
  else cmd += " </dev/null";
  CliResult r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(tmp.path / "out");
  r.err = read_text(tmp.path / "err");
  return r;
}

// Runs `lmzoo ARGS` through the shell (ARGS already quoted); stdin from STDIN_FILE if given.
inline CliResult run_cli(const std::string& args, const std::string& stdin_file = "") {
  return run_binary(LMZOO_BINARY, args, stdin_file);
}

// Number of lines in s (a trailing newline does not start a new line).
inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  if (!s.empty() && s.back() != '\n') ++n;
  return n;
}

}  // namespace lmzoo::test
