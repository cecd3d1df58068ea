// Position scheme tests: sinusoidal values by hand, RoPE's relative-offset property and hand rotation,
// ALiBi slopes against Press et al.'s published values, the ALiBi bias formula; the variant config
// fields (validation, derived gated d_ff, version-2 files).
#include "tests/catch_compat.h"

#include <cmath>
#include <sstream>

#include "models/config.h"
#include "models/gpt.h"
#include "models/layers/positions.h"
#include "tests/model_fixtures.h"

using namespace lmzoo;

TEST_CASE("sinusoidal encodings equal hand-computed values", "[positions]") {
  auto table = sinusoidal_table(4, 4);  // frequencies 1 and 10000^(-2/4) = 0.01
  REQUIRE(table.sizes() == torch::IntArrayRef({4, 4}));
  for (int64_t p = 0; p < 4; ++p) {
    INFO("position " << p);
    CHECK(table[p][0].item<double>() == Approx(std::sin(double(p))).margin(1e-7));
    CHECK(table[p][1].item<double>() == Approx(std::cos(double(p))).margin(1e-7));
    CHECK(table[p][2].item<double>() == Approx(std::sin(0.01 * p)).margin(1e-7));
    CHECK(table[p][3].item<double>() == Approx(std::cos(0.01 * p)).margin(1e-7));
  }
}

TEST_CASE("rotary embeddings rotate each pair by position times frequency", "[positions][rope]") {
  // Head size 2: one frequency (1), so position p rotates (x1, x2) by p radians.
  auto tables = rotary_tables(8, 2, 10000.0);
  auto x = torch::tensor({1.0f, 0.0f}).view({1, 1, 1, 2});  // (B, T, nh, hs)
  auto rotated = apply_rotary(x, tables, 3);                  // position 3
  CHECK(rotated[0][0][0][0].item<double>() == Approx(std::cos(3.0)).margin(1e-6));
  CHECK(rotated[0][0][0][1].item<double>() == Approx(std::sin(3.0)).margin(1e-6));
  // Head size 4, base 100: frequencies 1 and 100^(-2/4) = 0.1 pair dims (0, 2) and (1, 3).
  auto tables4 = rotary_tables(8, 4, 100.0);
  auto y = apply_rotary(torch::tensor({0.0f, 1.0f, 0.0f, 0.0f}).view({1, 1, 1, 4}), tables4, 5);
  CHECK(y[0][0][0][1].item<double>() == Approx(std::cos(0.5)).margin(1e-6));
  CHECK(y[0][0][0][3].item<double>() == Approx(std::sin(0.5)).margin(1e-6));
  CHECK(y[0][0][0][0].item<double>() == Approx(0.0).margin(1e-7));
}

TEST_CASE("partial rotary rotates the first rope_fraction of each head and passes the rest", "[positions][rope]") {
  ModelConfig c = lmzoo::test::tiny_gpt_config(99, 32, 2);  // head size 16
  c.position = Position::kRope;
  c.rope_fraction = 0.25;
  c.validate();
  CHECK(rotary_dims(c) == 4);
  // Frequencies over the 4 rotated dims (GPT-NeoX's inv_freq), not over the head: base^(-2i/4).
  const auto tables = rotary_tables(8, rotary_dims(c), 100.0);
  REQUIRE(tables.cos.sizes() == torch::IntArrayRef({8, 4}));
  torch::manual_seed(4);
  auto x = torch::randn({1, 2, 3, 16});  // (B, T, nh, hs) at positions 5, 6
  auto y = apply_rotary(x, tables, 5);
  CHECK(torch::equal(y.slice(3, 4), x.slice(3, 4)));  // the last 12 dims unchanged
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t i = 0; i < 2; ++i) {  // pair (i, i + 2) rotated by (5 + t) * 100^(-2i/4)
      INFO("t " << t << " i " << i);
      const double angle = double(5 + t) * std::pow(100.0, -2.0 * double(i) / 4.0);
      const double a = x[0][t][1][i].item<double>(), b = x[0][t][1][i + 2].item<double>();
      CHECK(y[0][t][1][i].item<double>() == Approx(a * std::cos(angle) - b * std::sin(angle)).margin(1e-5));
      CHECK(y[0][t][1][i + 2].item<double>() == Approx(b * std::cos(angle) + a * std::sin(angle)).margin(1e-5));
    }
  }
  c.rope_fraction = 0.125;  // 2 dims: still even
  CHECK_NOTHROW(c.validate());
  c.rope_fraction = 0.1875;  // 3 dims
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("rope_fraction"));
}

