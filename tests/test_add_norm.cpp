// --fused-add-norm: where lmzoo's residual add + norm kernel runs and why not elsewhere (the CPU takes the plain
// ops); on a GPU ([cuda]) the kernel's sum, normed rows and gradients equal the add followed by the norm module,
// and whole blocks (pre-norm, post-norm, RMSNorm, decoder) and a training run give the plain path's values.
#include "tests/catch_compat.h"

#include <cmath>
#include <vector>

#include "lmzoo_build_config.h"
#include "models/blocks.h"
#include "models/kernels/add_norm.h"
#include "models/kernels/cpu_features.h"
#include "models/layers/positions.h"
#include "tests/model_fixtures.h"
#include "tests/switch_scope_checks.h"
#include "tests/train_run_helpers.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// Largest |a - b| over all elements, in fp32.
double max_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<double>();
}

// The parameters' gradients of a module, in registration order (cloned).
std::vector<torch::Tensor> gradients_of(torch::nn::Module& module) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : module.parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  return grads;
}

}  // namespace

TEST_CASE("fused add + norm: off until a scope switches it on, restored after the scope", "[add_norm]") {
  check_switch_scopes<FusedAddNormScope>(fused_add_norm_enabled);
}

TEST_CASE("fused add + norm: the reason it cannot run names the device, then the build", "[add_norm]") {
  CHECK(fused_add_norm_unavailable_reason(torch::Device(torch::kCPU)) == "the device is cpu, not a CUDA GPU");
  const std::string cuda = fused_add_norm_unavailable_reason(torch::Device(torch::kCUDA, 0));
  INFO(cuda);
  if (LMZOO_WITH_CUDA_KERNELS && !kernels::switched_off()) {
    CHECK(cuda.empty());
  } else if (!LMZOO_WITH_CUDA_KERNELS) {
    CHECK(cuda == "this build has no CUDA kernels of lmzoo's own (built without a CUDA compiler)");
  }
}

TEST_CASE("fused add + norm: CPU tensors take the plain ops even when switched on", "[add_norm]") {
  const FusedAddNormScope on(true);
  const auto x = torch::randn({2, 3, 8}), out = torch::randn({2, 3, 8});
  CHECK_FALSE(fused_add_norm_applies(x, out, torch::ones({8}), torch::zeros({8})));
  CHECK_FALSE(fused_add_norm_applies(x, out, torch::ones({8}), torch::Tensor()));
}

TEST_CASE("CLI: a CPU run with --fused-add-norm says it takes the plain ops; a bad value is one line",
          "[add_norm][cli]") {
  check_cpu_run_takes_plain_ops("fused-add-norm", "fused add + norm");
}

