// CUDA training steps, tagged [cuda] (skipped without a GPU): no step between log steps waits for the GPU (sync
// debug mode "error" around them), for the logits and the fused loss, fp32 and bf16, and for bert's masked LM and
// t5; the fused output layer + cross-entropy gives the logits path's loss and gradients on the GPU.
#include "tests/catch_compat.h"

#include <memory>

#include "models/registry.h"
#include "tests/model_fixtures.h"
#include "train/device/device.h"
#include "train/device/host_sync_check.h"
#include "train/task.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

const torch::Device kCuda(torch::kCUDA, 0);

// A tiny gpt run on CUDA over random tokens whose only log, eval and save is its last step (8).
TrainRequest quiet_cuda_run(bool fused, Precision precision) {
  TrainRequest request;
  request.model = tiny_gpt_config();
  request.model.dropout = 0.1;  // the CUDA generator's state is advanced on the device, not read
  request.train = bench_defaults(8);
  request.train.batch_size = 4;
  request.train.log_interval = 8;
  request.train.eval_interval = 8;
  request.train.fused_loss = fused;
  request.train.precision = precision;
  request.train.device = "cuda";
  request.random_tokens = true;
  request.write_outputs = false;
  request.show_progress = false;
  return request;
}

// A batch of the model's family on the GPU: bert with its scored positions found on the CPU, as its task makes it.
TrainBatch cuda_batch(const ModelConfig& config) {
  torch::manual_seed(3);
  TrainBatch b;
  b.input_ids = torch::randint(5, 99, {3, 12}, torch::kLong);
  b.attention_mask = torch::ones({3, 12}, torch::kLong);
  b.labels = torch::randint(5, 99, {3, 12}, torch::kLong);
  b.labels.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, 12, 4)}, -1);
  if (config.arch == Arch::kBert) {
    b.token_type_ids = torch::zeros({3, 12}, torch::kLong);
    b.scored_positions = torch::nonzero(b.labels.reshape({-1}) >= 0).squeeze(1);
  } else {
    b.decoder_input_ids = torch::cat({torch::zeros({3, 1}, torch::kLong), b.labels.narrow(1, 0, 11).clamp_min(0)}, 1);
  }
  return b.to(kCuda);
}

}  // namespace

TEST_CASE("a CUDA training step never waits for the GPU between log steps", "[cuda][no_sync]") {
  LMZOO_SKIP_UNLESS_CUDA();
  REQUIRE(host_sync_checks_available());
  for (bool fused : {false, true}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
      TrainRequest request = quiet_cuda_run(fused, precision);
      std::unique_ptr<HostSyncCheck> check;
      request.callbacks.after_step = [&](int64_t step) {
        if (step == 2) check = std::make_unique<HostSyncCheck>();  // steps 3..7 and what runs between them
        if (step == 7) check.reset();
      };
      INFO("fused loss " << fused << ", " << enum_name(precision));
      TrainResult result;
      REQUIRE_NOTHROW(result = train_model(request, kCuda));
      CHECK(result.state.step == 8);
      CHECK(std::isfinite(result.last_train_loss));
    }
  }
}

TEST_CASE("bert's masked LM and t5's loss and backward never wait for the GPU", "[cuda][no_sync]") {
  LMZOO_SKIP_UNLESS_CUDA();
  REQUIRE(host_sync_checks_available());
  for (const ModelConfig& config : {tiny_bert_config(), tiny_t5_config(true)}) {
    AnyModel model = build_model(config);
    model.module()->to(kCuda);
    const TrainBatch batch = cuda_batch(config);
    for (LossHead head : {LossHead::kLogits, LossHead::kFused}) {
      INFO(enum_name(config.arch) << (head == LossHead::kFused ? " fused" : " logits"));
      HostSyncCheck check;
      REQUIRE_NOTHROW(task_loss(model, batch, head).backward());
    }
  }
}

TEST_CASE("the fused output layer + cross-entropy equals the logits path on the GPU, fp32 and bf16",
          "[cuda][fused_loss]") {
  LMZOO_SKIP_UNLESS_CUDA();
  for (const ModelConfig& config : {tiny_bert_config(), tiny_t5_config(true)}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
      AnyModel model = build_model(config);
      model.module()->to(kCuda);
      model.module()->eval();
      const TrainBatch batch = cuda_batch(config);
      auto run = [&](LossHead head) {
        model.module()->zero_grad();
        torch::Tensor loss;
        {
          AutocastScope autocast(precision, kCuda);
          loss = task_loss(model, batch, head);
        }
        loss.backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : model.module()->parameters()) {
          grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
        }
        return std::make_pair(loss.item<double>(), grads);
      };
      const auto [plain, plain_grads] = run(LossHead::kLogits);
      const auto [fused, fused_grads] = run(LossHead::kFused);
      const double tolerance = precision == Precision::kFp32 ? 1e-4 : 2e-2;
      INFO(enum_name(config.arch) << " " << enum_name(precision));
      CHECK(fused == Approx(plain).epsilon(tolerance));
      for (size_t i = 0; i < plain_grads.size(); ++i) {
        const double scale = std::max(plain_grads[i].abs().max().item<double>(), 1e-6);
        CHECK((fused_grads[i] - plain_grads[i]).abs().max().item<double>() < 10 * tolerance * scale);
      }
    }
  }
}
