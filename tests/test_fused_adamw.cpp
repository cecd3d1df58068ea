// Fused clipping + AdamW tests: parameters and moments equal clip_grad_norm_ + torch::optim::AdamW step by step.
#include "tests/catch_compat.h"

#include <sstream>

#include "models/kernels/fused_adamw.h"
#include "models/torch_compat.h"
#include "train/loss_scaler.h"
#include "train/skip_monitor.h"

using namespace lmzoo;

namespace {

// Two parameter groups as make_optimizer builds them: decay on >= 2-D tensors, none on the rest.
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, double lr) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto options = torch::optim::AdamWOptions(lr).betas({0.9, 0.99}).eps(1e-8);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(options).weight_decay(0.1)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(options).weight_decay(0.0)));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

std::vector<torch::Tensor> make_params() {
  return {torch::randn({37, 13}), torch::randn({13}), torch::randn({5, 4, 3}), torch::randn({1001})};
}

std::vector<torch::Tensor> clone_params(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

template <typename Map>
typename Map::key_type key_of(const Map&, const torch::Tensor& p) {
  return compat::optimizer_state_key<typename Map::key_type>(p);
}

void check_moments(torch::optim::AdamW& a, const std::vector<torch::Tensor>& pa, torch::optim::AdamW& b,
                   const std::vector<torch::Tensor>& pb) {
  for (size_t i = 0; i < pa.size(); ++i) {
    auto& sa = static_cast<torch::optim::AdamWParamState&>(
        *a.state().at(key_of(a.state(), pa[i])));
    auto& sb = static_cast<torch::optim::AdamWParamState&>(
        *b.state().at(key_of(b.state(), pb[i])));
    CHECK(sa.step() == sb.step());
    CHECK(torch::allclose(sa.exp_avg(), sb.exp_avg(), 1e-5, 1e-7));
    CHECK(torch::allclose(sa.exp_avg_sq(), sb.exp_avg_sq(), 1e-5, 1e-9));
  }
}

}  // namespace

