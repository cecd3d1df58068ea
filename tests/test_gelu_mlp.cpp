// --fused-bias-gelu: the feed-forward as one function (gelu_mlp) gives LibTorch's linear -> tanh GELU -> linear
// values and gradients (its backward is written by hand); where it runs and why not elsewhere; on a GPU ([cuda])
// cuBLASLt's epilogues give the same values, in a layer, a model and a training run.
#include "tests/catch_compat.h"

#include <cmath>
#include <vector>

#include "lmzoo_build_config.h"
#include "models/gpt.h"
#include "models/kernels/cpu_features.h"
#include "models/kernels/gelu_mlp.h"
#include "models/layers/feed_forward.h"
#include "models/torch_compat.h"
#include "tests/model_fixtures.h"
#include "tests/switch_scope_checks.h"
#include "tests/train_run_helpers.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// Largest |a - b| over all elements, in double.
double max_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

// The five operands of a feed-forward layer: x (2, 7, in), c_fc (hidden, in) and (hidden), c_proj (out, hidden) and
// (out); the biases undefined when !bias. All require grad.
struct MlpOperands {
  torch::Tensor x, fc_weight, fc_bias, proj_weight, proj_bias;

  MlpOperands(int64_t in, int64_t hidden, int64_t out, bool bias, torch::TensorOptions options) {
    const auto dtype = torch::typeMetaToScalarType(options.dtype());  // the default dtype where options has none
    auto make = [&](std::vector<int64_t> sizes, double scale) {
      return (torch::randn(sizes, torch::kDouble) * scale).to(options.device(), dtype).requires_grad_();
    };
    x = make({2, 7, in}, 1.0);
    fc_weight = make({hidden, in}, 1.0 / std::sqrt(double(in)));
    proj_weight = make({out, hidden}, 1.0 / std::sqrt(double(hidden)));
    if (bias) {
      fc_bias = make({hidden}, 0.5);
      proj_bias = make({out}, 0.5);
    }
  }

  std::vector<torch::Tensor> all() const { return {x, fc_weight, fc_bias, proj_weight, proj_bias}; }

  void zero_grad() const {
    for (const auto& t : all()) {
      if (t.defined() && t.grad().defined()) t.mutable_grad() = torch::Tensor();
    }
  }
};

// The output and the operands' gradients (undefined where an operand is) after backward with `upstream`.
std::vector<torch::Tensor> output_and_grads(const MlpOperands& m, const torch::Tensor& y,
                                            const torch::Tensor& upstream) {
  y.backward(upstream);
  std::vector<torch::Tensor> values = {y.detach().clone()};
  for (const auto& t : m.all()) values.push_back(t.defined() ? t.grad().clone() : torch::Tensor());
  m.zero_grad();
  return values;
}

// LibTorch's own layers: linear, tanh GELU, linear.
torch::Tensor plain_mlp(const MlpOperands& m) {
  return torch::linear(torch::gelu(torch::linear(m.x, m.fc_weight, m.fc_bias), "tanh"), m.proj_weight, m.proj_bias);
}

// Compares gelu_mlp's output and gradients with the plain layers', each within tolerance x (its largest
// magnitude + 1).
void check_against_plain(const MlpOperands& m, double tolerance) {
  const auto upstream = torch::randn({2, 7, m.proj_weight.size(0)}, m.x.options().requires_grad(false));
  const auto plain = output_and_grads(m, plain_mlp(m), upstream);
  const auto fused =
      output_and_grads(m, gelu_mlp(m.x, m.fc_weight, m.fc_bias, m.proj_weight, m.proj_bias), upstream);
  const char* names[] = {"output", "dx", "d fc_weight", "d fc_bias", "d proj_weight", "d proj_bias"};
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO(names[i]);
    REQUIRE(plain[i].defined() == fused[i].defined());
    if (!plain[i].defined()) continue;
    CHECK(fused[i].scalar_type() == plain[i].scalar_type());
    CHECK(fused[i].sizes() == plain[i].sizes());
    const double scale = plain[i].abs().max().item<double>() + 1.0;
    CHECK(max_difference(fused[i], plain[i]) <= tolerance * scale);
  }
}

// fp32 matrix products in full fp32 (no TF32) on both paths while it lives; the previous setting afterwards.
class FullFp32Products {
 public:
  FullFp32Products() : previous_(at::globalContext().float32MatmulPrecision()) {
    at::globalContext().setFloat32MatmulPrecision("highest");
  }
  ~FullFp32Products() {
    at::globalContext().setFloat32MatmulPrecision(previous_ == at::Float32MatmulPrecision::HIGHEST ? "highest"
                                                  : previous_ == at::Float32MatmulPrecision::HIGH  ? "high"
                                                                                                   : "medium");
  }

 private:
  at::Float32MatmulPrecision previous_;
};

ModelConfig tanh_gelu_gpt() {
  ModelConfig config = tiny_gpt_config();
  config.activation = Activation::kGeluTanh;
  config.bias = true;
  config.dropout = 0.0;
  return config;
}

}  // namespace

