// Activation checkpointing against the same model run without it: bit-identical losses, gradients and RNG state
// (dropout on) for every family, with gradient accumulation and bf16 autocast; hooks fire once per parameter;
// frozen inputs (LoRA's case) still train a block's parameters; fewer live bytes after the forward; the policy
// parser; lmzoo train end to end, on one process and on 2 data-parallel ranks; a bad flag value.
#include "tests/catch_compat.h"

#include <cmath>
#include <sstream>
#include <unordered_set>

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <nlohmann/json.hpp>

#include "models/activation_checkpointing.h"
#include "models/registry.h"
#include "tests/checkpoint_compare.h"
#include "tests/cli_checks.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "tests/rank_launch.h"
#include "train/device/device.h"
#include "train/device/device_peak.h"
#include "train/task.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// Shapes: B batch, T (decoder) positions, S encoder positions.
constexpr int64_t kB = 3, kT = 12, kS = 14, kVocab = 99;

ModelConfig with_dropout(ModelConfig c, int64_t n_layer = 3) {
  c.dropout = 0.1;
  c.n_layer = n_layer;
  return c;
}

TrainBatch gpt_batch(uint64_t seed) {
  torch::manual_seed(seed);
  TrainBatch b;
  b.input_ids = torch::randint(0, kVocab, {kB, kT}, torch::kLong);
  b.labels = torch::randint(0, kVocab, {kB, kT}, torch::kLong);
  return b;
}

// Masked LM: a quarter of the positions scored, the last 3 of row 1 padding.
TrainBatch bert_batch(uint64_t seed) {
  TrainBatch b = gpt_batch(seed);
  b.labels.masked_fill_(torch::rand({kB, kT}) > 0.25, -1);
  b.attention_mask = torch::ones({kB, kT}, torch::kLong);
  b.attention_mask[1].slice(0, kT - 3).fill_(0);
  b.labels[1].slice(0, kT - 3).fill_(-1);
  return b;
}

TrainBatch classifier_batch(uint64_t seed) {
  TrainBatch b = bert_batch(seed);
  b.labels = torch::randint(0, 2, {kB}, torch::kLong);  // (B,) class ids
  return b;
}

// Span corruption's shape: encoder input (B, S) with padding, decoder input and labels (B, T).
TrainBatch t5_batch(uint64_t seed) {
  torch::manual_seed(seed);
  TrainBatch b;
  b.input_ids = torch::randint(0, kVocab, {kB, kS}, torch::kLong);
  b.attention_mask = torch::ones({kB, kS}, torch::kLong);
  b.attention_mask[2].slice(0, kS - 4).fill_(0);
  b.labels = torch::randint(0, kVocab, {kB, kT}, torch::kLong);
  b.decoder_input_ids = torch::cat({torch::zeros({kB, 1}, torch::kLong), b.labels.slice(1, 0, kT - 1)}, 1);  // (B, T)
  return b;
}

// What one training pass leaves: each micro-batch's loss, every parameter's gradient (undefined where the graph
// did not reach it) and the CPU generator's state afterwards.
struct Pass {
  int64_t checkpoint_nodes = 0;  // in the first micro-batch's graph
  std::vector<torch::Tensor> losses;
  std::vector<torch::Tensor> grads;
  torch::Tensor rng_after;
};

// Nodes of the checkpointing Function in the graph behind loss: one per checkpointed block.
int64_t count_checkpoint_nodes(const torch::Tensor& loss) {
  std::vector<torch::autograd::Node*> pending{loss.grad_fn().get()};
  std::unordered_set<torch::autograd::Node*> seen{pending.front()};
  int64_t count = 0;
  while (!pending.empty()) {
    torch::autograd::Node* node = pending.back();
    pending.pop_back();
    count += node->name().find("CheckpointFunction") != std::string::npos;
    for (const auto& edge : node->next_edges()) {
      if (edge.function && seen.insert(edge.function.get()).second) pending.push_back(edge.function.get());
    }
  }
  return count;
}

