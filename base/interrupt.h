// Ctrl-C (SIGINT) and SIGTERM for the whole process. While a long loop checks for them (InterruptChecks in scope),
// the first signal asks it to stop at its next check and a second ends the process at once; with no loop
// checking, the first ends the process at once. Either way the exit status is 130 and one line goes to stderr.
// The handler only sets a flag, or writes a prepared line and calls _exit: both async-signal-safe.
#pragma once
#include <stdexcept>
#include <string>

namespace lmzoo {

// Installs the handlers for SIGINT and SIGTERM (also where the shell started the process with them ignored, as a
// script does for a background job); COMMAND names the process in its lines ("lmzoo eval").
void install_interrupt_handlers(const std::string& command);

// True once a signal asked the checking loop to stop.
bool interrupt_requested();

// Thrown by throw_if_interrupted: the command stops with exit 130, having written nothing partial.
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Throws Interrupted ("interrupted while WHAT") when a signal asked to stop.
void throw_if_interrupted(const char* what);

// For its scope, signals are checked by a loop (a fresh request flag at the start); scopes nest.
class InterruptChecks {
 public:
  InterruptChecks();
  ~InterruptChecks();
  InterruptChecks(const InterruptChecks&) = delete;
  InterruptChecks& operator=(const InterruptChecks&) = delete;
};

}  // namespace lmzoo
