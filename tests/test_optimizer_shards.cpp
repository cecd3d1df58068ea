// ZeRO-1 (--shard-optimizer): the owner assignment's balance, and two Gloo ranks that shard AdamW's state give the
// bits of two ranks that do not (weights and the saved optimizer state), resume across the switch, and each keep
// about half of the moments.
#include "tests/catch_compat.h"

#include <algorithm>
#include <random>

#include "models/torch_compat.h"
#include "tests/checkpoint_compare.h"
#include "tests/fixtures.h"
#include "tests/rank_launch.h"
#include "train/checkpoint/checkpoint.h"
#include "train/distributed/optimizer_shards.h"
#include "train/optimizer.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

const std::string kRun = " --device cpu --threads 1 --dropout 0 --warmup 1 --lr 3e-3 --log-interval 1 --eval-interval 2 "
                         "--eval-iters 2 --seed 7 --batch-size 2 --n-layer 2 --n-head 2 --d-model 32 --seq-len 16 ";

void require_all_exit_0(const RanksResult& r) {
  for (size_t i = 0; i < r.exit_codes.size(); ++i) {
    INFO("rank " << i << " stderr:\n" << r.err[i]);
    REQUIRE(r.exit_codes[i] == 0);
  }
}

RanksResult train_two_ranks(const std::string& args, const TempDir& dir) {
  const auto r = run_ranks(2, [&](int) { return "train " + args; }, dir);
  require_all_exit_0(r);
  return r;
}

void require_same_optimizer_state(const std::string& a, const std::string& b) {
  const auto sa = saved_optimizer(a), sb = saved_optimizer(b);
  REQUIRE(sa.size() == sb.size());
  int64_t with_state = 0;
  for (size_t i = 0; i < sa.size(); ++i) {
    INFO("parameter " << i << " of the optimizer");
    REQUIRE(sa[i].step == sb[i].step);
    if (sa[i].step < 0) continue;
    ++with_state;
    CHECK(torch::equal(sa[i].exp_avg, sb[i].exp_avg));
    CHECK(torch::equal(sa[i].exp_avg_sq, sb[i].exp_avg_sq));
  }
  CHECK(with_state > 0);
}

}  // namespace

TEST_CASE("owners: every tensor once, loads within the largest tensor of each other", "[distributed][zero]") {
  std::mt19937 random(3);
  for (int trial = 0; trial < 50; ++trial) {
    const int world = 1 + int(random() % 5);
    std::vector<int64_t> sizes(1 + random() % 40);
    for (auto& s : sizes) s = 1 + int64_t(random() % 5000);
    const auto owner = assign_owners(sizes, world);
    REQUIRE(owner.size() == sizes.size());
    std::vector<int64_t> load(size_t(world), 0);
    for (size_t i = 0; i < sizes.size(); ++i) {
      REQUIRE(owner[i] >= 0);
      REQUIRE(owner[i] < world);
      load[size_t(owner[i])] += sizes[i];
    }
    const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    CHECK(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()) <= largest);
    CHECK(assign_owners(sizes, world) == owner);  // every rank computes the same assignment
  }
  // By hand: the 9s go to ranks 0 and 1, the 5 to rank 0 (the tie's lower rank), the 2 to rank 1 (11 < 14).
  CHECK(assign_owners({5, 9, 9, 2}, 2) == std::vector<int>{0, 0, 1, 1});
}

TEST_CASE("2 sharded ranks = 2 unsharded ranks, bit for bit, and each keeps about half the moments",
          "[distributed][zero]") {
  TempDir dir;
  const std::string data = "--data " + tiny_corpus().data_dir + kRun;
  for (const std::string arch : {"gpt", "bert"}) {
    INFO("--arch " << arch);
    const std::string args = data + "--arch " + arch + " --steps 4 --out " + dir / arch;
    const auto sharded = train_two_ranks(args + "-sharded --shard-optimizer", dir);
    train_two_ranks(args + "-whole", dir);
    CHECK(same_weights(dir / (arch + "-sharded/last"), dir / (arch + "-whole/last")));
    // The optimizer.pt gathered to rank 0 holds what an unsharded rank holds (bert: the pooler, unused by masked
    // LM, has no state in either).
    require_same_optimizer_state(dir / (arch + "-sharded/last"), dir / (arch + "-whole/last"));
    // "rank 0 keeps K of N parameters' moments": N all the parameters, K within N/2 +- half the largest tensor.
    const std::string& err = sharded.err[0];
    const auto keeps = err.find("rank 0 keeps ");
    REQUIRE(keeps != std::string::npos);
    const int64_t kept = std::stoll(err.substr(keeps + 13));
    const int64_t total = std::stoll(err.substr(err.find(" of ", keeps) + 4));
    int64_t all = 0, largest = 0;
    for (const auto& p : load_model(read_checkpoint(dir / (arch + "-whole/last")), torch::kCPU).module()->parameters()) {
      all += p.numel();
      largest = std::max(largest, p.numel());
    }
    CHECK(total == all);
    CHECK(kept > 0);
    CHECK(std::abs(2 * kept - total) <= largest);
  }
}

TEST_CASE("sharding switched on and off across --resume: the bits of an uninterrupted run", "[distributed][zero]") {
  TempDir dir;
  const std::string args = "--data " + tiny_corpus().data_dir + kRun + "--decay-steps 4 ";
  train_two_ranks(args + "--steps 4 --out " + dir / "whole", dir);
  train_two_ranks(args + "--steps 2 --shard-optimizer --out " + dir / "on-off", dir);
  train_two_ranks("--resume " + dir / "on-off" + " --steps 4 --shard-optimizer=false", dir);
  train_two_ranks(args + "--steps 2 --out " + dir / "off-on", dir);
  train_two_ranks("--resume " + dir / "off-on" + " --steps 4 --shard-optimizer", dir);
  train_two_ranks(args + "--steps 2 --shard-optimizer --out " + dir / "on-on", dir);
  const auto resumed = train_two_ranks("--resume " + dir / "on-on" + " --steps 4", dir);
  CHECK(resumed.err[0].find("AdamW state sharded") != std::string::npos);  // the run's setting is kept
  for (const char* run : {"on-off", "off-on", "on-on"}) {
    INFO(run);
    CHECK(read_checkpoint(dir / run + "/last").state.step == 4);
    CHECK(same_weights(dir / run + "/last", dir / "whole/last"));
    require_same_optimizer_state(dir / run + "/last", dir / "whole/last");
  }
}
