// Trainer tests: loss falls on a tiny corpus, resume equals an uninterrupted run, LR schedule,
// optimizer groups, checkpoint round trip and corruption handling, metrics.jsonl.
#include "tests/catch_compat.h"

#include <cmath>
#include <filesystem>

#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "train/checkpoint/checkpoint.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {
TrainRequest tiny_request(const Fixture& f, const std::string& out_dir, int64_t steps) {
  TrainRequest r;
  r.model = tiny_gpt_config(f.vocab_size);
  r.train.data_dir = f.data_dir;
  r.train.out_dir = out_dir;
  r.train.steps = steps;
  r.train.batch_size = 8;
  r.train.lr = 3e-3;
  r.train.warmup = 5;
  r.train.eval_interval = 10;
  r.train.eval_iters = 2;
  r.train.log_interval = 5;
  r.train.device = "cpu";
  r.tokenizer_model = read_text(f.tokenizer_dir + "/tokenizer.model");
  r.show_progress = false;
  return r;
}

bool same_parameters(const torch::nn::Module& a, const torch::nn::Module& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (const auto& item : pa) {
    if (!torch::equal(item.value(), pb[item.key()])) return false;
  }
  return pa.size() == pb.size();
}
}  // namespace

TEST_CASE("training loss falls on a tiny corpus", "[train]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  auto request = tiny_request(f, dir / "run", 80);
  request.write_outputs = false;
  const auto result = train_model(request, torch::kCPU);
  CHECK(result.step_seconds.size() == 80);
  CHECK(result.last_train_loss < std::log(double(f.vocab_size)) - 2.0);
  CHECK(result.last_val_loss < std::log(double(f.vocab_size)) - 2.0);
}

TEST_CASE("resuming from a checkpoint equals an uninterrupted run", "[train][checkpoint]") {
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  auto straight = tiny_request(f, dir / "straight", 20);
  const std::string arch = GENERATE("gpt", "bert");
  if (arch == "bert") {  // masked-LM batches draw their masks from the step's seed too
    straight.model = tiny_bert_config(f.vocab_size, 32, 2, 4, 16);
    straight.train.objective = Objective::kMlm;
  }
  straight.model.dropout = 0.1;  // dropout draws from the RNG, which the checkpoint must restore
  straight.train.grad_accum = 2;
  train_model(straight, torch::kCPU);

  auto first_half = straight;
  first_half.train.out_dir = dir / "resumed";
  first_half.max_steps_this_call = 10;  // as if interrupted at step 10
  train_model(first_half, torch::kCPU);
  auto second_half = straight;
  second_half.train.out_dir = dir / "resumed";
  second_half.resume_dir = dir / "resumed/last";
  const auto result = train_model(second_half, torch::kCPU);
  CHECK(result.state.step == 20);

  auto a = read_checkpoint(dir / "straight/last");
  auto b = read_checkpoint(dir / "resumed/last");
  CHECK(a.state.step == 20);
  CHECK(b.state.step == 20);
  auto model_a = load_model(a, torch::kCPU);
  auto model_b = load_model(b, torch::kCPU);
  CHECK(same_parameters(*model_a.module(), *model_b.module()));
  CHECK(a.state.best_val_loss == b.state.best_val_loss);
  // metrics.jsonl of the resumed run holds train records of both halves and eval records.
  const std::string metrics = read_text(dir / "resumed/metrics.jsonl");
  CHECK(count_lines(metrics) == 4 + 2);  // train at 5, 10, 15, 20; eval at 10, 20
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    auto record = nlohmann::json::parse(line);
    CHECK(record.contains("step"));
    CHECK((record["type"] == "train" ? record.contains("loss") && record.contains("tokens_per_s")
                                     : record.contains("val_loss")));
  }
}

TEST_CASE("a checkpoint saves and loads the exact weights and configs", "[checkpoint]") {
  TempDir dir;
  ModelConfig c = tiny_gpt_config(400);
  c.bias = true;
  GPT model(c);
  CheckpointInfo info;
  info.model = c;
  info.train.lr = 0.0123;
  info.state.step = 7;
  info.state.best_val_loss = 1.5;
  info.tokenizer_model = std::string("tok\0enizer", 10);
  save_checkpoint(dir / "ckpt", model.ptr(), nullptr, info);
  save_checkpoint(dir / "ckpt", model.ptr(), nullptr, info);  // overwriting keeps one complete copy
  auto back = read_checkpoint(dir / "ckpt");
  CHECK(back.dir == dir / "ckpt");
  CHECK(nlohmann::json(back.model) == nlohmann::json(c));
  CHECK(back.train.lr == 0.0123);
  CHECK(back.state.step == 7);
  CHECK(back.tokenizer_model == info.tokenizer_model);
  auto loaded = load_model(back, torch::kCPU);
  CHECK(same_parameters(*model, *loaded.module()));
  CHECK_FALSE(std::filesystem::exists(dir / ".ckpt.old"));

  write_text(dir / "ckpt/model.pt", "not a torch archive");
  CHECK_THROWS_WITH(load_model(read_checkpoint(dir / "ckpt"), torch::kCPU), Catch::Contains("corrupt"));
  std::filesystem::remove(dir / "ckpt/trainer_state.json");
  CHECK_THROWS_WITH(read_checkpoint(dir / "ckpt"), Catch::Contains("incomplete"));
}

TEST_CASE("learning-rate schedule: warmup, cosine / linear decay to min_lr", "[train]") {
  TrainConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup = 10;
  c.steps = 110;
  CHECK(learning_rate(c, 0) == Approx(1e-3 * 1 / 11));
  CHECK(learning_rate(c, 9) == Approx(1e-3 * 10 / 11));
  CHECK(learning_rate(c, 10) == Approx(1e-3));
  CHECK(learning_rate(c, 60) == Approx(1e-4 + 0.5 * 9e-4));  // half way: cos(pi/2) = 0
  CHECK(learning_rate(c, 110) == Approx(1e-4));
  c.schedule = Schedule::kLinear;
  CHECK(learning_rate(c, 35) == Approx(1e-4 + 0.75 * 9e-4));
  c.schedule = Schedule::kConstant;
  CHECK(learning_rate(c, 100) == Approx(1e-3));
}

TEST_CASE("AdamW decays only tensors with two or more dimensions", "[train]") {
  ModelConfig c = tiny_gpt_config(50, 16, 2);
  c.bias = true;
  GPT model(c);
  TrainConfig t;
  t.weight_decay = 0.25;
  auto optimizer = make_optimizer(*model, t);
  REQUIRE(optimizer->param_groups().size() == 2);
  const auto& decay = optimizer->param_groups()[0];
  const auto& no_decay = optimizer->param_groups()[1];
  CHECK(static_cast<const torch::optim::AdamWOptions&>(decay.options()).weight_decay() == 0.25);
  CHECK(static_cast<const torch::optim::AdamWOptions&>(no_decay.options()).weight_decay() == 0.0);
  for (const auto& p : decay.params()) CHECK(p.dim() >= 2);
  for (const auto& p : no_decay.params()) CHECK(p.dim() == 1);
  CHECK(decay.params().size() + no_decay.params().size() == model->parameters().size());
}