// Blocks a policy covers in a model of config: every stack's (a t5's encoder and decoder).
int64_t covered_blocks(const ModelConfig& config, const std::string& policy) {
  const CheckpointPolicy p = parse_checkpoint_policy(policy);
  int64_t covered = 0;
  std::vector<int64_t> stacks{config.n_layer};
  if (config.arch == Arch::kT5) stacks.push_back(config.decoder_layers());
  for (int64_t layers : stacks) {
    for (int64_t i = 0; i < layers; ++i) covered += p.covers(i);
  }
  return covered;
}

torch::Tensor cpu_rng_state() { return at::globalContext().defaultGenerator(at::kCPU).get_state(); }

// Training mode, gradients cleared, seed 99, then forward and backward of each micro-batch (the trainer's order).
Pass train_pass(AnyModel& model, const std::vector<TrainBatch>& micro_batches, const std::string& policy,
                Precision precision = Precision::kFp32) {
  set_activation_checkpointing(model, parse_checkpoint_policy(policy));
  auto module = model.module();
  module->train();
  for (auto& p : module->parameters()) p.mutable_grad() = torch::Tensor();
  torch::manual_seed(99);
  Pass pass;
  for (const auto& batch : micro_batches) {
    torch::Tensor loss;
    {
      AutocastScope autocast(precision, torch::kCPU);
      loss = task_loss(model, batch);
    }
    if (pass.losses.empty()) pass.checkpoint_nodes = count_checkpoint_nodes(loss);
    loss.backward();
    pass.losses.push_back(loss.detach());
  }
  for (const auto& p : module->parameters()) pass.grads.push_back(p.grad().defined() ? p.grad().clone() : p.grad());
  pass.rng_after = cpu_rng_state();
  set_activation_checkpointing(model, CheckpointPolicy{});
  return pass;
}

void check_identical(const Pass& plain, const Pass& checkpointed, const AnyModel& model) {
  REQUIRE(plain.losses.size() == checkpointed.losses.size());
  for (size_t i = 0; i < plain.losses.size(); ++i) CHECK(torch::equal(plain.losses[i], checkpointed.losses[i]));
  const auto names = model.module()->named_parameters();
  int64_t reached = 0;
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    INFO("parameter " << names[i].key());
    REQUIRE(plain.grads[i].defined() == checkpointed.grads[i].defined());
    if (!plain.grads[i].defined()) continue;
    ++reached;
    CHECK(torch::equal(plain.grads[i], checkpointed.grads[i]));
  }
  CHECK(reached > 0);
  CHECK(torch::equal(plain.rng_after, checkpointed.rng_after));
}

// none against blocks and every-2 on the same model and batches.
void check_policies_identical(const ModelConfig& config, const std::vector<TrainBatch>& micro_batches,
                              Precision precision = Precision::kFp32) {
  torch::manual_seed(5);
  AnyModel model = build_model(config);
  const Pass plain = train_pass(model, micro_batches, "none", precision);
  CHECK(plain.checkpoint_nodes == 0);
  for (const std::string policy : {"blocks", "every-2"}) {
    INFO("--activation-checkpointing " << policy);
    const Pass checkpointed = train_pass(model, micro_batches, policy, precision);
    CHECK(checkpointed.checkpoint_nodes == covered_blocks(config, policy));
    check_identical(plain, checkpointed, model);
  }
}

// A second step after an SGD update of the first step's gradients: its forward must use the updated weights (a
// rerun's cached autocast casts of the old ones must not outlive the step).
Pass second_step(const ModelConfig& config, const std::vector<TrainBatch>& micro_batches, const std::string& policy,
                 Precision precision) {
  torch::manual_seed(5);
  AnyModel model = build_model(config);
  const Pass first = train_pass(model, micro_batches, policy, precision);
  {
    torch::NoGradGuard no_grad;
    auto params = model.module()->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      if (first.grads[i].defined()) params[i].sub_(first.grads[i] * 0.5);
    }
  }
  return train_pass(model, micro_batches, policy, precision);
}

