// Data-parallel gradients: sums every parameter's gradient over the ranks in buckets (DDP's scheme), each bucket
// sent as soon as the backward pass has accumulated all its gradients, so communication overlaps the rest of the
// backward. Micro-steps that only accumulate send nothing. Leaves out: how the loss is normalised (the trainer
// scales each rank's loss by its share of the global target count, so the sum is the global mean's gradient).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "train/distributed/communicator.h"

namespace lmzoo {

class GradientSync {
 public:
  // DDP's defaults: 25 MiB buckets, the first (the last layers' gradients, ready first) 1 MiB.
  static constexpr int64_t kBucketBytes = 25 << 20, kFirstBucketBytes = 1 << 20;

  // Buckets `parameters` (those that need gradients, each once) in reverse order and hooks their gradient
  // accumulators.
  GradientSync(const std::vector<torch::Tensor>& parameters, Communicator& communicator,
               int64_t bucket_bytes = kBucketBytes, int64_t first_bucket_bytes = kFirstBucketBytes);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Before each micro-step's backward: whether this one sends (the last micro-step of an optimizer step).
  void prepare(bool send);
  // After the sending backward: sends the buckets no gradient reached, waits for all, and writes the sums into
  // the parameters' .grad (one the graph did not reach, such as BERT's pooler under masked LM, keeps none).
  void finish();
  int64_t bucket_count() const;

  struct State;  // buckets and readiness, shared with the autograd hooks (gradient_sync.cpp)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace lmzoo
