// T5 relative position buckets and bias table; the bucket arithmetic follows HF's op for op (float32 log),
// so bucket edges agree with released checkpoints.
// Shapes: T query positions, S key positions, nh heads.
#include "models/layers/relative_position.h"

#include <cmath>

namespace lmzoo {

torch::Tensor relative_position_bucket(const torch::Tensor& relative_position, bool bidirectional,
                                       int64_t num_buckets, int64_t max_distance) {
  auto rp = relative_position.to(torch::kLong);
  auto buckets = torch::zeros_like(rp);
  if (bidirectional) {
    num_buckets /= 2;
    buckets = buckets + (rp > 0).to(torch::kLong) * num_buckets;  // keys after the query: upper half
    rp = rp.abs();
  } else {
    rp = -torch::min(rp, torch::zeros_like(rp));  // distance into the past; the future is 0
  }
  const int64_t max_exact = num_buckets / 2;
  auto is_small = rp < max_exact;
  // log(0) = -inf at rp 0 yields garbage here, never selected (rp 0 is small).
  auto if_large = max_exact + (torch::log(rp.to(torch::kFloat) / max_exact) /
                               std::log(double(max_distance) / double(max_exact)) * (num_buckets - max_exact))
                                  .to(torch::kLong);
  if_large = torch::min(if_large, torch::full_like(if_large, num_buckets - 1));
  return buckets + torch::where(is_small, rp, if_large);
}

RelativePositionBiasImpl::RelativePositionBiasImpl(int64_t n_head, int64_t num_buckets, int64_t max_distance,
                                                   bool bidirectional)
    : num_buckets_(num_buckets), max_distance_(max_distance), bidirectional_(bidirectional) {
  weight = register_parameter("weight", torch::zeros({num_buckets, n_head}));
}

// The bias depends only on the distance key - query, which takes T + S - 1 values: the table is looked up once per
// distance and laid out over (T, S) as a sliding window, so the memory is the (nh, T, S) bias alone, not the
// (T, S) int64 positions and buckets and their temporaries (a 20,000-token encoder input: 3.2 GB each).
torch::Tensor RelativePositionBiasImpl::forward(int64_t query_length, int64_t key_length, int64_t query_offset) {
  auto options = torch::TensorOptions().dtype(torch::kLong).device(weight.device());
  // Distances from the last query's smallest, -(query_offset + T - 1), to the first query's largest, S - 1 - offset.
  const int64_t nearest = -(query_offset + query_length - 1);
  auto distance = torch::arange(nearest, key_length - query_offset, options);  // (T + S - 1)
  auto buckets = relative_position_bucket(distance, bidirectional_, num_buckets_, max_distance_);
  auto by_distance = torch::embedding(weight, buckets).t();  // (nh, T + S - 1)
  // Window r of S entries starts at distance nearest + r; it is query T - 1 - r's row (key j: distance j - query).
  auto windows = by_distance.unfold(1, key_length, 1);  // (nh, T, S), row r for query T - 1 - r
  return windows.flip({1}).unsqueeze(0);                // (1, nh, T, S)
}

}  // namespace lmzoo