// Bytes still allocated once the loss exists (what the graph keeps for the backward), then the backward.
int64_t live_bytes_after_forward(AnyModel& model, const TrainBatch& batch, const std::string& policy) {
  set_activation_checkpointing(model, parse_checkpoint_policy(policy));
  model.module()->train();
  model.module()->zero_grad();
  torch::manual_seed(3);
  count_cpu_tensor_bytes();
  const int64_t before = live_cpu_tensor_bytes();
  torch::Tensor loss = task_loss(model, batch);
  const int64_t kept = live_cpu_tensor_bytes() - before;
  loss.backward();
  set_activation_checkpointing(model, CheckpointPolicy{});
  return kept;
}

// Loss of each train record in a run's metrics.jsonl, in order.
std::vector<double> train_losses(const std::string& metrics) {
  std::vector<double> losses;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["type"] == "train") losses.push_back(record["loss"].get<double>());
  }
  return losses;
}

const std::string kTrainFlags = " --device cpu --threads 1 --dropout 0.1 --warmup 1 --lr 3e-3 --log-interval 1 "
                                "--eval-iters 1 --seed 7 ";
const std::string kGptFlags = " --n-layer 2 --n-head 2 --d-model 32 --seq-len 16 ";
const std::string kT5Flags = " --arch t5 --n-layer 1 --n-head 2 --d-model 32 --seq-len 24 ";

}  // namespace

TEST_CASE("checkpoint policies: none, blocks, every-N; anything else is one clear error", "[checkpointing]") {
  CHECK(parse_checkpoint_policy("none").every == 0);
  CHECK(parse_checkpoint_policy("blocks").every == 1);
  CHECK(parse_checkpoint_policy("every-3").every == 3);
  const CheckpointPolicy none = parse_checkpoint_policy("none"), all = parse_checkpoint_policy("blocks"),
                         every2 = parse_checkpoint_policy("every-2");
  for (int64_t i = 0; i < 5; ++i) {
    CHECK_FALSE(none.covers(i));
    CHECK(all.covers(i));
    CHECK(every2.covers(i) == (i % 2 == 0));
  }
  for (const std::string bad : {"", "block", "every-0", "every-", "every--1", "every-x", "every-2x", "Blocks",
                                "every-99999999999"}) {
    INFO("'" << bad << "'");
    try {
      parse_checkpoint_policy(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) ==
            "--activation-checkpointing must be none, blocks or every-N (N >= 1), got '" + bad + "'");
    }
  }
}

TEST_CASE("gpt: checkpointed blocks give the same loss, gradients and RNG state bit for bit, dropout on",
          "[checkpointing][gpt]") {
  SECTION("GPT-2 shape") { check_policies_identical(with_dropout(tiny_gpt_config()), {gpt_batch(1)}); }
  SECTION("rope, swiglu, rmsnorm, untied") {
    ModelConfig c = with_dropout(tiny_gpt_config());
    c.position = Position::kRope;
    c.activation = Activation::kSwiglu;
    c.norm = NormKind::kRmsNorm;
    c.tie_embeddings = false;
    check_policies_identical(c, {gpt_batch(2)});
  }
  SECTION("parallel residual") {
    ModelConfig c = with_dropout(tiny_gpt_config());
    c.parallel_residual = true;
    c.bias = true;
    check_policies_identical(c, {gpt_batch(3)});
  }
  SECTION("relative position bias: its parameters are reached through the blocks' inputs") {
    ModelConfig c = with_dropout(tiny_gpt_config());
    c.position = Position::kRelative;
    c.relative_buckets = 8;
    c.relative_max_distance = 16;
    check_policies_identical(c, {gpt_batch(4)});
  }
}