TEST_CASE("fused bias + GELU: off until a scope switches it on, restored after the scope", "[gelu_mlp]") {
  check_switch_scopes<FusedBiasGeluScope>(fused_bias_gelu_enabled);
}

TEST_CASE("fused bias + GELU: the reason it cannot run names the device, the activation, the width, the build",
          "[gelu_mlp]") {
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA, 0);
  ModelConfig gpt = tanh_gelu_gpt();
  CHECK(fused_bias_gelu_unavailable_reason(cpu, gpt) == "the device is cpu, not a CUDA GPU");
  CHECK(fused_bias_gelu_unavailable_reason(cuda, tiny_bert_config()) ==
        "the activation is gelu; cuBLASLt's epilogue computes gelu-tanh");
  CHECK(fused_bias_gelu_unavailable_reason(cuda, tiny_t5_config(/*gated=*/true)) ==
        "the activation is geglu; cuBLASLt's epilogue computes gelu-tanh");
  ModelConfig narrow = gpt;
  narrow.d_model = 33;  // feed-forward 4 x 33 = 132
  narrow.n_head = 3;
  CHECK(fused_bias_gelu_unavailable_reason(cuda, narrow) == "the feed-forward width 132 is not a multiple of 8");
  const std::string reason = fused_bias_gelu_unavailable_reason(cuda, gpt);
  INFO(reason);
  if (!LMZOO_WITH_CUDA_KERNELS) {
    CHECK(reason == "this build has no CUDA kernels of lmzoo's own (built without a CUDA compiler)");
  } else if (!kernels::switched_off()) {
    CHECK(reason.empty());
  }
}

TEST_CASE("gelu_mlp: values and hand-written gradients equal LibTorch's linear, tanh GELU, linear (CPU)",
          "[gelu_mlp]") {
  torch::manual_seed(3);
  SECTION("double, with biases: to rounding") {
    check_against_plain(MlpOperands(16, 64, 12, true, torch::TensorOptions().dtype(torch::kDouble)), 1e-12);
  }
  SECTION("double, without biases") {
    check_against_plain(MlpOperands(16, 64, 12, false, torch::TensorOptions().dtype(torch::kDouble)), 1e-12);
  }
  SECTION("float, with biases") {
    check_against_plain(MlpOperands(24, 96, 24, true, torch::TensorOptions()), 2e-5);
  }
  SECTION("frozen weights: only the input's gradient") {
    MlpOperands m(8, 32, 8, true, torch::TensorOptions().dtype(torch::kDouble));
    for (auto* t : {&m.fc_weight, &m.fc_bias, &m.proj_weight, &m.proj_bias}) *t = t->detach();
    const auto y = gelu_mlp(m.x, m.fc_weight, m.fc_bias, m.proj_weight, m.proj_bias);
    const auto upstream = torch::randn(y.sizes(), y.options());
    y.backward(upstream);
    const auto dx = m.x.grad().clone();
    m.x.mutable_grad() = torch::Tensor();
    plain_mlp(m).backward(upstream);
    CHECK(max_difference(dx, m.x.grad()) <= 1e-12 * (m.x.grad().abs().max().item<double>() + 1.0));
    CHECK_FALSE(m.fc_weight.grad().defined());
  }
}

TEST_CASE("gelu_mlp: under autocast it computes in autocast's dtype and the fp32 weights get fp32 gradients",
          "[gelu_mlp]") {
  torch::manual_seed(4);
  MlpOperands m(16, 64, 16, true, torch::TensorOptions());
  const auto upstream = torch::randn({2, 7, 16});
  const auto exact = output_and_grads(m, plain_mlp(m), upstream);
  compat::set_autocast(c10::DeviceType::CPU, true, torch::kBFloat16);
  const auto y = gelu_mlp(m.x, m.fc_weight, m.fc_bias, m.proj_weight, m.proj_bias);
  compat::set_autocast(c10::DeviceType::CPU, false);
  at::autocast::clear_cache();
  CHECK(y.scalar_type() == torch::kBFloat16);
  const auto low = output_and_grads(m, y, upstream.to(torch::kBFloat16));
  for (size_t i = 0; i < exact.size(); ++i) {
    INFO("tensor " << i << " (0: output, then the operands' gradients)");
    if (i > 0) CHECK(low[i].scalar_type() == torch::kFloat);
    // bf16 keeps 8 bits of mantissa: a few of its steps on sums of 16 to 64 products.
    CHECK(max_difference(low[i], exact[i]) <= 5e-2 * (exact[i].abs().max().item<double>() + 1.0));
  }
}

TEST_CASE("fused bias + GELU: CPU tensors take the plain layers even when switched on", "[gelu_mlp]") {
  const FusedBiasGeluScope on(true);
  const MlpOperands m(8, 32, 8, true, torch::TensorOptions());
  CHECK_FALSE(fused_bias_gelu_applies(m.x, m.fc_weight, m.fc_bias, m.proj_weight, m.proj_bias));
  CHECK_FALSE(fused_bias_gelu_applies(m.x, m.fc_weight, torch::Tensor(), m.proj_weight, torch::Tensor()));
}

