// The visiting order of N examples over endless epochs: epoch e is a Fisher-Yates permutation seeded by (seed, e, salt),
// so the i-th example of the stream is a pure function of (seed, i) and resuming needs only the step.
#pragma once
#include <cstdint>
#include <vector>

namespace lmzoo {

class EpochOrder {
 public:
  EpochOrder(int64_t n, uint64_t seed, uint64_t salt) : n_(n), seed_(seed), salt_(salt) {}
  // The example at position I of the endless stream (N > 0).
  int64_t at(int64_t i) const;

 private:
  int64_t n_;
  uint64_t seed_, salt_;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> order_;
};

}  // namespace lmzoo