TEST_CASE("bert (masked LM) and the bert classifier: checkpointed blocks are bit-identical, dropout on",
          "[checkpointing][bert]") {
  SECTION("masked LM") { check_policies_identical(with_dropout(tiny_bert_config()), {bert_batch(5)}); }
  SECTION("classifier") {
    ModelConfig c = with_dropout(tiny_bert_config());
    c.labels = {"a", "b"};
    check_policies_identical(c, {classifier_batch(6)});
  }
}

TEST_CASE("t5: both stacks checkpointed are bit-identical, dropout on", "[checkpointing][t5]") {
  SECTION("v1.0 shape, relative bias") { check_policies_identical(with_dropout(tiny_t5_config(), 2), {t5_batch(7)}); }
  SECTION("v1.1 shape: gated, untied, 3 decoder layers") {
    check_policies_identical(with_dropout(tiny_t5_config(true), 2), {t5_batch(8)});
  }
}

TEST_CASE("gradient accumulation over 2 micro-batches is bit-identical with checkpointing", "[checkpointing]") {
  check_policies_identical(with_dropout(tiny_gpt_config()), {gpt_batch(9), gpt_batch(10)});
  check_policies_identical(with_dropout(tiny_t5_config(), 2), {t5_batch(11), t5_batch(12)});
}

// The rerun restores autocast as the forward had it (the backward runs outside the scope), so it casts as the
// forward did: the same bf16 kernels on the same values.
TEST_CASE("bf16 autocast is bit-identical with checkpointing", "[checkpointing]") {
  check_policies_identical(with_dropout(tiny_gpt_config()), {gpt_batch(13), gpt_batch(14)}, Precision::kBf16);
  check_policies_identical(with_dropout(tiny_t5_config(), 2), {t5_batch(15)}, Precision::kBf16);
  const ModelConfig config = with_dropout(tiny_gpt_config());
  const Pass plain = second_step(config, {gpt_batch(23)}, "none", Precision::kBf16);
  torch::manual_seed(5);
  check_identical(plain, second_step(config, {gpt_batch(23)}, "blocks", Precision::kBf16), build_model(config));
}

TEST_CASE("the next batch's dropout is unchanged: the RNG after a checkpointed step is the plain step's",
          "[checkpointing]") {
  torch::manual_seed(5);
  AnyModel model = build_model(with_dropout(tiny_gpt_config()));
  const Pass checkpointed = train_pass(model, {gpt_batch(16)}, "blocks");
  const Pass plain = train_pass(model, {gpt_batch(16)}, "none");
  // The state moved (dropout drew numbers), by as much as the plain forward moved it: the rerun's draws are undone.
  torch::manual_seed(99);
  CHECK_FALSE(torch::equal(checkpointed.rng_after, cpu_rng_state()));
  CHECK(torch::equal(checkpointed.rng_after, plain.rng_after));
  // A second step after each: the same gradients again.
  CHECK(torch::equal(train_pass(model, {gpt_batch(17), gpt_batch(18)}, "blocks").grads.front(),
                     train_pass(model, {gpt_batch(17), gpt_batch(18)}, "none").grads.front()));
}

