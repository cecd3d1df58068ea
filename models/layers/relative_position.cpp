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

torch::Tensor RelativePositionBiasImpl::forward(int64_t query_length, int64_t key_length, int64_t query_offset) {
  auto options = torch::TensorOptions().dtype(torch::kLong).device(weight.device());
  auto query = torch::arange(query_offset, query_offset + query_length, options).view({-1, 1});  // (T, 1)
  auto key = torch::arange(key_length, options).view({1, -1});                                  // (1, S)
  auto buckets = relative_position_bucket(key - query, bidirectional_, num_buckets_, max_distance_);  // (T, S)
  auto bias = torch::embedding(weight, buckets);  // (T, S, nh)
  return bias.permute({2, 0, 1}).unsqueeze(0);     // (1, nh, T, S)
}

}  // namespace lmzoo
