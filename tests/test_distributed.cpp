// Data-parallel training over c10d (Gloo, two CPU ranks launched as torchrun would, and by torchrun itself):
// N ranks of batch b = one rank of batch N*b = one rank with N micro-batches, for gpt, bert, t5 and chat
// fine-tuning's answer-weighted steps; bit-identical resume; an agreed stop on SIGTERM; a dead, a missing and a
// mis-configured rank; the launcher's environment.
#include "tests/catch_compat.h"

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tests/checkpoint_compare.h"
#include "tests/fixtures.h"
#include "tests/rank_launch.h"
#include "tests/smollm2_tokenizer.h"
#include "train/checkpoint/checkpoint.h"
#include "train/distributed/data_parallel.h"
#include "train/distributed/distributed_env.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

const std::string kCommon = " --device cpu --threads 1 --dropout 0 --warmup 1 --lr 3e-3 --log-interval 1 "
                            "--eval-interval 1 --eval-iters 2 --seed 7 ";
const std::string kGpt = " --n-layer 2 --n-head 2 --d-model 32 --seq-len 16 ";
const std::string kBert = " --arch bert --n-layer 2 --n-head 2 --d-model 32 --seq-len 24 ";
const std::string kT5 = " --arch t5 --n-layer 1 --n-head 2 --d-model 32 --seq-len 24 ";

