// Checks shared by the process-wide kernel switches (--fused-add-norm, --fused-bias-gelu): off until a scope
// switches them on, nested scopes win while they live, the previous setting comes back after each; on a CPU the
// command line takes the flag, says the run takes the plain ops, refuses a bad value in one line; a run with the
// switch follows the plain run's losses.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"

namespace lmzoo::test {

// Scope(bool) sets the switch that `enabled` reads, for its lifetime.
template <typename Scope>
void check_switch_scopes(bool (*enabled)()) {
  CHECK_FALSE(enabled());
  {
    const Scope on(true);
    CHECK(enabled());
    {
      const Scope off(false);
      CHECK_FALSE(enabled());
    }
    CHECK(enabled());
  }
  CHECK_FALSE(enabled());
}

// A tiny CPU bench with --FLAG notes "NOTE_PREFIX: plain ops (the device is cpu, not a CUDA GPU)" on stderr, one
// without the flag says nothing of it; --FLAG=maybe is one line and exit 2; train --help lists the flag.
inline void check_cpu_run_takes_plain_ops(const std::string& flag, const std::string& note_prefix) {
  auto mentions = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string bench = "bench --vocab-size 99 --steps 3 --skip 1 --batch-size 2 --threads 1";
  const auto r = run_cli(bench + " --" + flag);
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(mentions(r.err, note_prefix + ": plain ops (the device is cpu, not a CUDA GPU)\n"));
  const auto plain = run_cli(bench);
  REQUIRE(plain.exit_code == 0);
  CHECK_FALSE(mentions(plain.err, note_prefix));
  const auto bad = run_cli("bench --vocab-size 99 --steps 3 --" + flag + "=maybe");
  CHECK(bad.exit_code == 2);
  CHECK(count_lines(bad.err) == 1);
  const auto help = run_cli("train --help");
  CHECK(mentions(help.out, "--" + flag));
}

// FUSED has STEPS losses, each within TOLERANCE (relative) of PLAIN's at the same step.
inline void check_losses_follow(const std::vector<double>& plain, const std::vector<double>& fused, size_t steps,
                                double tolerance) {
  REQUIRE(plain.size() == steps);
  REQUIRE(fused.size() == plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(std::abs(fused[i] - plain[i]) <= tolerance * std::abs(plain[i]));
  }
}

}  // namespace lmzoo::test
