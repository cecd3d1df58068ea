// Attention kernel choice: SDPA's per-kernel switches (and, from LibTorch 2.6, its priority order) set for one
// kernel at a time while it is timed, then for the run; LibTorch's reasons for refusing a kernel are caught.
#include "train/device/attention_kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "models/torch_compat.h"

#define LMZOO_HAS_SDP_CUDNN LMZOO_TORCH_AT_LEAST(2, 5)
#define LMZOO_HAS_SDP_ORDER LMZOO_TORCH_AT_LEAST(2, 6)

namespace lmzoo {

namespace {

constexpr AttentionKernel kTimedKernels[] = {AttentionKernel::kFlash, AttentionKernel::kEfficient,
                                             AttentionKernel::kCudnn, AttentionKernel::kMath};

#if LMZOO_HAS_SDPA
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// SDPA's switches: flash, efficient, math, cudnn.
std::vector<bool> sdp_switches() {
  auto& c = at::globalContext();
  bool cudnn = false;
#if LMZOO_HAS_SDP_CUDNN
  cudnn = c.userEnabledCuDNNSDP();
#endif
  return {c.userEnabledFlashSDP(), c.userEnabledMemEfficientSDP(), c.userEnabledMathSDP(), cudnn};
}

void set_sdp_switches(const std::vector<bool>& on) {
  auto& c = at::globalContext();
  c.setSDPUseFlash(on[0]);
  c.setSDPUseMemEfficient(on[1]);
  c.setSDPUseMath(on[2]);
#if LMZOO_HAS_SDP_CUDNN
  c.setSDPUseCuDNN(on[3]);
#endif
}

std::vector<bool> only(AttentionKernel kernel) {
  return {kernel == AttentionKernel::kFlash, kernel == AttentionKernel::kEfficient, kernel == AttentionKernel::kMath,
          kernel == AttentionKernel::kCudnn};
}

// Keeps LibTorch's warnings (why a kernel was refused) out of stderr while it is alive.
class QuietWarnings : public c10::WarningHandler {
 public:
  QuietWarnings() : guard_(this) {}
  void process(const c10::Warning&) override {}