TEST_CASE("RoPE attention scores depend only on the relative offset", "[positions][rope]") {
  torch::manual_seed(3);
  const int64_t hs = 16;
  auto tables = rotary_tables(64, hs, 10000.0);
  auto q = torch::randn({1, 1, 1, hs}), k = torch::randn({1, 1, 1, hs});
  auto score = [&](int64_t m, int64_t n) {
    return (apply_rotary(q, tables, m) * apply_rotary(k, tables, n)).sum().item<double>();
  };
  for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 2}, {2, 5}, {9, 9}, {20, 0}}) {
    const double base = score(m, n);
    for (int64_t shift : {1, 7, 30}) {
      INFO("m " << m << " n " << n << " shift " << shift);
      CHECK(score(m + shift, n + shift) == Approx(base).margin(1e-4));
    }
  }
  // ...and do depend on it: offsets 3 and 4 give different scores.
  CHECK(std::abs(score(7, 4) - score(8, 4)) > 1e-3);
}

TEST_CASE("ALiBi slopes equal the published values for 8 and 12 heads", "[positions][alibi]") {
  const auto eight = alibi_slopes(8);  // 2^-1 ... 2^-8
  REQUIRE(eight.size() == 8);
  for (int i = 0; i < 8; ++i) CHECK(eight[i] == Approx(std::pow(2.0, -(i + 1))).epsilon(1e-12));
  // 12 heads: the 8-head slopes, then every other slope of 16 heads: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  const auto twelve = alibi_slopes(12);
  REQUIRE(twelve.size() == 12);
  for (int i = 0; i < 8; ++i) CHECK(twelve[i] == Approx(eight[i]).epsilon(1e-12));
  const double extra[] = {std::pow(2.0, -0.5), std::pow(2.0, -1.5), std::pow(2.0, -2.5), std::pow(2.0, -3.5)};
  for (int i = 0; i < 4; ++i) CHECK(twelve[8 + i] == Approx(extra[i]).epsilon(1e-12));
}

TEST_CASE("ALiBi bias is -slope * |query - key| per head, offset by cached positions", "[positions][alibi]") {
  ModelConfig c = lmzoo::test::tiny_gpt_config();
  c.n_head = 2;  // slopes 2^-4, 2^-8
  c.position = Position::kAlibi;
  PositionTables tables(c);
  AttentionBias bias(c, false, tables);
  CHECK(bias->parameters().empty());
  auto b = bias(2, 5, 3, torch::kCPU);  // queries at 3, 4; keys 0..4
  REQUIRE(b.sizes() == torch::IntArrayRef({1, 2, 2, 5}));
  for (int64_t h = 0; h < 2; ++h) {
    const double slope = h == 0 ? 1.0 / 16 : 1.0 / 256;
    for (int64_t t = 0; t < 2; ++t) {
      for (int64_t s = 0; s < 5; ++s) {
        CHECK(b[0][h][t][s].item<double>() == Approx(-slope * std::abs(double(3 + t - s))).margin(1e-7));
      }
    }
  }
}

