// ZeRO stage 1 (DeepSpeed's, torch's ZeroRedundancyOptimizer, llm.c's -z 1): each rank keeps the AdamW moments of
// its own share of the parameters and updates only those; the owners then broadcast the new values, so every rank
// holds the whole model and about 1/N of the optimizer state. The gradients are still summed whole on every rank
// (gradient_sync.h), so each rank measures the global clipping norm itself, with the bits of an unsharded run.
// Checkpoints hold the whole optimizer (gathered to rank 0), so a run resumes with or without sharding, on any
// number of ranks.
#pragma once
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "train/checkpoint/checkpoint.h"
#include "train/distributed/communicator.h"
#include "train/optimizer.h"

namespace lmzoo {

// The rank that owns each tensor of `sizes` (element counts): largest first, each to the least loaded rank (the
// lowest on a tie), so no rank holds more than the lightest plus the largest tensor.
std::vector<int> assign_owners(const std::vector<int64_t>& sizes, int world_size);

class OptimizerShards {
 public:
  // Shares `model`'s trainable parameters out over the ranks of `comm` and builds this rank's AdamW over its own.
  OptimizerShards(torch::nn::Module& model, const TrainConfig& config, Communicator& comm);

  // This rank's optimizer: its parameters only, in the whole optimizer's two groups.
  torch::optim::AdamW& local() { return *local_; }
  // Every parameter's current gradient (the defined ones), in the whole optimizer's order: what the step's norm
  // is taken over (clip_and_adamw_step's norm_of).
  std::vector<torch::Tensor> gradients() const;
  // After this rank's step: every rank receives every owner's updated parameters (one broadcast per rank).
  void share_updates();

  // Collective: the whole optimizer, as one process would hold it, on rank 0 (null on the others, which only
  // send). Each parameter's state travels alone, so a sending rank never holds more than its own share plus one
  // tensor's; rank 0 gathers into host memory (on a GPU run its device keeps only its share).
  std::unique_ptr<torch::optim::AdamW> gather_to_rank0();
  // Every rank reads a checkpoint's whole optimizer.pt and keeps the state of its own parameters.
  void load(const CheckpointInfo& checkpoint);

  // Parameter elements whose moments this rank keeps, and in all.
  int64_t owned_elements() const;
  int64_t total_elements() const;

 private:
  Communicator& comm_;
  const TrainConfig config_;
  ParameterGroups all_;               // the whole optimizer's parameters
  std::vector<torch::Tensor> order_;  // all_.in_order()
  std::vector<int> owner_;            // per parameter of order_
  std::unique_ptr<torch::optim::AdamW> local_;
};

}  // namespace lmzoo