 private:
  c10::WarningUtils::WarningHandlerGuard guard_;
};

void wait_for(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
}

// Forward + backward of SDPA with KERNEL alone; its median time, or why it was refused.
KernelTime time_one(AttentionKernel kernel, const AttentionShape& s, const torch::Device& device, int repeats) {
  KernelTime t;
  t.kernel = kernel;
#if !LMZOO_HAS_SDP_CUDNN
  if (kernel == AttentionKernel::kCudnn) {
    t.refused = "not in LibTorch before 2.5";
    return t;
  }
#endif
  const std::vector<bool> before = sdp_switches();
  set_sdp_switches(only(kernel));
  try {
    QuietWarnings quiet;
    const auto options = torch::TensorOptions().dtype(s.dtype).device(device);
    const std::vector<int64_t> sizes = {s.batch, s.heads, s.length, s.head_dim};
    const torch::Tensor q = torch::randn(sizes, options).requires_grad_(), k = torch::randn(sizes, options).requires_grad_(),
                        v = torch::randn(sizes, options).requires_grad_(), grad = torch::randn(sizes, options);
    c10::optional<torch::Tensor> mask;
    if (!s.causal) mask = torch::zeros({s.batch, 1, s.length, s.length}, options);  // (B, 1, T, T) additive
    auto call = [&] {
      const torch::Tensor out = at::scaled_dot_product_attention(q, k, v, mask, s.dropout, s.causal);
      torch::autograd::grad({out}, {q, k, v}, {grad});
    };
    call();
    wait_for(device);
    std::vector<double> ms;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      const auto start = std::chrono::steady_clock::now();
      call();
      wait_for(device);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    t.ms = ms[ms.size() / 2];
  } catch (const c10::Error& e) {
    t.refused = first_line(e.what_without_backtrace());
  }
  set_sdp_switches(before);
  return t;
}
#endif

}  // namespace

AttentionShape attention_shape(const ModelConfig& model, const TrainConfig& train) {
  AttentionShape s;
  s.batch = train.batch_size;
  s.heads = model.n_head;
  s.length = model.max_seq_len;
  s.head_dim = model.head_size();
  s.dtype = train.precision == Precision::kBf16   ? torch::kBFloat16
            : train.precision == Precision::kFp16 ? torch::kHalf
                                                  : torch::kFloat;
  // gpt's next-token objectives: SDPA's causal path, unless prefixes, packed segments or a position bias need a mask.
  const bool plain_causal = train.objective == Objective::kCausal;
  const bool biased = model.position == Position::kAlibi || model.position == Position::kRelative;
  s.causal = model.arch == Arch::kGpt && plain_causal && !biased;
  s.dropout = model.dropout;
  return s;
}

std::vector<KernelTime> time_attention_kernels(const AttentionShape& shape, const torch::Device& device, int repeats) {
  std::vector<KernelTime> times;
  for (AttentionKernel kernel : kTimedKernels) {
#if LMZOO_HAS_SDPA
    times.push_back(time_one(kernel, shape, device, repeats));
#else
    (void)shape, (void)device, (void)repeats;
    times.push_back({kernel, 0.0, "scaled_dot_product_attention needs LibTorch 2.1 or later"});
#endif
  }
  return times;
}

AttentionKernel fastest_kernel(const std::vector<KernelTime>& times) {
  const KernelTime* best = nullptr;
  for (const KernelTime& t : times) {
    if (t.refused.empty() && (!best || t.ms < best->ms)) best = &t;
  }
  return best ? best->kernel : AttentionKernel::kDefault;
}

std::string attention_report(const std::vector<KernelTime>& times, AttentionKernel chosen) {
  std::vector<KernelTime> sorted = times;
  std::stable_sort(sorted.begin(), sorted.end(), [](const KernelTime& a, const KernelTime& b) {
    return a.refused.empty() && (!b.refused.empty() || a.ms < b.ms);
  });
  std::string report;
  for (const KernelTime& t : sorted) {
    if (!report.empty()) report += ", ";
    if (!t.refused.empty()) {
      report += enum_name(t.kernel) + " refused (" + t.refused + ")";
      continue;
    }
    char ms[32];
    std::snprintf(ms, sizeof ms, " %.3f ms", t.ms);
    report += enum_name(t.kernel) + ms + (t.kernel == chosen ? " (chosen)" : "");
  }
  if (chosen == AttentionKernel::kDefault) report += "; none could be timed: LibTorch's own order";
  return report;
}

PreferredAttentionKernel::PreferredAttentionKernel(AttentionKernel kernel) {
#if LMZOO_HAS_SDPA
  enabled_ = sdp_switches();
  if (kernel == AttentionKernel::kDefault || kernel == AttentionKernel::kFastest) return;
  if (kernel == AttentionKernel::kMath) {
    set_sdp_switches(only(AttentionKernel::kMath));
    return;
  }
#if LMZOO_HAS_SDP_ORDER
  // The kernel first, the others after it in the order found: a shape it refuses still gets a fused kernel.
  auto& c = at::globalContext();
  for (at::SDPBackend b : c.sDPPriorityOrder()) order_.push_back(int64_t(b));
  const int64_t first = int64_t(kernel == AttentionKernel::kFlash       ? at::SDPBackend::flash_attention
                                : kernel == AttentionKernel::kEfficient ? at::SDPBackend::efficient_attention
                                                                        : at::SDPBackend::cudnn_attention);
  std::vector<int64_t> order = {first};
  for (int64_t b : order_) {
    if (b != first) order.push_back(b);
  }
  c.setSDPPriorityOrder(order);
#else
  // No priority order before LibTorch 2.6: the other fused kernels off, math kept for shapes it refuses.
  std::vector<bool> on = only(kernel);
  on[2] = true;
  set_sdp_switches(on);
#endif
#else
  (void)kernel;
#endif
}

PreferredAttentionKernel::~PreferredAttentionKernel() {
#if LMZOO_HAS_SDPA
  if (!enabled_.empty()) set_sdp_switches(enabled_);
#if LMZOO_HAS_SDP_ORDER
  if (!order_.empty()) at::globalContext().setSDPPriorityOrder(order_);
#endif
#endif
}

}  // namespace lmzoo
