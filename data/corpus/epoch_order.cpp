// Seeded per-epoch permutations (Fisher-Yates), the last epoch's kept.
#include "data/corpus/epoch_order.h"

#include <numeric>
#include <random>
#include <utility>

#include "data/corpus/data_shard.h"

namespace lmzoo {

int64_t EpochOrder::at(int64_t i) const {
  const int64_t epoch = i / n_;
  if (epoch != cached_epoch_) {
    order_.resize(size_t(n_));
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(mix_seed(seed_, uint64_t(epoch), salt_));
    for (size_t k = order_.size(); k > 1; --k) std::swap(order_[k - 1], order_[rng() % k]);
    cached_epoch_ = epoch;
  }
  return order_[size_t(i % n_)];
}

}  // namespace lmzoo
