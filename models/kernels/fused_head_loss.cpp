// Fused output layer + cross-entropy: per chunk of rows, logits in the compute dtype, log-sum-exp and softmax in
// fp32 (the chunk only), then the chunk's gradients for hidden, weight and bias, scaled in the backward by the
// loss's upstream gradient. Shapes: N rows, C hidden width, V vocabulary.
#include "models/kernels/fused_head_loss.h"

#include <algorithm>

#include "models/torch_compat.h"

namespace lmzoo {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kGpuChunkLogitBytes = int64_t(128) << 20;
constexpr int64_t kCpuChunkLogitBytes = int64_t(32) << 20;

// The products' dtype: autocast's on this device when it is on, else the hidden states' own.
at::ScalarType compute_dtype(const torch::Tensor& hidden) {
  const auto type = hidden.device().type();
  return compat::is_autocast_enabled(type) ? compat::autocast_dtype(type) : hidden.scalar_type();
}

// The gradients one forward makes, kept for the backward in fp32 (undefined where not wanted).
struct HeadGradients {
  torch::Tensor hidden, weight, bias;
};

HeadGradients zero_gradients(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto fp32 = hidden.options().dtype(torch::kFloat);
  HeadGradients g;
  g.hidden = torch::empty({hidden.size(0), hidden.size(1)}, fp32);  // every chunk writes its rows
  g.weight = torch::zeros({weight.size(0), weight.size(1)}, fp32);
  if (bias.defined()) g.bias = torch::zeros({weight.size(0)}, fp32);
  return g;
}

struct FusedHeadLossFunction : torch::autograd::Function<FusedHeadLossFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& targets, int64_t ignore_index,
                               int64_t chunk_rows, bool make_grads) {
    const at::ScalarType dt = compute_dtype(hidden);
    const int64_t N = hidden.size(0);
    const auto h_all = hidden.to(dt);  // (N, C)
    const auto w = weight.to(dt);      // (V, C)
    const auto b = bias.numel() > 0 ? bias.to(torch::kFloat) : torch::Tensor();  // empty: no bias
    const auto scored = targets != ignore_index;                          // (N) bool
    const auto count = scored.sum().to(torch::kFloat).clamp_min(1.0);     // () on the device: never read back
    const auto row_weight = scored.to(torch::kFloat) / count;             // (N): 1/count where scored, else 0
    const auto safe_targets = torch::where(scored, targets, torch::zeros_like(targets)).unsqueeze(1);  // (N, 1)
    HeadGradients grads = make_grads ? zero_gradients(hidden, weight, b) : HeadGradients{};
    auto loss = torch::zeros({}, hidden.options().dtype(torch::kFloat));
    for (int64_t start = 0; start < N; start += chunk_rows) {
      const int64_t n = std::min(chunk_rows, N - start);
      const auto h = h_all.narrow(0, start, n);                       // (n, C)
      auto logits = torch::matmul(h, w.t()).to(torch::kFloat);        // (n, V) fp32
      if (b.defined()) logits = logits + b;
      auto log_probs = torch::log_softmax(logits, 1);                  // (n, V), one vectorised pass
      const auto t = safe_targets.narrow(0, start, n);                 // (n, 1)
      const auto rw = row_weight.narrow(0, start, n);                  // (n)
      loss = loss - (log_probs.gather(1, t).squeeze(1) * rw).sum();
      if (!make_grads) continue;
      auto g = log_probs.exp_();  // (n, V) the softmax, in place
      g.scatter_add_(1, t, torch::full({n, 1}, -1.0, g.options()));
      g.mul_(rw.unsqueeze(1));  // (softmax - onehot) / count; 0 on rows not scored
      if (grads.bias.defined()) grads.bias.add_(g.sum(0));
      const auto gd = g.to(dt);
      grads.hidden.narrow(0, start, n).copy_(torch::matmul(gd, w));  // (n, C)
      grads.weight.add_(torch::matmul(gd.t(), h));                     // (V, C)
    }
    ctx->saved_data["hidden_dtype"] = int64_t(hidden.scalar_type());
    ctx->saved_data["weight_dtype"] = int64_t(weight.scalar_type());
    if (grads.hidden.defined()) ctx->saved_data["grad_hidden"] = grads.hidden;
    if (grads.weight.defined()) ctx->saved_data["grad_weight"] = grads.weight;
    if (grads.bias.defined()) ctx->saved_data["grad_bias"] = grads.bias;
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    const torch::Tensor go = grad_output[0];  // ()
    auto scaled = [&](const char* key, const char* dtype_key) {
      const auto found = ctx->saved_data.find(key);
      if (found == ctx->saved_data.end()) return torch::Tensor();
      const torch::Tensor g = found->second.toTensor();
      return (g * go.to(g.scalar_type())).to(at::ScalarType(ctx->saved_data[dtype_key].toInt()));
    };
    return {scaled("grad_hidden", "hidden_dtype"), scaled("grad_weight", "weight_dtype"),
            scaled("grad_bias", "weight_dtype"), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

int64_t fused_head_loss_chunk_rows(int64_t vocab, bool on_gpu) {
  const int64_t bytes = on_gpu ? kGpuChunkLogitBytes : kCpuChunkLogitBytes;
  return std::max<int64_t>(64, bytes / (int64_t(sizeof(float)) * std::max<int64_t>(vocab, 1)));
}

torch::Tensor fused_head_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                              const torch::Tensor& targets, int64_t ignore_index, int64_t chunk_rows) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "fused_head_loss: hidden (N, C) and weight (V, C) expected");
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0), "fused_head_loss: targets (N) expected");
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
              "fused_head_loss: bias (V) expected");
  const int64_t rows = chunk_rows > 0 ? chunk_rows : fused_head_loss_chunk_rows(weight.size(0), hidden.is_cuda());
  const bool make_grads = torch::GradMode::is_enabled() &&
                          (hidden.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  // Function::apply needs every tensor argument defined: no bias travels as an empty tensor.
  const torch::Tensor bias_or_empty = bias.defined() ? bias : torch::empty({0}, weight.options());
  return FusedHeadLossFunction::apply(hidden, weight, bias_or_empty, targets, ignore_index, rows, make_grads);
}

}  // namespace lmzoo
