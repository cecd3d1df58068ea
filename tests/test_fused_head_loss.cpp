// The fused output layer + cross-entropy (models/kernels/fused_head_loss.h) against logits made whole and scored
// by torch's cross_entropy: loss and gradients, chunked or not, bias or not, ignored rows, autocast; the trainer's
// losses with --fused-loss against without for gpt, t5 and bert; and the logits' memory it saves in bench.
#include "tests/catch_compat.h"

#include <cmath>

#include "models/kernels/fused_head_loss.h"
#include "models/torch_compat.h"
#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/model_fixtures.h"
#include "tests/train_run_helpers.h"
#include "train/task.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// The plain path: logits (N, V) = hidden weight^T + bias, then mean cross-entropy ignoring -1.
torch::Tensor plain_head_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                              const torch::Tensor& targets) {
  auto logits = torch::matmul(hidden, weight.t());
  if (bias.defined()) logits = logits + bias;
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), targets,
                                              torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1));
}

struct HeadInputs {
  torch::Tensor hidden, weight, bias, targets;
};

HeadInputs head_inputs(int64_t N, int64_t C, int64_t V, bool with_bias) {
  HeadInputs in;
  in.hidden = torch::randn({N, C}).requires_grad_(true);
  in.weight = (torch::randn({V, C}) * 0.3).requires_grad_(true);
  if (with_bias) in.bias = torch::randn({V}).requires_grad_(true);
  in.targets = torch::randint(0, V, {N}, torch::kLong);
  in.targets[2] = -1;  // ignored rows
  in.targets[N - 1] = -1;
  return in;
}

// Each defined tensor's gradient, detached and cleared.
std::vector<torch::Tensor> take_grads(const HeadInputs& in) {
  std::vector<torch::Tensor> out;
  for (const auto& t : {in.hidden, in.weight, in.bias}) {
    if (!t.defined()) continue;
    out.push_back(t.grad().detach().clone());
    t.mutable_grad() = torch::Tensor();
  }
  return out;
}

}  // namespace

TEST_CASE("fused head loss equals logits + cross_entropy in loss and gradients, in any chunking", "[fused_loss]") {
  torch::manual_seed(7);
  for (bool with_bias : {false, true}) {
    for (int64_t chunk : {1, 4, 13, 1000}) {
      const HeadInputs in = head_inputs(29, 16, 37, with_bias);
      const auto ref = plain_head_loss(in.hidden, in.weight, in.bias, in.targets);
      (ref * 2.5).backward();  // an upstream gradient other than 1 scales the kept gradients
      const auto ref_grads = take_grads(in);
      const auto fused = fused_head_loss(in.hidden, in.weight, in.bias, in.targets, -1, chunk);
      (fused * 2.5).backward();
      const auto grads = take_grads(in);
      INFO("bias " << with_bias << ", chunk " << chunk);
      CHECK(fused.item<double>() == Approx(ref.item<double>()).epsilon(1e-6));
      REQUIRE(grads.size() == ref_grads.size());
      for (size_t i = 0; i < grads.size(); ++i) {
        INFO("gradient " << i << " max |diff| " << (grads[i] - ref_grads[i]).abs().max().item<double>());
        CHECK(torch::allclose(grads[i], ref_grads[i], 1e-5, 1e-6));
      }
    }
  }
}

TEST_CASE("fused head loss: no scored row gives 0 and zero gradients; without grad mode none are made",
          "[fused_loss]") {
  torch::manual_seed(8);
  HeadInputs in = head_inputs(6, 8, 11, true);
  in.targets.fill_(-1);
  const auto loss = fused_head_loss(in.hidden, in.weight, in.bias, in.targets, -1, 4);
  CHECK(loss.item<double>() == 0.0);
  loss.backward();
  for (const auto& g : take_grads(in)) CHECK(g.abs().max().item<double>() == 0.0);
  torch::NoGradGuard no_grad;
  const HeadInputs scored = head_inputs(6, 8, 11, false);
  const auto value = fused_head_loss(scored.hidden, scored.weight, scored.bias, scored.targets, -1, 4);
  CHECK(!value.requires_grad());
  CHECK(value.item<double>() ==
        Approx(plain_head_loss(scored.hidden, scored.weight, scored.bias, scored.targets).item<double>()).epsilon(1e-6));
}

TEST_CASE("fused head loss under bf16 autocast matches the autocast logits path", "[fused_loss]") {
  torch::manual_seed(9);
  const HeadInputs in = head_inputs(40, 32, 50, true);
  torch::Tensor ref, fused;
  std::vector<torch::Tensor> ref_grads, grads;
  {
    compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
    ref = plain_head_loss(in.hidden, in.weight, in.bias, in.targets);
    fused = fused_head_loss(in.hidden, in.weight, in.bias, in.targets, -1, 16);
    compat::set_autocast(c10::DeviceType::CPU, false);
  }
  ref.backward();
  ref_grads = take_grads(in);
  fused.backward();
  grads = take_grads(in);
  CHECK(fused.scalar_type() == torch::kFloat);
  CHECK(fused.item<double>() == Approx(ref.item<double>()).epsilon(1e-2));
  for (size_t i = 0; i < grads.size(); ++i) {
    CHECK(grads[i].scalar_type() == ref_grads[i].scalar_type());
    const double scale = ref_grads[i].abs().max().item<double>();
    INFO("gradient " << i);
    CHECK((grads[i] - ref_grads[i]).abs().max().item<double>() < 0.02 * scale);
  }
}

