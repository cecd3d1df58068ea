// CudaGraph: CUDA work recorded once and replayed with one launch (at::cuda::CUDAGraph with its own memory pool,
// recorded on a side stream with autocast's cache off); builds without CUDA or on LibTorch < 2.2 never record.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include <torch/torch.h>

namespace lmzoo {

class CudaGraph {
 public:
  CudaGraph();
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Why work on DEVICE cannot be recorded in this build ("" when it can).
  static std::string unavailable_reason(const torch::Device& device);

  // Records what `work` queues on the current device, without running it. Returns "" when recorded, else the
  // first line of why not (an exception from `work`, or CUDA's refusal); nothing is then kept and nothing ran.
  std::string record(const std::function<void()>& work);
  bool recorded() const;
  // Runs the recorded work on the current stream (asynchronously, as the eager kernels would be).
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lmzoo
