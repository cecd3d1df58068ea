// The CLI's error boundary: user errors become one line on stderr and a non-zero exit.
#pragma once
#include <stdexcept>
#include <string>

namespace lmzoo::cli {

// Exit codes: 0 success; 2 a usage error: the command line itself is wrong (an unknown command, action or flag,
// a missing required flag, a flag value that does not parse, is out of range or not in its set, flags that
// contradict each other or do not apply to what they were given); 1 a runtime error: the command line is fine
// but what it names is not (a missing, unreadable or corrupt file, text that is not UTF-8, a mismatched tokenizer,
// an I/O failure); 130 a command stopped by SIGINT/SIGTERM (a training run after saving last/, generate after
// printing what it produced; see base/interrupt.h).

// Thrown for mistakes in the command line; message is the whole line. Exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs fn, mapping every exception to one line "lmzoo <command>: error: <message>": exit code 2 for UsageError,
// cxxopts' parse errors and std::invalid_argument (which lmzoo throws only for values the user gave: flags,
// --config, the validate() of model and training configs), 1 for everything else; and Interrupted to
// "lmzoo <command>: interrupted while ..." with exit code 130.
int guarded(const char* command, int (*fn)(int, char**), int argc, char** argv);

}  // namespace lmzoo::cli
