// Which of LibTorch's attention kernels a CUDA run's scaled_dot_product_attention tries first (--attention-kernel):
// LibTorch's own order, one named, or the fastest at the run's attention shape, each timed alone at the start
// (forward and backward) and reported. The CPU runs lmzoo's own attention and is left as it is.
#pragma once
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/config.h"
#include "train/train_config.h"

namespace lmzoo {

// One attention call as SDPA sees it: q, k and v of (batch, heads, length, head_dim).
struct AttentionShape {
  int64_t batch = 1, heads = 1, length = 1, head_dim = 64;
  torch::ScalarType dtype = torch::kFloat;
  bool causal = true;  // SDPA's own causal path; false: an additive float mask (padding, prefix, position bias)
  double dropout = 0.0;
};
// The shape of the self-attention the run's step computes most (a t5's encoder's).
AttentionShape attention_shape(const ModelConfig& model, const TrainConfig& train);

struct KernelTime {
  AttentionKernel kernel = AttentionKernel::kMath;
  double ms = 0.0;      // forward + backward, the median of the timed repeats (0 when refused)
  std::string refused;  // why the kernel cannot take the shape here ("" when timed)
};

// Each of flash, efficient, cudnn and math alone on DEVICE: forward + backward at SHAPE, the median of `repeats`
// after one untimed call. LibTorch's reasons for refusing a kernel are kept, not printed.
std::vector<KernelTime> time_attention_kernels(const AttentionShape& shape, const torch::Device& device,
                                               int repeats = 5);
// The fastest kernel timed; kDefault when none was.
AttentionKernel fastest_kernel(const std::vector<KernelTime>& times);
// "cudnn 0.38 ms (chosen), flash 0.41 ms, efficient 0.60 ms, math 2.10 ms" (refused ones with their reason).
std::string attention_report(const std::vector<KernelTime>& times, AttentionKernel chosen);

// For its lifetime SDPA tries KERNEL first and falls back to the others for shapes it refuses (math: the fused
// kernels off); afterwards the process's settings are as they were. kDefault and kFastest change nothing.
class PreferredAttentionKernel {
 public:
  explicit PreferredAttentionKernel(AttentionKernel kernel);
  ~PreferredAttentionKernel();
  PreferredAttentionKernel(const PreferredAttentionKernel&) = delete;
  PreferredAttentionKernel& operator=(const PreferredAttentionKernel&) = delete;

 private:
  std::vector<bool> enabled_;    // flash, efficient, math, cudnn as found
  std::vector<int64_t> order_;   // the priority order as found (LibTorch >= 2.6)
};

}  // namespace lmzoo
