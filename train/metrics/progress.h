// Training progress on stderr: a redrawn bar on a terminal, plain lines otherwise.
#pragma once
#include <cstdint>
#include <string>

namespace lmzoo {

struct ProgressPoint {
  int64_t step, total_steps;
  double loss, lr, tokens_per_s, elapsed_s;
  double mfu = 0.0;                // model FLOP/s over the device's measured peak
  int64_t peak_memory_bytes = 0;   // CUDA only (0: not shown)
  int64_t skipped_steps = 0;       // steps skipped for non-finite gradients so far (0: not shown)
};

class Progress {
 public:
  Progress();  // detects whether stderr is a terminal
  void update(const ProgressPoint& p);
  // A message on its own line (eval results, checkpoint notes), not overwritten by the bar.
  void note(const std::string& message);
  void finish();

 private:
  bool tty_;
  bool bar_drawn_ = false;
};

std::string format_duration(double seconds);

}  // namespace lmzoo
