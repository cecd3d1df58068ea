// The CLI's error boundary: user errors become one line on stderr and a non-zero exit.
#pragma once
#include <stdexcept>
#include <string>

namespace lmzoo::cli {

// Thrown for mistakes a user can fix (bad flag value, missing file); message is the whole line.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs fn, mapping every exception to "lmzoo <command>: error: <message>" and exit code 1/2.
int guarded(const char* command, int (*fn)(int, char**), int argc, char** argv);

}  // namespace lmzoo::cli