namespace {

// The mean train loss of each of STEPS steps of MODEL on random tokens (gpt) or a fresh task, fused or not.
std::vector<double> step_losses(const ModelConfig& model, bool fused, int64_t steps) {
  TrainRequest request = random_token_run(model, steps, 3, torch::kCPU);
  request.train.fused_loss = fused;
  return losses_per_step(request, torch::kCPU);
}

}  // namespace

TEST_CASE("the fused loss trains a gpt as the logits path does (losses within rounding, step by step)",
          "[fused_loss][train]") {
  ModelConfig model = tiny_gpt_config(/*vocab_size=*/97);
  model.vocab_multiple = 8;  // padded rows: the fused head scores only the first 97
  model.dropout = 0.0;
  const auto plain = step_losses(model, false, 6), fused = step_losses(model, true, 6);
  REQUIRE(plain.size() == 6);
  REQUIRE(fused.size() == 6);
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(fused[i] == Approx(plain[i]).epsilon(1e-4));
  }
  CHECK(plain.back() < plain.front());  // it trains
}

TEST_CASE("fused task loss equals the logits task loss for t5 and bert MLM, gradients included",
          "[fused_loss][t5][bert]") {
  torch::manual_seed(10);
  for (const ModelConfig& config : {tiny_t5_config(false), tiny_t5_config(true), tiny_bert_config()}) {
    AnyModel model = build_model(config);
    TrainBatch batch;
    batch.input_ids = torch::randint(5, config.vocab_size, {2, 12}, torch::kLong);
    batch.attention_mask = torch::ones({2, 12}, torch::kLong);
    batch.labels = torch::randint(5, config.vocab_size, {2, 12}, torch::kLong);
    batch.labels.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, 12, 3)}, -1);  // not scored
    if (config.arch == Arch::kT5) {
      batch.decoder_input_ids = torch::cat({torch::zeros({2, 1}, torch::kLong), batch.labels.narrow(1, 0, 11).clamp_min(0)}, 1);
    } else {
      batch.token_type_ids = torch::zeros({2, 12}, torch::kLong);
    }
    model.module()->eval();  // no dropout: the two passes see the same network
    auto gradients = [&](LossHead head) {
      model.module()->zero_grad();
      const auto loss = task_loss(model, batch, head);
      loss.backward();
      std::vector<torch::Tensor> g;
      for (const auto& p : model.module()->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
      return std::make_pair(loss.item<double>(), g);
    };
    const auto [plain, plain_grads] = gradients(LossHead::kLogits);
    const auto [fused, fused_grads] = gradients(LossHead::kFused);
    INFO(enum_name(config.arch) << (config.tie_embeddings ? " tied" : " untied"));
    CHECK(fused == Approx(plain).epsilon(1e-5));
    for (size_t i = 0; i < plain_grads.size(); ++i) CHECK(torch::allclose(fused_grads[i], plain_grads[i], 1e-4, 1e-6));
  }
}

TEST_CASE("bench --fused-loss: the logits' memory is gone from the counted peak and from the estimate",
          "[fused_loss][bench][cli]") {
  // gpt-nano on random ids over 8000 symbols at batch 48 x 64: the logits path keeps 3072 x 8000 fp32 logits and
  // makes their gradient (about 200 MB); the fused path works through 3 chunks of 1048 rows (32 MiB of logits on a
  // CPU) and keeps the head's gradients (about 6 MB).
  auto bench = [](const std::string& extra) {
    auto r = run_cli("bench --vocab-size 8000 --batch-size 48 --steps 3 --skip 1 --threads 1 --json" + extra);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return last_json_line(r.out);
  };
  const auto plain = bench(""), fused = bench(" --fused-loss");
  const double saved = plain["peak_memory_bytes"].get<double>() - fused["peak_memory_bytes"].get<double>();
  const double predicted_saving =
      plain["predicted_peak_bytes"].get<double>() - fused["predicted_peak_bytes"].get<double>();
  INFO("measured saving " << saved << ", predicted saving " << predicted_saving);
  CHECK(predicted_saving > 50e6);
  CHECK(saved > 0.5 * predicted_saving);
  CHECK(saved < 2.0 * predicted_saving);
  CHECK(std::abs(fused["final_train_loss"].get<double>() - plain["final_train_loss"].get<double>()) < 1e-3);
}