TEST_CASE("CLI: a CPU run with --fused-bias-gelu says it takes the plain ops; a bad value is one line",
          "[gelu_mlp][cli]") {
  check_cpu_run_takes_plain_ops("fused-bias-gelu", "fused bias + GELU");
}

TEST_CASE("CUDA: gelu_mlp with cuBLASLt's epilogues equals the plain layers, values and gradients",
          "[.cuda][cuda][gelu_mlp]") {
  LMZOO_SKIP_UNLESS_CUDA();
  REQUIRE(LMZOO_WITH_CUDA_KERNELS);
  const torch::Device cuda(torch::kCUDA, 0);
  const FullFp32Products full_fp32;
  struct Case {
    torch::ScalarType dtype;
    double tolerance;
  };
  for (const Case& c : {Case{torch::kFloat, 1e-4}, Case{torch::kBFloat16, 3e-2}, Case{torch::kHalf, 5e-3}}) {
    for (const auto& [in, hidden] : std::vector<std::pair<int64_t, int64_t>>{{64, 256}, {768, 3072}, {40, 136}}) {
      for (bool bias : {true, false}) {
        INFO(c10::toString(c.dtype) << ", " << in << " -> " << hidden << (bias ? ", biases" : ", no biases"));
        torch::manual_seed(hidden);
        const MlpOperands m(in, hidden, in, bias, torch::TensorOptions(cuda).dtype(c.dtype));
        {
          const FusedBiasGeluScope on(true);
          REQUIRE(fused_bias_gelu_applies(m.x, m.fc_weight, m.fc_bias, m.proj_weight, m.proj_bias));
        }
        const int64_t before = gelu_mlp_epilogue_products();
        check_against_plain(m, c.tolerance);
        CHECK(gelu_mlp_epilogue_products() == before + 2);  // forward's and backward's
        CHECK(gelu_mlp_first_refusal().empty());
      }
    }
  }
  {  // what it does not take: a width that is not a multiple of 8, mixed dtypes without autocast
    const FusedBiasGeluScope on(true);
    const MlpOperands odd(16, 60, 16, true, torch::TensorOptions(cuda));
    CHECK_FALSE(fused_bias_gelu_applies(odd.x, odd.fc_weight, odd.fc_bias, odd.proj_weight, odd.proj_bias));
    const MlpOperands m(16, 64, 16, true, torch::TensorOptions(cuda));
    CHECK_FALSE(fused_bias_gelu_applies(m.x.to(torch::kBFloat16), m.fc_weight, m.fc_bias, m.proj_weight,
                                        m.proj_bias));
  }
}

TEST_CASE("CUDA: a tanh-GELU model with fused bias + GELU gives the plain model's outputs and gradients",
          "[.cuda][cuda][gelu_mlp]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  const FullFp32Products full_fp32;
  torch::manual_seed(6);
  GPT model(tanh_gelu_gpt());
  model->to(cuda);
  const auto ids = torch::randint(99, {2, 9}, torch::TensorOptions(cuda).dtype(torch::kLong));
  auto run = [&](bool fused) {
    const FusedBiasGeluScope scope(fused);
    model->zero_grad();
    const auto logits = model->forward(ids);
    logits.pow(2).mean().backward();
    std::vector<torch::Tensor> all = {logits.detach().clone()};
    for (const auto& p : model->parameters()) all.push_back(p.grad().clone());
    return all;
  };
  const auto plain = run(false);
  const int64_t before = gelu_mlp_epilogue_products();
  const auto fused = run(true);
  CHECK(gelu_mlp_epilogue_products() == before + 2 * tanh_gelu_gpt().n_layer);
  REQUIRE(plain.size() == fused.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("tensor " << i << " (0: logits, then parameter gradients)");
    CHECK(max_difference(fused[i], plain[i]) <= 1e-4 * (plain[i].abs().max().item<double>() + 1.0));
  }
}

TEST_CASE("CUDA: a training run with --fused-bias-gelu follows the plain run's losses, fp32 and bf16",
          "[.cuda][cuda][gelu_mlp]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    INFO(enum_name(precision));
    auto losses_of = [&](bool fused) {
      TrainRequest request = random_token_run(tanh_gelu_gpt(), 5, 4, cuda);
      request.train.precision = precision;
      request.train.tf32 = false;
      request.train.fused_bias_gelu = fused;
      return losses_per_step(request, cuda);
    };
    const auto plain = losses_of(false);
    const int64_t before = gelu_mlp_epilogue_products();
    const auto fused = losses_of(true);
    CHECK(gelu_mlp_epilogue_products() > before);
    check_losses_follow(plain, fused, 5, precision == Precision::kFp32 ? 1e-5 : 5e-3);
    CHECK_FALSE(fused_bias_gelu_enabled());  // the run's scope ended with it
  }
}