TEST_CASE("parameter hooks fire once per parameter per backward under checkpointing", "[checkpointing]") {
  torch::manual_seed(5);
  for (const auto& config : {with_dropout(tiny_gpt_config()), with_dropout(tiny_t5_config(), 2)}) {
    AnyModel model = build_model(config);
    auto params = model.module()->parameters();
    std::vector<int64_t> tensor_hooks(params.size(), 0), accumulator_hooks(params.size(), 0);
    // Tensor hooks, and post-hooks on the gradient accumulators as the bucketed all-reduce (gradient_sync.cpp) uses.
    struct Counter : torch::autograd::FunctionPostHook {
      explicit Counter(int64_t* count) : count_(count) {}
      torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                                const torch::autograd::variable_list&) override {
        ++*count_;
        return outputs;
      }
      int64_t* count_;
    };
    std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].register_hook([&tensor_hooks, i](torch::Tensor) { ++tensor_hooks[i]; });
      accumulators.push_back(torch::autograd::impl::grad_accumulator(params[i]));
      accumulators.back()->add_post_hook(std::make_unique<Counter>(&accumulator_hooks[i]));
    }
    const TrainBatch batch = config.arch == Arch::kT5 ? t5_batch(19) : gpt_batch(19);
    const Pass plain = train_pass(model, {batch}, "none");
    const auto plain_tensor_hooks = tensor_hooks, plain_accumulator_hooks = accumulator_hooks;
    std::fill(tensor_hooks.begin(), tensor_hooks.end(), 0);
    std::fill(accumulator_hooks.begin(), accumulator_hooks.end(), 0);
    train_pass(model, {batch}, "blocks");
    for (size_t i = 0; i < params.size(); ++i) {
      INFO(family_name(config) << " parameter " << model.module()->named_parameters()[i].key());
      CHECK(plain_tensor_hooks[i] == (plain.grads[i].defined() ? 1 : 0));
      CHECK(tensor_hooks[i] == plain_tensor_hooks[i]);
      CHECK(accumulator_hooks[i] == plain_accumulator_hooks[i]);
      CHECK(accumulator_hooks[i] == (plain.grads[i].defined() ? 1 : 0));
    }
  }
}

// LoRA freezes the embeddings, so no block input needs a gradient; the blocks' trainable parameters must still get
// theirs (an anchor puts the checkpointed node in the graph).
TEST_CASE("frozen embeddings and frozen weights: a checkpointed block still trains what is trainable",
          "[checkpointing]") {
  torch::manual_seed(5);
  AnyModel model = build_model(with_dropout(tiny_gpt_config()));
  int64_t trainable = 0;
  for (auto& item : model.module()->named_parameters()) {
    const bool train = item.key().find("attn.c_attn") != std::string::npos || item.key().find("ln_f") != std::string::npos;
    item.value().requires_grad_(train);
    trainable += train;
  }
  REQUIRE(trainable > 2);
  const TrainBatch batch = gpt_batch(20);
  const Pass plain = train_pass(model, {batch}, "none");
  const Pass checkpointed = train_pass(model, {batch}, "blocks");
  check_identical(plain, checkpointed, model);
  int64_t with_grad = 0;
  for (const auto& g : checkpointed.grads) with_grad += g.defined();
  CHECK(with_grad == trainable);
}

TEST_CASE("eval mode and no-grad forwards are untouched by the policy", "[checkpointing]") {
  torch::manual_seed(5);
  AnyModel model = build_model(with_dropout(tiny_gpt_config()));
  const auto idx = gpt_batch(21).input_ids;
  GPT gpt = model.as<GPT>();
  gpt->eval();
  const auto plain = gpt->forward(idx);
  gpt->set_activation_checkpointing(CheckpointPolicy{1});
  const auto checkpointed = gpt->forward(idx);
  CHECK(torch::equal(plain, checkpointed));
  CHECK(checkpointed.grad_fn()->name().find("Checkpoint") == std::string::npos);
  gpt->train();
  torch::NoGradGuard no_grad;
  CHECK_FALSE(gpt->forward(idx).requires_grad());
}