TEST_CASE("CUDA: the fused add + norm kernel equals the add and the norm module, values and gradients",
          "[.cuda][cuda][add_norm]") {
  LMZOO_SKIP_UNLESS_CUDA();
  REQUIRE(LMZOO_WITH_CUDA_KERNELS);
  const torch::Device cuda(torch::kCUDA, 0);
  struct Case {
    torch::ScalarType x, out, weight;
    NormKind norm;
    bool bias;
    double tolerance;  // on values; gradients get 4x
  };
  const std::vector<Case> cases = {
      {torch::kFloat, torch::kFloat, torch::kFloat, NormKind::kLayerNorm, true, 2e-5},
      {torch::kFloat, torch::kBFloat16, torch::kFloat, NormKind::kLayerNorm, false, 2e-5},  // autocast's residual
      {torch::kFloat, torch::kHalf, torch::kFloat, NormKind::kRmsNorm, false, 2e-5},
      {torch::kBFloat16, torch::kBFloat16, torch::kBFloat16, NormKind::kRmsNorm, false, 3e-2},
      {torch::kHalf, torch::kHalf, torch::kFloat, NormKind::kLayerNorm, true, 4e-3},
  };
  {  // rows the kernel does not take go to the plain ops
    const FusedAddNormScope on(true);
    const auto options = torch::TensorOptions(cuda);
    const auto wide = torch::randn({2, 6017}, options), rows = torch::randn({2, 6016}, options);
    CHECK_FALSE(fused_add_norm_applies(wide, wide, torch::ones({6017}, options), torch::Tensor()));
    CHECK(fused_add_norm_applies(rows, rows, torch::ones({6016}, options), torch::Tensor()));
    CHECK_FALSE(fused_add_norm_applies(rows, rows.to(torch::kDouble), torch::ones({6016}, options), torch::Tensor()));
    CHECK_FALSE(fused_add_norm_applies(rows.to(torch::kBFloat16), rows, torch::ones({6016}, options), torch::Tensor()));
    CHECK_FALSE(fused_add_norm_applies(rows, rows.narrow(0, 0, 1), torch::ones({6016}, options), torch::Tensor()));
  }
  for (const Case& c : cases) {
    for (int64_t columns : {768, 100, 32, 2048, 6016}) {
      for (bool sum_used : {true, false}) {  // pre-norm uses the sum further on; post-norm only the normed rows
        INFO(c10::toString(c.x) << " + " << c10::toString(c.out) << ", weight " << c10::toString(c.weight)
                                << (c.norm == NormKind::kRmsNorm ? " RMSNorm" : " LayerNorm") << ", " << columns
                                << " columns" << (sum_used ? "" : ", sum unused"));
        torch::manual_seed(columns);
        Norm norm(columns, c.norm, c.bias, 1e-5);
        {
          torch::NoGradGuard no_grad;
          norm->weight.uniform_(0.5, 1.5);
          if (c.bias) norm->bias.uniform_(-0.5, 0.5);
        }
        norm->to(cuda, c.weight);
        const auto x0 = torch::randn({3, 37, columns}, torch::TensorOptions(cuda).dtype(c.x)) * 2 + 0.3;
        const auto out0 = torch::randn({3, 37, columns}, torch::TensorOptions(cuda).dtype(c.out));
        const auto dsum = torch::randn(x0.sizes(), x0.options());
        const auto dnormed = torch::randn(x0.sizes(), torch::TensorOptions(cuda).dtype(c.weight));

        // The plain path: the add, then the norm module.
        auto x = x0.clone().requires_grad_(), out = out0.clone().requires_grad_();
        const auto plain_sum = x + out;
        const auto plain_normed = norm->forward(plain_sum);
        if (sum_used) {
          torch::autograd::backward({plain_sum, plain_normed}, {dsum, dnormed});
        } else {
          torch::autograd::backward({plain_normed}, {dnormed});
        }
        const auto plain_grads = gradients_of(*norm);
        const auto plain_dx = x.grad().clone(), plain_dout = out.grad().clone();
        norm->zero_grad();

        const FusedAddNormScope on(true);
        auto fx = x0.clone().requires_grad_(), fout = out0.clone().requires_grad_();
        REQUIRE(fused_add_norm_applies(fx, fout, norm->weight, norm->bias));
        const SumAndNorm fused = fused_add_norm(fx, fout, norm->weight, norm->bias, norm->eps(), norm->rms());
        if (sum_used) {
          torch::autograd::backward({fused.sum, fused.normed}, {dsum, dnormed});
        } else {
          torch::autograd::backward({fused.normed}, {dnormed});
        }
        CHECK(fused.sum.scalar_type() == plain_sum.scalar_type());
        CHECK(fused.normed.scalar_type() == plain_normed.scalar_type());
        CHECK(torch::equal(fused.sum, plain_sum));  // one rounding of the same fp32 sum
        CHECK(max_difference(fused.normed, plain_normed) <= c.tolerance * 4);
        CHECK(fx.grad().scalar_type() == x.scalar_type());
        CHECK(fout.grad().scalar_type() == out.scalar_type());
        const double grad_scale = plain_dx.abs().max().item<double>() + 1.0;
        CHECK(max_difference(fx.grad(), plain_dx) <= c.tolerance * 4 * grad_scale);
        CHECK(max_difference(fout.grad(), plain_dout) <= c.tolerance * 4 * grad_scale);
        const auto fused_grads = gradients_of(*norm);
        REQUIRE(fused_grads.size() == plain_grads.size());
        for (size_t i = 0; i < fused_grads.size(); ++i) {
          INFO("parameter " << i);
          const double scale = plain_grads[i].abs().max().item<double>() + 1.0;
          // Sums over 111 rows: the fp32 sums' order differs from LibTorch's.
          CHECK(max_difference(fused_grads[i], plain_grads[i]) <= c.tolerance * 16 * scale);
        }
      }
    }
  }
}

