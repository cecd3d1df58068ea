// GraphedTrainStep (--cuda-graphs): the training step as one CUDA graph. The first step it is asked for is recorded
// (every micro-batch's forward and backward, the clip, the AdamW step, the skip counters) on static device buffers,
// then replayed for it and every later step; before each replay the batches, their loss weights, the learning rate
// and the Adam step counters are copied in. The trainer runs eagerly whatever it cannot replay, and says why.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/kernels/fused_adamw.h"
#include "train/device/cuda_graph.h"
#include "train/skip_monitor.h"
#include "train/task.h"
#include "train/train_config.h"

namespace lmzoo {

class GraphedTrainStep {
 public:
  // One micro-batch's forward and backward on the device, its loss multiplied by `weight` (0-dim float on the
  // device) before the backward; returns that weighted loss, detached.
  using MicroStep = std::function<torch::Tensor(const TrainBatch& batch, const torch::Tensor& weight)>;

  // Why a run with these settings cannot have its step replayed ("" when it can): the device and build, fp16's
  // host-side loss scale, masked LM (its batches' shapes vary), data-parallel ranks (their gradient buckets),
  // activation checkpointing (it keeps the generators' states on the host).
  static std::string unavailable_reason(const TrainConfig& cfg, const torch::Device& device, bool data_parallel);

  GraphedTrainStep(torch::optim::AdamW& optimizer, SkipMonitor& skips, double grad_clip, MicroStep micro_step);

  // "" when these micro-batches (on the CPU, as the task made them) fit the recorded buffers, or nothing is
  // recorded yet; else how they differ.
  std::string mismatch(const std::vector<TrainBatch>& batches) const;

  // The step on these micro-batches with these loss weights (0-dim, on the CPU), recorded first when nothing is.
  // Returns the summed weighted loss (on the device), or an undefined tensor when recording failed: failure() says
  // why, and nothing of the step ran (the caller runs it eagerly).
  torch::Tensor run(const std::vector<TrainBatch>& batches, const std::vector<torch::Tensor>& weights);
  const std::string& failure() const { return failure_; }

 private:
  std::string record(const std::vector<TrainBatch>& batches);
  void copy_inputs(const std::vector<TrainBatch>& batches, const std::vector<torch::Tensor>& weights);
  void count_step();
  void drop_gradients();

  torch::optim::AdamW& optimizer_;
  SkipMonitor& skips_;
  const double grad_clip_;
  const MicroStep micro_step_;
  CudaGraph graph_;
  std::string failure_;
  // Static buffers the graph reads: the micro-batches and their loss weights; per parameter group the learning
  // rate and the step counters (views of one [n] tensor, filled by one copy) of the parameters with gradients.
  std::vector<TrainBatch> batches_;
  std::vector<torch::Tensor> weights_;
  DeviceAdamWInputs adamw_inputs_;
  torch::Tensor steps_;
  std::vector<torch::Tensor> updated_;  // the parameters the recorded AdamW step updates, group by group
  torch::Tensor loss_sum_;              // what the graph writes
};

}  // namespace lmzoo