TEST_CASE("fixed position tables are buffers that move with the model and are never saved", "[positions][tables]") {
  for (const Position position : {Position::kSinusoidal, Position::kRope, Position::kAlibi}) {
    INFO(position);
    ModelConfig c = lmzoo::test::tiny_gpt_config();
    c.position = position;
    GPT model(c);
    REQUIRE(model->position_tables);
    const auto buffers = model->named_buffers();
    const std::string first = position == Position::kSinusoidal ? "position_tables.sinusoid"
                              : position == Position::kRope     ? "position_tables.rope_cos"
                                                                : "position_tables.alibi_slopes";
    REQUIRE(buffers.contains(first));
    CHECK(buffers[first].size(0) == (position == Position::kAlibi ? c.n_head : c.max_seq_len));
    // A checkpoint holds the learned weights only: the tables are derived from the config.
    torch::serialize::OutputArchive archive;
    model->save(archive);
    std::ostringstream bytes;
    archive.save_to(bytes);
    std::istringstream in(bytes.str());
    torch::serialize::InputArchive loaded;
    loaded.load_from(in);
    torch::serialize::InputArchive child;
    CHECK_FALSE(loaded.try_read("position_tables", child));
    GPT copy(c);
    copy->load(loaded);
    // .to() moves the one table the layers share: ALiBi's bias follows the model's dtype.
    model->to(torch::kDouble);
    CHECK(model->named_buffers()[first].scalar_type() == torch::kDouble);
    if (position == Position::kAlibi) CHECK(model->attn_bias(2, 5, 3, torch::kCPU).scalar_type() == torch::kDouble);
    auto idx = torch::randint(0, 99, {1, 6}, torch::kLong);
    CHECK(model->forward(idx).scalar_type() == torch::kDouble);
  }
}

TEST_CASE("variant config fields validate, derive d_ff and read older files", "[positions][config]") {
  ModelConfig c = lmzoo::test::tiny_gpt_config();  // d_model 32, 4 heads
  c.activation = Activation::kSwiglu;
  CHECK(c.ff_dim() == 128);  // 8/3 * 32 = 85 -> rounded up to 64's multiple
  c.d_model = 128;
  CHECK(c.ff_dim() == 384);  // 341 -> 384
  c.activation = Activation::kGelu;
  CHECK(c.ff_dim() == 512);
  c.d_ff = 100;
  CHECK(c.ff_dim() == 100);

  auto rejects = [](ModelConfig bad, const std::string& fragment) {
    INFO(fragment);
    try {
      bad.validate();
      FAIL("accepted a bad config");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
  };
  ModelConfig base = lmzoo::test::tiny_gpt_config();
  ModelConfig bad = base;
  bad.n_kv_heads = 3;
  rejects(bad, "n_kv_heads");
  nlohmann::json unknown_position = base;  // a name outside the table is refused as the file is read
  unknown_position["position"] = "rotary";
  CHECK_THROWS_WITH(model_config_from_json(unknown_position),
                    "model config: position 'rotary' is not one of learned|sinusoidal|rope|alibi|relative|none");
  bad = base;
  bad.vocab_multiple = 0;
  rejects(bad, "vocab_multiple");
  ModelConfig t5 = lmzoo::test::tiny_t5_config();
  t5.init = InitScheme::kGpt2;
  rejects(t5, "init 't5'");
  bad = base;
  bad.n_head = 32;  // head size 1: rope needs an even one
  bad.position = Position::kRope;
  rejects(bad, "even head size");

  // A version-2 file meant 4 * d_model for d_ff 0, gated or not; it keeps that meaning.
  nlohmann::json v2 = lmzoo::test::tiny_t5_config(true);
  v2["format_version"] = 2;
  v2["d_ff"] = 0;
  v2.erase("n_kv_heads");
  const ModelConfig old = model_config_from_json(v2);
  CHECK(old.ff_dim() == 4 * 32);
  CHECK(old.kv_heads() == old.n_head);
  // padded_vocab rounds up; 1 keeps the vocabulary as is.
  base.vocab_multiple = 64;
  CHECK(base.padded_vocab() == 128);
  base.vocab_multiple = 1;
  CHECK(base.padded_vocab() == 99);
}
