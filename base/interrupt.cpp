// The process's SIGINT/SIGTERM handler: a flag for checking loops, or _exit(130) with a prepared line.
#include "base/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace lmzoo {

namespace {

std::atomic<int> g_checking{0};          // InterruptChecks scopes alive
std::atomic<bool> g_requested{false};    // a signal asked the checking loop to stop
char g_now_line[256] = "lmzoo: interrupted\n";  // what a signal that ends the process at once writes
char g_again_line[256] = "lmzoo: interrupted again: stopped at once\n";

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

void write_line(const char* line) {
  const size_t n = std::strlen(line);
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(STDERR_FILENO, line + done, n - done);
    if (w <= 0) break;
    done += size_t(w);
  }
}

void on_signal(int) {
  if (g_checking.load() > 0 && !g_requested.exchange(true)) return;  // the loop stops at its next check
  write_line(g_requested.load() && g_checking.load() > 0 ? g_again_line : g_now_line);
  ::_exit(130);
}

void copy_line(char* to, size_t size, const std::string& text) {
  std::strncpy(to, text.c_str(), size - 2);
  to[size - 2] = '\0';
  std::strcat(to, "\n");
}

}  // namespace

void install_interrupt_handlers(const std::string& command) {
  copy_line(g_now_line, sizeof g_now_line, command + ": interrupted");
  copy_line(g_again_line, sizeof g_again_line,
            command + ": interrupted again: stopped at once (files are written whole or not at all)");
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

bool interrupt_requested() { return g_requested.load(); }

void throw_if_interrupted(const char* what) {
  if (g_requested.load()) throw Interrupted(std::string("interrupted while ") + what);
}

InterruptChecks::InterruptChecks() {
  if (g_checking.fetch_add(1) == 0) g_requested = false;
}

InterruptChecks::~InterruptChecks() { g_checking.fetch_sub(1); }

}  // namespace lmzoo
