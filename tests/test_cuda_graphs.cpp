// --cuda-graphs: a run whose step cannot be replayed (a CPU, fp16, masked LM, ranks, checkpointed blocks) says why and
// trains as it would without the switch; on a GPU ([cuda]) the replayed steps give the eager steps' losses, a batch
// of another shape is refused by name, and no replayed step waits for the GPU.
#include "tests/catch_compat.h"

#include <memory>
#include <vector>

#include "models/registry.h"
#include "models/torch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/model_fixtures.h"
#include "tests/train_run_helpers.h"
#include "train/device/host_sync_check.h"
#include "train/graphed_step.h"
#include "train/optimizer.h"
#include "train/skip_monitor.h"
#include "train/task.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A tiny gpt run over random tokens on DEVICE that reads its loss after every step.
TrainRequest graphs_run(bool cuda_graphs, const torch::Device& device, Precision precision = Precision::kFp32) {
  ModelConfig model = tiny_gpt_config();
  model.dropout = 0.0;
  TrainRequest request = random_token_run(model, 7, 4, device);
  request.train.grad_accum = 2;
  request.train.precision = precision;
  request.train.cuda_graphs = cuda_graphs;
  return request;
}

struct Trained {
  TrainResult result;
  std::vector<double> losses;  // per step
};

Trained train_recording(const TrainRequest& request, const torch::Device& device) {
  Trained out;
  out.losses = losses_per_step(request, device, &out.result);
  return out;
}

}  // namespace

TEST_CASE("cuda graphs: why a run's step cannot be replayed, its settings named before its device", "[cuda_graphs]") {
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA, 0);
  const TrainConfig plain;
  CHECK(GraphedTrainStep::unavailable_reason(plain, cpu, false) == "the device is cpu, not a CUDA GPU");
  TrainConfig fp16 = plain;
  fp16.precision = Precision::kFp16;
  CHECK(mentions(GraphedTrainStep::unavailable_reason(fp16, cuda, false), "fp16's loss scale"));
  TrainConfig mlm = plain;
  mlm.objective = Objective::kMlm;
  CHECK(mentions(GraphedTrainStep::unavailable_reason(mlm, cuda, false), "masked LM"));
  CHECK(mentions(GraphedTrainStep::unavailable_reason(plain, cuda, true), "data-parallel ranks"));
  TrainConfig checkpointed = plain;
  checkpointed.activation_checkpointing = "every-2";
  CHECK(mentions(GraphedTrainStep::unavailable_reason(checkpointed, cuda, false), "activation checkpointing"));
  const std::string build = GraphedTrainStep::unavailable_reason(plain, cuda, false);
  INFO(build);
  CHECK((build.empty() == (host_sync_checks_available() && LMZOO_TORCH_AT_LEAST(2, 2))));
}

TEST_CASE("cuda graphs: a CPU run with the switch trains exactly as without it and reports its steps ran eagerly",
          "[cuda_graphs][train]") {
  const torch::Device cpu(torch::kCPU);
  const Trained plain = train_recording(graphs_run(false, cpu), cpu);
  const Trained graphs = train_recording(graphs_run(true, cpu), cpu);
  CHECK(plain.result.cuda_graphs.empty());
  CHECK(graphs.result.cuda_graphs == "eager from step 1: the device is cpu, not a CUDA GPU");
  REQUIRE(graphs.losses.size() == 7);
  CHECK(graphs.losses == plain.losses);
}

