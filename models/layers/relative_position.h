// T5 relative position bias: the bucket function (HF T5Attention._relative_position_bucket) and a learned
// (buckets, n_head) table turned into an additive (1, nh, T, S) score bias. One table per stack.
// Leaves out: ALiBi / rotary and other position schemes.
#pragma once
#include <torch/torch.h>

namespace lmzoo {

// Bucket of each relative position (key position - query position; int64 tensor, any shape).
// Bidirectional: half the buckets for keys at or before the query, half (offset by num_buckets / 2) for
// keys after it. Causal: keys after the query share bucket 0. Within a direction, with n buckets, the
// distances 0 .. n/2 - 1 get a bucket each, larger ones log-spaced up to max_distance, then the last bucket.
torch::Tensor relative_position_bucket(const torch::Tensor& relative_position, bool bidirectional,
                                       int64_t num_buckets = 32, int64_t max_distance = 128);

class RelativePositionBiasImpl : public torch::nn::Module {
 public:
  RelativePositionBiasImpl(int64_t n_head, int64_t num_buckets, int64_t max_distance, bool bidirectional);
  // Bias (1, nh, T, S) for queries at positions query_offset .. query_offset + T - 1 and keys 0 .. S - 1.
  torch::Tensor forward(int64_t query_length, int64_t key_length, int64_t query_offset = 0);

  torch::Tensor weight;  // (num_buckets, nh)

 private:
  int64_t num_buckets_, max_distance_;
  bool bidirectional_;
};
TORCH_MODULE(RelativePositionBias);

}  // namespace lmzoo