std::string train_one(const std::string& args) {
  const CliResult r = run_cli("train " + args);
  INFO("lmzoo train " << args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

void require_all_exit(const RanksResult& r, int code) {
  for (size_t i = 0; i < r.exit_codes.size(); ++i) {
    INFO("rank " << i << " stderr:\n" << r.err[i]);
    REQUIRE(r.exit_codes[i] == code);
  }
}

// Every parameter's gradient of a run's one step, read back from AdamW's first moment (m = (1 - beta1) g after one
// step; lmzoo train --grad-clip 0 leaves g unclipped), concatenated, in fp64.
torch::Tensor first_step_gradient(const std::string& checkpoint_dir, double beta1) {
  std::vector<torch::Tensor> parts;
  for (const auto& m : saved_optimizer(checkpoint_dir)) {
    if (m.step == 1) parts.push_back(m.exp_avg.flatten().to(torch::kDouble) / (1.0 - beta1));
  }
  REQUIRE_FALSE(parts.empty());
  return torch::cat(parts);
}

// Two ranks of batch b and one rank of b with two micro-batches: the same bits after several steps (the same
// sums in the same order). One rank of batch 2b is the same mathematics in another summation order, so no bit
// equality: it is compared by the gradient of its first step, before the optimizer (AdamW's first step moves a
// weight by lr0 * g / (|g| + eps), near sign(g), so a gradient that nearly cancels can move by up to 2 lr0 between
// two orders: weights say nothing). The bound: each gradient element is a sum over the step's n token positions,
// and two orders of a sum of n fp32 terms differ by at most 2 n u sum|terms| (u = 2^-24; Higham, Accuracy and
// Stability, 4.2); the backward chains at most kChain such sums (2 per block, embeddings, head, norms), so the
// two gradients differ by at most kChain * 2 n u * ||sum over tokens of |term|||. That last norm is not in a
// checkpoint; the check assumes the step's gradient is at least 1/kCancellation of it as a whole (not per element,
// where a near-zero sum can be far smaller). That holds by a wide margin for a first step from initialization,
// where every token pushes the same embeddings and biases, and what a wrong weighting of micro-batches gives is
// far above the bound: rank 0's half of the batch alone is more than 10% away.
void check_equivalence(const std::string& model_flags, int64_t b, int64_t seq_len, const TempDir& dir,
                       const std::string& data_dir = tiny_corpus().data_dir, const std::string& common = kCommon) {
  const std::string base = "train --data " + data_dir + common + model_flags + " --steps 3 ";
  const auto ranks = run_ranks(2, [&](int) { return base + "--batch-size " + std::to_string(b) + " --out " + dir / "ranks"; }, dir);
  require_all_exit(ranks, 0);
  CHECK(ranks.err[0].find("2 ranks (gloo)") != std::string::npos);
  CHECK(ranks.err[0].find("global batch " + std::to_string(2 * b)) != std::string::npos);
  CHECK(ranks.err[1].empty());  // rank 0 alone reports
  const auto accum = nlohmann::json::parse(
      train_one(base.substr(6) + "--batch-size " + std::to_string(b) + " --grad-accum 2 --out " + dir / "accum"));
  CHECK(max_weight_difference(dir / "ranks/last", dir / "accum/last") == 0.0);

  const std::string one_step = base.substr(6) + "--steps 1 --grad-clip 0 --batch-size ";
  train_one(one_step + std::to_string(b) + " --grad-accum 2 --out " + dir / "accum1");
  train_one(one_step + std::to_string(2 * b) + " --out " + dir / "big1");
  train_one(one_step + std::to_string(b) + " --out " + dir / "half1");
  const double beta1 = 0.9;  // lmzoo train's default
  const torch::Tensor big = first_step_gradient(dir / "big1/last", beta1);
  const double scale = big.norm().item<double>();
  const double accum_difference = (first_step_gradient(dir / "accum1/last", beta1) - big).norm().item<double>();
  const double half_difference = (first_step_gradient(dir / "half1/last", beta1) - big).norm().item<double>();
  constexpr double kChain = 16, kCancellation = 10, u = 1.0 / (1 << 24);
  const double n = double(2 * b * seq_len);
  const double bound = kCancellation * kChain * 2 * n * u * scale;
  INFO("one step's gradient: accum vs big " << accum_difference << ", bound " << bound << ", half vs big "
                                            << half_difference << ", |big| " << scale);
  CHECK(accum_difference <= bound);
  CHECK(half_difference > 0.1 * scale);
  // The losses: sums of the same per-token losses (the ranks' batches are the accumulation's micro-batches, on the
  // same weights) in another order, each term positive, so no cancellation: at most 2 N u of the loss apart, N the
  // terms (validation: --eval-iters 2 batches of 2b at most), and one rounding of the mean.
  const auto summary = nlohmann::json::parse(ranks.out[0]);
  for (const char* key : {"val_loss", "train_loss"}) {
    const double loss = accum[key].get<double>();
    INFO(key << ": ranks " << summary[key].get<double>() << ", accum " << loss);
    CHECK(std::abs(summary[key].get<double>() - loss) <= (2 * (2 * n) + 1) * u * loss);
  }
  // Only rank 0 wrote: one metrics record per step and eval, no duplicates.
  CHECK(count_lines(read_text(dir / "ranks/metrics.jsonl")) == 6);
}

// Conversations whose answers run from 1 to 24 bytes (tokens, with the byte-level tokenizer), so that micro-batches
// score very different numbers of tokens: a step must weight each by its scored tokens, across ranks too.
std::string uneven_chats_jsonl() {
  std::string out;
  for (int i = 0; i < 64; ++i) {
    const std::string answer = std::string(1 + (i * 7) % 24, static_cast<char>('a' + i % 26));
    const nlohmann::json messages = nlohmann::json::array(
        {{{"role", "user"}, {"content", std::to_string(i)}}, {{"role", "assistant"}, {"content", answer}}});
    out += nlohmann::json{{"messages", messages}}.dump() + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("2 ranks of chat fine-tuning (answers only, padded and packed) = 1 rank of twice the batch = grad-accum 2",
          "[distributed][chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  write_text(dir / "chats.jsonl", uneven_chats_jsonl());
  const CliResult prepared = run_cli("prepare --tokenizer " + (dir / "tok") + " --chat " + (dir / "chats.jsonl") +
                                     " --out " + (dir / "data") + " --val-fraction 0.25");
  INFO(prepared.err);
  REQUIRE(prepared.exit_code == 0);
  for (const char* layout : {"", " --packing "}) {
    CAPTURE(layout);
    TempDir runs;
    // Chat validation scores the whole validation split (16 conversations), not --eval-iters batches.
    const std::string common = kCommon.substr(0, kCommon.find("--eval-iters")) + kCommon.substr(kCommon.find("--seed"));
    check_equivalence(" --n-layer 2 --n-head 2 --d-model 32 --seq-len 48 " + std::string(layout), 2, 48, runs,
                      dir / "data", common);
  }
}

TEST_CASE("2 gpt ranks = 1 rank of twice the batch = grad-accum 2, and torchrun launches the same", "[distributed][gpt][equality]") {
  TempDir dir;
  check_equivalence(kGpt, 2, 16, dir);
  // torchrun (Debian's python3-torch) with its agent's store: the same bits as the hand-launched ranks.
  if (std::system("command -v torchrun >/dev/null 2>&1") != 0) {
    WARN("torchrun not installed: its launch is not checked");
    return;
  }
  // tools/torchrun.py: torchrun with its store served without libuv, so that it starts on PyTorch 2.4+ built
  // without libuv (Debian 13's 2.6) as on 1.13.
  const std::string launch = "/usr/bin/python3 " LMZOO_SOURCE_DIR "/tools/torchrun.py --nproc_per_node 2 --nnodes 1 --master_port " + std::to_string(free_port()) +
                             " --no_python -r 9:0 -t 9:0 " + LMZOO_BINARY + " train --data " + tiny_corpus().data_dir +
                             kCommon + kGpt + " --steps 3 --batch-size 2 --out " + dir / "torchrun";
  const pid_t pid = spawn_shell(launch, dir / "torchrun.out", dir / "torchrun.err");
  const int code = wait_exit_code(pid);
  const std::string err = read_text(dir / "torchrun.err");
  INFO(err);
  REQUIRE(code == 0);
  CHECK(max_weight_difference(dir / "torchrun/last", dir / "ranks/last") == 0.0);
}

TEST_CASE("2 bert ranks (masked LM) = 1 rank of twice the batch = grad-accum 2", "[distributed][bert]") {
  TempDir dir;
  check_equivalence(kBert, 2, 24, dir);
}

TEST_CASE("2 t5 ranks (span corruption) = 1 rank of twice the batch = grad-accum 2", "[distributed][t5]") {
  TempDir dir;
  check_equivalence(kT5, 2, 24, dir);
}

TEST_CASE("2 ranks of a LoRA run = 1 rank with grad-accum 2; only the adapters change", "[distributed][lora]") {
  TempDir dir;
  train_one("--data " + tiny_corpus().data_dir + kCommon + kGpt + " --steps 2 --batch-size 2 --out " + dir / "base");
  // --dropout 0 is a model flag, which --init refuses; the base was trained without dropout.
  const std::string common = " --device cpu --threads 1 --warmup 1 --lr 3e-3 --log-interval 1 --eval-interval 1 "
                             "--eval-iters 2 --seed 7 ";
  const std::string lora = "train --data " + tiny_corpus().data_dir + common + " --init " + dir / "base" +
                           " --lora-rank 2 --lora-targets all-linear --lora-dropout 0 --steps 3 --batch-size 2 ";
  require_all_exit(run_ranks(2, [&](int) { return lora + "--out " + dir / "ranks"; }, dir), 0);
  train_one(lora.substr(6) + "--grad-accum 2 --out " + dir / "accum");
  CHECK(max_weight_difference(dir / "ranks/last", dir / "accum/last") == 0.0);
  double largest_b = 0;  // lora_B starts at zero: it moved
  for (const auto& p : load_model(read_checkpoint(dir / "ranks/last"), torch::kCPU).module()->named_parameters()) {
    if (p.key().find("lora_B") != std::string::npos) largest_b = std::max(largest_b, p.value().abs().max().item<double>());
  }
  CHECK(largest_b > 0.0);
}

TEST_CASE("2 ranks resume to the same bits as an uninterrupted 2-rank run", "[distributed][resume][equality]") {
  TempDir dir;
  const std::string base = "train --data " + tiny_corpus().data_dir + kCommon + kGpt + " --batch-size 2 --decay-steps 4 ";
  require_all_exit(run_ranks(2, [&](int) { return base + "--steps 4 --out " + dir / "whole"; }, dir), 0);
  require_all_exit(run_ranks(2, [&](int) { return base + "--steps 2 --out " + dir / "split"; }, dir), 0);
  require_all_exit(run_ranks(2, [&](int) { return "train --resume " + dir / "split" + " --steps 4"; }, dir), 0);
  CHECK(read_checkpoint(dir / "split/last").state.step == 4);
  CHECK(max_weight_difference(dir / "split/last", dir / "whole/last") == 0.0);
}

TEST_CASE("SIGTERM to every rank: rank 0 saves once and all ranks exit 130", "[distributed][signal]") {
  TempDir dir;
  const std::string args = "train --data " + tiny_corpus().data_dir + kCommon + kGpt +
                           " --batch-size 2 --steps 100000 --eval-interval 100000 --out " + dir / "run";
  const Ranks ranks = start_ranks(2, [&](int) { return args; }, dir);
  // Wait until training runs (rank 0 logged a step), then signal both, as torchrun does.
  for (int i = 0; i < 600 && count_lines(read_text(dir / "run/metrics.jsonl")) < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (pid_t pid : ranks.pids) ::kill(pid, SIGTERM);
  const RanksResult r = wait_ranks(ranks);
  require_all_exit(r, 130);
  const auto saved = read_checkpoint(dir / "run/last").state.step;
  CHECK(saved > 0);
  CHECK(saved < 100000);
  CHECK(nlohmann::json::parse(r.out[0])["interrupted"] == true);
  CHECK(r.err[0].find("interrupted: saved") != std::string::npos);
}

TEST_CASE("a rank that dies, never joins or runs other flags stops the others with one line", "[distributed][faults]") {
  TempDir dir;
  const std::string args = "train --data " + tiny_corpus().data_dir + kCommon + kGpt + " --batch-size 2 --steps 50 ";
  SECTION("rank 1 is killed at step 2: rank 0 exits 1 at once, not after --dist-timeout") {
    const auto r = run_ranks(2, [&](int) { return args + "--dist-timeout 60 --out " + dir / "dead"; }, dir,
                             [](int rank) { return rank == 1 ? "LMZOO_TEST_KILL_AT_STEP=2" : ""; }, {}, LMZOO_FAULTS_BINARY);
    CHECK(r.exit_codes[1] == -SIGKILL);
    CHECK(r.exit_codes[0] == 1);
    // After two steps' progress, one error line: the last.
    const std::string& err = r.err[0];
    const std::string last_line = err.substr(err.rfind('\n', err.size() - 2) + 1);
    CHECK(err.find("lmzoo train: error:") == err.rfind("lmzoo train: error:"));
    CHECK(last_line.rfind("lmzoo train: error: rank 0 of 2: lost contact with another rank", 0) == 0);
    CHECK(r.seconds < 40);
    CHECK(read_checkpoint(dir / "dead/last").state.step == 2);  // the last good checkpoint stays
  }
  SECTION("rank 1 never starts: rank 0 gives up after --dist-timeout") {
    const auto r = run_ranks(2, [&](int) { return args + "--dist-timeout 8 --out " + dir / "alone"; }, dir, {}, {0});
    CHECK(r.exit_codes[0] == 1);
    CHECK(count_lines(r.err[0]) == 1);  // c10d's own log lines stay off stderr
    CHECK(r.err[0].find("rank 0 of 2: could not form the process group with the other ranks (only 1 of 2 ranks "
                        "joined within --dist-timeout)") != std::string::npos);
    CHECK(r.seconds >= 8);
    CHECK(r.seconds < 8 + 4);  // one --dist-timeout and the start, not one for the store and one for the group
    CHECK_FALSE(std::filesystem::exists(dir / "alone"));
  }
  SECTION("rank 1 runs another --lr: every rank refuses to start") {
    const auto r = run_ranks(2, [&](int rank) { return args + (rank ? "--lr 1e-3" : "") + " --out " + dir / "mixed"; }, dir);
    CHECK(r.exit_codes[0] == 2);
    CHECK(r.exit_codes[1] == 2);
    CHECK(r.err[1] == "lmzoo train: error: rank 1 was started with settings other than rank 0's: every rank must "
                      "run the same lmzoo train command line\n");
    CHECK(count_lines(r.err[0]) == 1);
    CHECK_FALSE(std::filesystem::exists(dir / "mixed"));
  }
}

TEST_CASE("the launcher's environment: none means one process, nonsense is one clear error", "[distributed][env]") {
  auto with_env = [](std::vector<std::pair<const char*, const char*>> vars) {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                             "TORCHELASTIC_USE_AGENT_STORE"}) {
      ::unsetenv(name);
    }
    for (auto [name, value] : vars) ::setenv(name, value, 1);
  };
  auto error_of = [](auto&& vars_setter) -> std::string {
    vars_setter();
    try {
      distributed_env_from_environment();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  with_env({});
  CHECK_FALSE(distributed_env_from_environment().has_value());
  with_env({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.2"},
            {"MASTER_PORT", "29400"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  const auto env = distributed_env_from_environment();
  REQUIRE(env.has_value());
  CHECK(env->rank == 1);
  CHECK(env->world_size == 4);
  CHECK(env->local_rank == 1);
  CHECK(env->master_addr == "10.0.0.2");
  CHECK(env->master_port == 29400);
  CHECK(env->agent_store);
  CHECK(error_of([&] { with_env({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}); }) ==
        "RANK=2 is outside 0..1 (WORLD_SIZE=2)");
  CHECK(error_of([&] { with_env({{"RANK", "0"}}); }) == "RANK is set but WORLD_SIZE is not");
  CHECK(error_of([&] { with_env({{"RANK", "x"}, {"WORLD_SIZE", "2"}}); }) == "RANK=x is not an integer");
  CHECK(error_of([&] { with_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}); }) ==
        "MASTER_PORT=70000 is not a TCP port");
  CHECK(error_of([&] { with_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}); })
            .rfind("MASTER_ADDR is not set", 0) == 0);
  with_env({});
  // The CLI: exit 2, one line, nothing created.
  TempDir dir;
  const CliResult r = run_cli_env("RANK=3 WORLD_SIZE=2", "train --data " + tiny_corpus().data_dir + " --out " + dir / "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmzoo train: error: RANK=3 is outside 0..1 (WORLD_SIZE=2)\n");
  CHECK_FALSE(std::filesystem::exists(dir / "x"));
}

TEST_CASE("parameter digests see one changed bit and ignore summation order", "[distributed][digest]") {
  torch::manual_seed(0);
  torch::nn::Linear a(8, 8), b(8, 8);
  {
    torch::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  CHECK(parameter_bits_digest(*a) == parameter_bits_digest(*b));
  {
    torch::NoGradGuard no_grad;
    b->weight[3][5] = std::nextafter(b->weight[3][5].item<float>(), 2.0f);  // one ulp
  }
  CHECK(parameter_bits_digest(*a) != parameter_bits_digest(*b));
  {
    torch::NoGradGuard no_grad;  // two values swapped: the same multiset of bits, in other places
    b->weight.copy_(a->weight);
    b->weight[0][0] = a->weight[0][1].item<float>();
    b->weight[0][1] = a->weight[0][0].item<float>();
  }
  CHECK(parameter_bits_digest(*a) != parameter_bits_digest(*b));
}