TEST_CASE("CUDA: blocks with fused add + norm give the plain blocks' outputs and gradients",
          "[.cuda][cuda][add_norm]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  ModelConfig rms = tiny_gpt_config();
  rms.norm = NormKind::kRmsNorm;
  ModelConfig t5 = tiny_t5_config();
  const std::vector<std::pair<std::string, ModelConfig>> configs = {
      {"gpt pre-norm", tiny_gpt_config()}, {"bert post-norm", tiny_bert_config()}, {"RMSNorm pre-norm", rms},
      {"t5 decoder", t5}};
  for (const auto& [name, config] : configs) {
    INFO(name);
    torch::manual_seed(5);
    PositionTables tables(config);
    tables->to(cuda);
    const bool decoder = config.arch == Arch::kT5;
    TransformerBlock block{nullptr};
    DecoderBlock decoder_block{nullptr};
    torch::nn::Module* module = nullptr;
    if (decoder) {
      decoder_block = DecoderBlock(config, tables);
      decoder_block->to(cuda);
      module = decoder_block.get();
    } else {
      block = TransformerBlock(config, tables);
      block->to(cuda);
      module = block.get();
    }
    const auto x0 = torch::randn({2, 7, config.d_model}, torch::TensorOptions(cuda));
    const auto memory = torch::randn({2, 5, config.d_model}, torch::TensorOptions(cuda));
    const auto upstream = torch::randn(x0.sizes(), x0.options());
    auto run = [&](bool fused) {
      const FusedAddNormScope scope(fused);
      module->zero_grad();
      auto x = x0.clone().requires_grad_();
      AttentionMask mask;
      mask.causal = config.arch != Arch::kBert;
      const auto y = decoder ? decoder_block->forward(x, mask, torch::Tensor(), memory, torch::Tensor())
                             : block->forward(x, mask);
      (y * upstream).sum().backward();
      std::vector<torch::Tensor> all = gradients_of(*module);
      all.insert(all.begin(), {y.detach().clone(), x.grad().clone()});
      return all;
    };
    const auto plain = run(false), fused = run(true);
    REQUIRE(plain.size() == fused.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      INFO("tensor " << i << " (0: output, 1: input gradient, then parameter gradients)");
      if (!plain[i].defined()) continue;
      const double scale = plain[i].abs().max().item<double>() + 1.0;
      CHECK(max_difference(fused[i], plain[i]) <= 1e-4 * scale);
    }
  }
}

TEST_CASE("CUDA: a training run with --fused-add-norm follows the plain run's losses, fp32 and bf16",
          "[.cuda][cuda][add_norm]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    INFO(enum_name(precision));
    auto losses_of = [&](bool fused) {
      ModelConfig model = tiny_gpt_config();
      model.dropout = 0.0;
      TrainRequest request = random_token_run(model, 5, 4, cuda);
      request.train.precision = precision;
      request.train.fused_add_norm = fused;
      return losses_per_step(request, cuda);
    };
    const auto plain = losses_of(false), fused = losses_of(true);
    check_losses_follow(plain, fused, 5, precision == Precision::kFp32 ? 1e-5 : 5e-3);
    CHECK_FALSE(fused_add_norm_enabled());  // the run's scope ended with it
  }
}