TEST_CASE("fused clip + AdamW equals clip_grad_norm_ + AdamW::step", "[train][fused_adamw]") {
  for (const double max_norm : {0.0, 0.5, 1e6}) {  // off, clipping every step, never clipping
    torch::manual_seed(21);
    const auto init = make_params();
    auto ref = clone_params(init), fused = clone_params(init);
    auto ref_opt = make_adamw(ref, 1e-2), fused_opt = make_adamw(fused, 1e-2);
    for (int step = 0; step < 6; ++step) {
      const double lr = 1e-2 * (step + 1) / 6.0;  // as the trainer's schedule changes it
      for (auto* opt : {ref_opt.get(), fused_opt.get()}) {
        for (auto& g : opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
      }
      for (size_t i = 0; i < init.size(); ++i) {
        auto g = torch::randn_like(init[i]);
        ref[i].mutable_grad() = g.clone();
        fused[i].mutable_grad() = g.clone();
      }
      // The norm is measured with clipping off too (it decides whether the step is skipped).
      const double ref_norm = torch::nn::utils::clip_grad_norm_(ref, max_norm > 0 ? max_norm : INFINITY);
      ref_opt->step();
      const double fused_norm = clip_and_adamw_step(*fused_opt, max_norm).grad_norm.item<double>();
      INFO("max_norm " << max_norm << ", step " << step);
      CHECK(fused_norm == Approx(ref_norm).epsilon(1e-5));
      for (size_t i = 0; i < init.size(); ++i) CHECK(torch::allclose(fused[i], ref[i], 1e-5, 1e-6));
    }
    check_moments(*ref_opt, ref, *fused_opt, fused);
  }
}

TEST_CASE("fused AdamW state survives an optimizer save / load round trip", "[train][fused_adamw]") {
  torch::manual_seed(22);
  auto params = clone_params(make_params());
  auto opt = make_adamw(params, 1e-3);
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  clip_and_adamw_step(*opt, 1.0);
  std::stringstream buffer;
  torch::save(*opt, buffer);
  auto restored = make_adamw(params, 1e-3);
  torch::load(*restored, buffer);
  check_moments(*opt, params, *restored, params);
}

// Runs the library (clip_grad_norm_ + AdamW::step) on CPU copies and STEP_FN on copies on DEVICE, six steps
// with clipping on, and compares parameters and moments.
template <typename StepFn>
void check_against_library(const torch::Device& device, StepFn step_fn, double rtol, double atol) {
  torch::manual_seed(23);
  const auto init = make_params();
  auto ref = clone_params(init);
  std::vector<torch::Tensor> dev;
  for (const auto& p : init) dev.push_back(p.detach().to(device).requires_grad_(true));
  auto ref_opt = make_adamw(ref, 1e-2), dev_opt = make_adamw(dev, 1e-2);
  for (int step = 0; step < 6; ++step) {
    for (size_t i = 0; i < init.size(); ++i) {
      auto g = torch::randn_like(init[i]);
      ref[i].mutable_grad() = g.clone();
      dev[i].mutable_grad() = g.to(device);
    }
    const double max_norm = step % 2 ? 0.5 : 1e6;  // clipping on odd steps only
    const double ref_norm = torch::nn::utils::clip_grad_norm_(ref, max_norm);
    ref_opt->step();
    const double dev_norm = step_fn(*dev_opt, max_norm, {}, {}, {}).grad_norm.template item<double>();
    INFO("step " << step);
    CHECK(dev_norm == Approx(ref_norm).epsilon(1e-5));
    for (size_t i = 0; i < init.size(); ++i) CHECK(torch::allclose(dev[i].cpu(), ref[i], rtol, atol));
  }
  for (size_t i = 0; i < init.size(); ++i) {
    auto& sa = static_cast<torch::optim::AdamWParamState&>(*ref_opt->state().at(key_of(ref_opt->state(), ref[i])));
    auto& sb = static_cast<torch::optim::AdamWParamState&>(*dev_opt->state().at(key_of(dev_opt->state(), dev[i])));
    CHECK(sa.step() == sb.step());
    CHECK(torch::allclose(sa.exp_avg(), sb.exp_avg().cpu(), rtol, 1e-7));
    CHECK(torch::allclose(sa.exp_avg_sq(), sb.exp_avg_sq().cpu(), rtol, 1e-9));
  }
}

#if LMZOO_TORCH_AT_LEAST(2, 4)
TEST_CASE("multi-tensor clip + AdamW (at::_fused_adamw_) equals the library on the CPU", "[train][fused_adamw]") {
  const torch::Device cpu(torch::kCPU);
  torch::manual_seed(24);
  auto probe = clone_params(make_params());
  auto probe_opt = make_adamw(probe, 1e-2);
  for (auto& p : probe) p.mutable_grad() = torch::randn_like(p);
  REQUIRE(multi_tensor_adamw_supported(*probe_opt));
  check_against_library(cpu, multi_tensor_clip_and_adamw_step, 1e-5, 1e-6);
}
#endif

TEST_CASE("CUDA: clip + AdamW on the GPU equals the library on the CPU", "[.cuda][cuda][train][fused_adamw]") {
  LMZOO_SKIP_UNLESS_CUDA();
  check_against_library(torch::Device(torch::kCUDA, 0), clip_and_adamw_step, 1e-5, 1e-6);
}

#if LMZOO_HAS_TENSOR_LR_ADAMW
// Two optimizers over the same parameters and gradients: one steps with the host's lr and counters, the other
// reads them from device tensors filled as a replayed CUDA graph's step fills them (the caller advances the host's
// counters). Learning rates that float holds exactly: the device's lr tensor is float.
void check_device_inputs_match_host(const torch::Device& device) {
  torch::manual_seed(31);
  std::vector<torch::Tensor> init;
  for (const auto& p : make_params()) init.push_back(p.to(device));
  auto host = clone_params(init), on_device = clone_params(init);
  auto host_opt = make_adamw(host, 1.0 / 64), device_opt = make_adamw(on_device, 1.0 / 64);
  const auto float_on = torch::TensorOptions().dtype(torch::kFloat).device(device);
  for (int step = 0; step < 3; ++step) {
    const double lr = double(step + 1) / 128;
    for (size_t i = 0; i < init.size(); ++i) {
      const torch::Tensor g = torch::randn_like(init[i]);
      host[i].mutable_grad() = g.clone();
      on_device[i].mutable_grad() = g.clone();
    }
    for (auto* opt : {host_opt.get(), device_opt.get()}) {
      for (auto& group : opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }
    multi_tensor_clip_and_adamw_step(*host_opt, 0.5);
    DeviceAdamWInputs inputs;
    for (auto& group : device_opt->param_groups()) {
      std::vector<float> counters;
      for (auto& p : group.params()) {
        auto& state = adamw_state_for(*device_opt, p);
        state.step(state.step() + 1);
        counters.push_back(float(state.step()));
      }
      inputs.lr.push_back(torch::full({}, lr, float_on));
      inputs.steps.push_back(torch::tensor(counters, torch::kFloat).to(device));
    }
    device_input_clip_and_adamw_step(*device_opt, 0.5, {}, inputs);
    for (size_t i = 0; i < init.size(); ++i) {
      INFO("step " << step << ", parameter " << i);
      CHECK(torch::equal(on_device[i], host[i]));
    }
    check_moments(*host_opt, host, *device_opt, on_device);
  }
}
#endif

#if LMZOO_HAS_TENSOR_LR_ADAMW && LMZOO_TORCH_AT_LEAST(2, 4)
TEST_CASE("multi-tensor AdamW reading its lr and step counters from tensors equals it reading host values (CPU)",
          "[train][fused_adamw]") {
  check_device_inputs_match_host(torch::Device(torch::kCPU));
}
#endif

TEST_CASE("CUDA: multi-tensor AdamW reading its lr and step counters from the device equals it reading host values",
          "[.cuda][cuda][train][fused_adamw]") {
  LMZOO_SKIP_UNLESS_CUDA();
#if LMZOO_HAS_TENSOR_LR_ADAMW
  check_device_inputs_match_host(torch::Device(torch::kCUDA, 0));
#endif
}

// ZeRO-1's step, two ranks in one process: each holds all the parameters and gradients, but its optimizer only
// its share; given all the gradients as norm_of (in the whole optimizer's order) it clips and updates its share,
// which the other rank then copies. Both end with the bits of one optimizer over all the parameters.
template <typename StepFn>
void check_shares_match_whole(torch::ScalarType dtype, StepFn step_fn) {
  torch::manual_seed(27);
  std::vector<torch::Tensor> init;
  for (const auto& p : make_params()) init.push_back(p.to(dtype));
  auto whole = clone_params(init);
  auto whole_opt = make_adamw(whole, 1e-2);
  const std::vector<std::vector<size_t>> share = {{0, 3}, {1, 2}};  // rank r's parameters
  std::vector<std::vector<torch::Tensor>> ranks = {clone_params(init), clone_params(init)};
  std::vector<std::unique_ptr<torch::optim::AdamW>> rank_opts;
  for (size_t r = 0; r < 2; ++r) rank_opts.push_back(make_adamw({ranks[r][share[r][0]], ranks[r][share[r][1]]}, 1e-2));
  for (int step = 0; step < 4; ++step) {
    const double max_norm = step % 2 ? 0.5 : 0.0;
    std::vector<torch::Tensor> grads;
    for (size_t i = 0; i < init.size(); ++i) {
      grads.push_back(torch::randn_like(init[i]));
      whole[i].mutable_grad() = grads[i].clone();
    }
    const double whole_norm = step_fn(*whole_opt, max_norm, {}, {}, {}).grad_norm.template item<double>();
    for (size_t r = 0; r < 2; ++r) {
      for (size_t i = 0; i < init.size(); ++i) ranks[r][i].mutable_grad() = grads[i].clone();
      // make_adamw's order: the decayed matrices (0, 2), then the rest (1, 3).
      const std::vector<torch::Tensor> all_grads = {ranks[r][0].grad(), ranks[r][2].grad(), ranks[r][1].grad(),
                                                    ranks[r][3].grad()};
      CHECK(step_fn(*rank_opts[r], max_norm, {}, {}, all_grads).grad_norm.template item<double>() == whole_norm);
    }
    torch::NoGradGuard no_grad;
    for (size_t r = 0; r < 2; ++r) {
      for (size_t i : share[r]) ranks[1 - r][i].copy_(ranks[r][i]);  // the owner's broadcast
    }
    for (size_t i = 0; i < init.size(); ++i) {
      INFO("step " << step << ", parameter " << i);
      CHECK(torch::equal(ranks[0][i], whole[i]));
      CHECK(torch::equal(ranks[1][i], whole[i]));
    }
  }
}

TEST_CASE("clip + AdamW of a share of the parameters, clipped by the norm of all, equals one optimizer over all",
          "[train][fused_adamw][zero]") {
  SECTION("fp32 on the CPU: the fused kernel") { check_shares_match_whole(torch::kFloat, clip_and_adamw_step); }
  SECTION("fp64: the library's path") { check_shares_match_whole(torch::kDouble, clip_and_adamw_step); }
#if LMZOO_TORCH_AT_LEAST(2, 4)
  SECTION("the multi-tensor path") { check_shares_match_whole(torch::kFloat, multi_tensor_clip_and_adamw_step); }
#endif
}

// A run of steps where some gradients are NaN or inf equals, parameters, moments and step counters, a run that
// only ever saw the finite steps: a skipped step changes nothing, on whichever path this build takes.
TEST_CASE("clip + AdamW skips a step whose gradients are not finite", "[train][fused_adamw][nonfinite]") {
  torch::manual_seed(25);
  const auto init = make_params();
  auto ref = clone_params(init), skipping = clone_params(init);
  auto ref_opt = make_adamw(ref, 1e-2), skipping_opt = make_adamw(skipping, 1e-2);
  SkipMonitor monitor(torch::kCPU);
  const std::vector<float> poison = {0, NAN, INFINITY, 0, -INFINITY, 0};  // added to one gradient element
  int64_t skipped = 0;
  for (size_t step = 0; step < poison.size(); ++step) {
    std::vector<torch::Tensor> grads;
    for (const auto& p : init) grads.push_back(torch::randn_like(p));
    for (size_t i = 0; i < init.size(); ++i) skipping[i].mutable_grad() = grads[i].clone();
    skipping[step % init.size()].mutable_grad().view(-1)[0] += poison[step];
    const AdamWStepResult result = clip_and_adamw_step(*skipping_opt, 0.5, {}, monitor.uncounted());
    monitor.record(result);
    INFO("step " << step);
    CHECK(result.skipped.item<float>() == (poison[step] == 0 ? 0.0f : 1.0f));
    CHECK(std::isfinite(result.grad_norm.item<double>()) == (poison[step] == 0));
    if (poison[step] != 0) {
      ++skipped;
      continue;
    }
    for (size_t i = 0; i < init.size(); ++i) ref[i].mutable_grad() = grads[i].clone();
    torch::nn::utils::clip_grad_norm_(ref, 0.5);
    ref_opt->step();
  }
  const SkipMonitor::Settled settled = monitor.settle(*skipping_opt);
  CHECK(settled.skipped == skipped);
  CHECK(settled.longest_run == 2);  // NaN then inf
  for (size_t i = 0; i < init.size(); ++i) CHECK(torch::allclose(skipping[i], ref[i], 1e-5, 1e-6));
  check_moments(*ref_opt, ref, *skipping_opt, skipping);
}

TEST_CASE("clip + AdamW divides the gradients by the loss scale", "[train][fused_adamw][fp16]") {
  torch::manual_seed(26);
  const auto init = make_params();
  auto plain = clone_params(init), scaled = clone_params(init);
  auto plain_opt = make_adamw(plain, 1e-2), scaled_opt = make_adamw(scaled, 1e-2);
  const torch::Tensor scale = torch::full({}, 1024.0f);  // a power of two: scaling is exact
  for (int step = 0; step < 4; ++step) {
    for (size_t i = 0; i < init.size(); ++i) {
      auto g = torch::randn_like(init[i]);
      plain[i].mutable_grad() = g.clone();
      scaled[i].mutable_grad() = g * 1024.0f;
    }
    const double plain_norm = clip_and_adamw_step(*plain_opt, 0.5).grad_norm.item<double>();
    const double scaled_norm = clip_and_adamw_step(*scaled_opt, 0.5, scale).grad_norm.item<double>();
    CHECK(scaled_norm == Approx(plain_norm).epsilon(1e-6));
  }
  for (size_t i = 0; i < init.size(); ++i) CHECK(torch::allclose(scaled[i], plain[i], 1e-6, 1e-7));
}

// GradScaler's rule, step by step: an overflow halves the scale and restarts the count; `interval` finite
// steps in a row double it.
TEST_CASE("loss scaler: backoff on overflow, growth after an interval of finite steps", "[train][fp16]") {
  LossScaler scaler(torch::kCPU, 256.0, 0, /*growth_interval=*/3);
  const std::vector<float> skipped = {0, 0, 0, 0, 1, 1, 0, 0, 0, 0};
  double expected = 256.0;
  int64_t finite_in_a_row = 0;
  for (float s : skipped) {
    scaler.update(torch::full({}, s));
    if (s > 0) {
      expected *= 0.5;
      finite_in_a_row = 0;
    } else if (++finite_in_a_row == 3) {
      expected *= 2.0;
      finite_in_a_row = 0;
    }
    CHECK(scaler.scale_value() == expected);
    CHECK(scaler.growth_tracker() == finite_in_a_row);
  }
  CHECK(expected == 256.0);  // 256 -> 512 (3 finite), 128 (2 overflows), 256 (3 finite), tracker 1
  CHECK_FALSE(LossScaler().enabled());
}
