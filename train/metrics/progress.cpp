// Progress bar / plain progress lines: step, loss, lr, tokens/s, MFU, peak GPU memory, skipped steps, ETA.
#include "train/metrics/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace lmzoo {

std::string format_duration(double seconds) {
  const int64_t s = seconds < 0 ? 0 : int64_t(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", long(s / 3600), long(s / 60 % 60), long(s % 60));
  else std::snprintf(buf, sizeof buf, "%02ld:%02ld", long(s / 60), long(s % 60));
  return buf;
}

Progress::Progress() : tty_(isatty(STDERR_FILENO)) {}

void Progress::update(const ProgressPoint& p) {
  const double done = double(p.step) / double(p.total_steps);
  const double eta = p.step > 0 ? p.elapsed_s / done * (1.0 - done) : 0.0;
  char memory[48] = "";
  if (p.peak_memory_bytes > 0) std::snprintf(memory, sizeof memory, " | peak mem %.2f GiB", p.peak_memory_bytes / 1073741824.0);
  char skipped[40] = "";
  if (p.skipped_steps > 0) std::snprintf(skipped, sizeof skipped, " | skipped %ld", long(p.skipped_steps));
  char stats[256];
  std::snprintf(stats, sizeof stats, "step %ld/%ld | loss %.4f | lr %.2e | %.0f tok/s | MFU %.1f%%%s%s | ETA %s",
                long(p.step), long(p.total_steps), p.loss, p.lr, p.tokens_per_s, 100.0 * p.mfu, memory, skipped,
                format_duration(eta).c_str());
  if (!tty_) {
    std::cerr << stats << "\n";
    return;
  }
  constexpr int kWidth = 24;
  const int filled = int(done * kWidth);
  std::string bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
  std::cerr << "\r\033[K" << bar << stats << std::flush;
  bar_drawn_ = true;
}

void Progress::note(const std::string& message) {
  if (bar_drawn_) std::cerr << "\r\033[K";
  std::cerr << message << "\n";
  bar_drawn_ = false;
}

void Progress::finish() {
  if (bar_drawn_) std::cerr << "\n";
  bar_drawn_ = false;
}

}  // namespace lmzoo