// Measured, not timed: the bytes allocated during the forward and still held when the loss exists are what the
// graph keeps for the backward. Checkpointing every block keeps each block's input alone; every-2 lies between.
TEST_CASE("checkpointed blocks keep fewer bytes for the backward", "[checkpointing]") {
  torch::manual_seed(5);
  ModelConfig c = with_dropout(tiny_gpt_config(kVocab, 64, 4, 64), 4);
  AnyModel model = build_model(c);
  torch::manual_seed(22);
  TrainBatch batch;
  batch.input_ids = torch::randint(0, kVocab, {8, 64}, torch::kLong);
  batch.labels = torch::randint(0, kVocab, {8, 64}, torch::kLong);
  const int64_t none = live_bytes_after_forward(model, batch, "none");
  const int64_t every2 = live_bytes_after_forward(model, batch, "every-2");
  const int64_t blocks = live_bytes_after_forward(model, batch, "blocks");
  const int64_t hidden_bytes = 8 * 64 * 64 * 4;  // one (B, T, C) fp32 hidden state
  INFO("bytes kept: none " << none << ", every-2 " << every2 << ", blocks " << blocks << "; one hidden state "
                           << hidden_bytes);
  CHECK(none > 4 * 8 * hidden_bytes);  // the plain graph holds several hidden states per block
  CHECK(blocks < none / 4);  // measured: 1/14
  CHECK(blocks < every2);
  CHECK(every2 < none);
  // What checkpointing removes is at least what the covered blocks' internals kept, less their inputs.
  CHECK(none - blocks > 4 * 4 * hidden_bytes);
}

TEST_CASE("lmzoo train --activation-checkpointing blocks: the loss falls, the weights equal an uncheckpointed run",
          "[checkpointing][cli]") {
  TempDir dir;
  const std::string base =
      "train --data " + tiny_corpus().data_dir + kTrainFlags + kGptFlags + " --steps 12 --batch-size 4 --eval-interval 12 ";
  const CliResult checkpointed = run_cli(base + "--activation-checkpointing blocks --out " + dir / "blocks");
  INFO(checkpointed.err);
  REQUIRE(checkpointed.exit_code == 0);
  const auto losses = train_losses(read_text(dir / "blocks/metrics.jsonl"));
  REQUIRE(losses.size() == 12);
  CHECK(losses.back() < losses.front() - 0.5);
  const CliResult plain = run_cli(base + "--out " + dir / "none");
  REQUIRE(plain.exit_code == 0);
  CHECK(max_weight_difference(dir / "blocks/last", dir / "none/last") == 0.0);
  CHECK(train_losses(read_text(dir / "none/metrics.jsonl")) == losses);
}

TEST_CASE("lmzoo train --activation-checkpointing with a bad value exits 2 with one line", "[checkpointing][cli]") {
  TempDir dir;
  const CliResult r = run_cli("train --data " + tiny_corpus().data_dir + " --activation-checkpointing every-0 --out " +
                              dir / "x");
  CHECK(r.exit_code == 2);
  check_user_error(r, "--activation-checkpointing must be none, blocks or every-N (N >= 1), got 'every-0'");
  CHECK_FALSE(std::filesystem::exists(dir / "x"));
}

TEST_CASE("2 data-parallel ranks: checkpointed blocks give the same weights as without, dropout on",
          "[checkpointing][distributed]") {
  TempDir dir;
  for (const auto& [family, flags] : std::vector<std::pair<std::string, std::string>>{{"gpt", kGptFlags}, {"t5", kT5Flags}}) {
    const std::string base = "train --data " + tiny_corpus().data_dir + kTrainFlags + flags +
                             " --steps 3 --batch-size 2 --eval-interval 3 ";
    const std::string blocks = dir / (family + "_blocks"), none = dir / (family + "_none");
    const auto checkpointed =
        run_ranks(2, [&](int) { return base + "--activation-checkpointing blocks --out " + blocks; }, dir);
    const auto plain = run_ranks(2, [&](int) { return base + "--out " + none; }, dir);
    for (int rank = 0; rank < 2; ++rank) {
      INFO(family << " rank " << rank << ": " << checkpointed.err[size_t(rank)] << plain.err[size_t(rank)]);
      REQUIRE(checkpointed.exit_codes[size_t(rank)] == 0);
      REQUIRE(plain.exit_codes[size_t(rank)] == 0);
    }
    CHECK(checkpointed.err[0].find("2 ranks (gloo)") != std::string::npos);
    CHECK(max_weight_difference(blocks + "/last", none + "/last") == 0.0);
  }
}