TEST_CASE("CLI: bench --cuda-graphs on a CPU reports in its JSON why its steps ran eagerly", "[cuda_graphs][cli]") {
  const auto r = run_cli("bench --vocab-size 99 --steps 3 --skip 1 --batch-size 2 --threads 1 --cuda-graphs --json");
  INFO(r.err << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(mentions(r.out, "\"cuda_graphs\":\"eager from step 1: the device is cpu, not a CUDA GPU\""));
  const auto plain = run_cli("bench --vocab-size 99 --steps 3 --skip 1 --batch-size 2 --threads 1 --json");
  REQUIRE(plain.exit_code == 0);
  CHECK_FALSE(mentions(plain.out, "cuda_graphs"));
}

TEST_CASE("a graphed step takes any batch until it has recorded one", "[cuda_graphs]") {
  AnyModel model = build_model(tiny_gpt_config());
  auto optimizer = make_optimizer(*model.module(), bench_defaults(1));
  SkipMonitor skips(torch::kCPU);
  GraphedTrainStep step(*optimizer, skips, 1.0, [](const TrainBatch&, const torch::Tensor&) { return torch::Tensor(); });
  TrainBatch batch;
  batch.input_ids = torch::zeros({2, 5}, torch::kLong);
  CHECK(step.mismatch({batch}).empty());
  CHECK(step.mismatch({batch, batch}).empty());
}

TEST_CASE("CUDA: replayed steps give the eager steps' losses: fp32 and bf16, logits and fused loss, dropout",
          "[.cuda][cuda][cuda_graphs]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    for (bool fused : {false, true}) {
      INFO(enum_name(precision) << (fused ? " fused loss" : ""));
      TrainRequest eager_request = graphs_run(false, cuda, precision), graph_request = graphs_run(true, cuda, precision);
      eager_request.train.fused_loss = graph_request.train.fused_loss = fused;
      const Trained eager = train_recording(eager_request, cuda);
      const Trained graphs = train_recording(graph_request, cuda);
      CHECK(graphs.result.cuda_graphs == "replayed from step 3");
      REQUIRE(graphs.losses.size() == eager.losses.size());
      // The same kernels in the same order: the same bits (a margin of 1e-6 for a library that picks differently).
      for (size_t i = 0; i < eager.losses.size(); ++i) {
        INFO("step " << i + 1);
        CHECK(std::abs(graphs.losses[i] - eager.losses[i]) <= 1e-6 * std::abs(eager.losses[i]));
      }
    }
  }
  // Dropout under replay draws from the generator as the eager step does.
  TrainRequest dropout = graphs_run(true, cuda);
  dropout.model.dropout = 0.1;
  TrainRequest dropout_eager = dropout;
  dropout_eager.train.cuda_graphs = false;
  const Trained with_dropout = train_recording(dropout, cuda), eager_dropout = train_recording(dropout_eager, cuda);
  CHECK(with_dropout.result.cuda_graphs == "replayed from step 3");
  CHECK(with_dropout.losses.back() == Approx(eager_dropout.losses.back()).epsilon(1e-5));
}

TEST_CASE("CUDA: a graphed step refuses batches of another shape than the one it recorded",
          "[.cuda][cuda][cuda_graphs]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  AnyModel model = build_model(tiny_gpt_config());
  model.module()->to(cuda);
  auto optimizer = make_optimizer(*model.module(), bench_defaults(1));
  SkipMonitor skips(cuda);
  GraphedTrainStep step(*optimizer, skips, 1.0, [&](const TrainBatch& batch, const torch::Tensor& weight) {
    const torch::Tensor loss = task_loss(model, batch) * weight;
    loss.backward();
    return loss.detach();
  });
  auto batch_of = [](int64_t t) {
    TrainBatch b;
    b.input_ids = torch::randint(0, 99, {3, t}, torch::kLong);
    b.labels = torch::randint(0, 99, {3, t}, torch::kLong);
    return b;
  };
  const std::vector<TrainBatch> recorded = {batch_of(12)};
  const torch::Tensor loss = step.run(recorded, {torch::ones({})});
  INFO(step.failure());
  REQUIRE(loss.defined());
  CHECK(std::isfinite(loss.item<double>()));
  CHECK(step.mismatch({batch_of(12)}).empty());
  CHECK(step.mismatch({batch_of(10)}) == "the batch's input_ids has shape (3, 10) where the recorded step's had (3, 12)");
  CHECK(step.mismatch({batch_of(12), batch_of(12)}) == "the number of micro-batches changed");
}

TEST_CASE("CUDA: a replayed step never waits for the GPU", "[.cuda][cuda][cuda_graphs][no_sync]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const torch::Device cuda(torch::kCUDA, 0);
  TrainRequest request = graphs_run(true, cuda, Precision::kBf16);
  request.train.steps = 8;
  request.train.log_interval = request.train.eval_interval = 8;
  std::unique_ptr<HostSyncCheck> check;
  request.callbacks.after_step = [&](int64_t step) {
    if (step == 3) check = std::make_unique<HostSyncCheck>();  // steps 4..7: replays, and what runs between them
    if (step == 7) check.reset();
  };
  TrainResult result;
  REQUIRE_NOTHROW(result = train_model(request, cuda));
  CHECK(result.cuda_graphs == "replayed from step 3");
  CHECK(std::isfinite(result.last_train_loss));
}
