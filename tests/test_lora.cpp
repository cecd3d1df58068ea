// LoRA: unmerged adapters equal the merged model on every family, a LoRA run trains only its adapters and leaves
// the base bit-identical, resumes bit-exactly, is tied to its base by digest, lowers the frozen base to bf16, and
// composes with activation checkpointing; the CLI's train / eval / generate / merge-lora / export, PEFT files
// checked against tests/peft_reference.py and imported back; bad flags.
#include "tests/catch_compat.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "data/safetensors.h"
#include "data/tokenizers/tokenizer.h"
#include "models/activation_checkpointing.h"
#include "models/kernels/low_precision_linear.h"
#include "models/lora.h"
#include "models/registry.h"
#include "tests/cli_checks.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "train/checkpoint/checkpoint.h"
#include "train/peft/lora_merge.h"
#include "train/peft/lora_setup.h"
#include "train/task.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

LoraSettings all_linear(int64_t rank) {
  LoraSettings s;
  s.rank = rank;
  s.alpha = 2.0 * double(rank);
  s.dropout = 0.0;
  s.targets = parse_lora_targets("all-linear");
  return s;
}

// Every lora_B drawn at random, so that the adapters change the output (a new adapter's B is zero).
void randomize_adapters(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.named_parameters()) {
    if (p.key().find("lora_B") != std::string::npos) p.value().normal_(0.0, 0.2);
  }
}

// The model's output on fixed inputs: logits of every family (a classifier's class logits).
torch::Tensor outputs(AnyModel& model) {
  torch::NoGradGuard no_grad;
  const int64_t V = model.config().vocab_size;
  auto ids = torch::arange(24, torch::kLong).remainder(V - 5).add(3).view({2, 12});  // (2, 12)
  return model.visit(Overloaded{
      [&](GPT m) { return m->forward(ids); },
      [&](Bert m) { return m->forward(ids); },
      [&](BertClassifier m) { return m->forward(ids); },
      [&](T5 m) { return m->forward(ids, torch::ones_like(ids), ids.narrow(1, 0, 7)); },
  });
}

std::set<std::string> parameter_names(const torch::nn::Module& module) {
  std::set<std::string> names;
  for (const auto& p : module.named_parameters()) names.insert(p.key());
  return names;
}

ModelConfig llama_like_config() {
  ModelConfig c = tiny_gpt_config();
  c.position = Position::kRope;
  c.norm = NormKind::kRmsNorm;
  c.activation = Activation::kSwiglu;
  c.n_kv_heads = 2;
  c.qkv_bias = true;
  c.tie_embeddings = false;
  return c;
}

ModelConfig classifier_config() {
  ModelConfig c = tiny_bert_config();
  c.labels = {"a", "b", "c"};
  return c;
}

}  // namespace

TEST_CASE("LoRA: unmerged adapters equal the merged model, which has the plain model's tensors", "[lora]") {
  struct Case {
    const char* name;
    ModelConfig config;
  };
  const Case cases[] = {{"gpt", tiny_gpt_config()},
                        {"llama-like (rope, swiglu, gqa, qkv bias)", llama_like_config()},
                        {"bert", tiny_bert_config()},
                        {"bert classifier", classifier_config()},
                        {"t5 v1.1 (gated, 3 decoder layers)", tiny_t5_config(/*gated=*/true)}};
  for (const Case& c : cases) {
    INFO(c.name);
    torch::manual_seed(3);
    AnyModel model = build_model(c.config);
    model.module()->eval();
    const auto plain_names = parameter_names(*model.module());
    const auto before = outputs(model);
    const int64_t adapters = attach_lora(*model.module(), all_linear(4));
    // Each attention (t5: self and cross) has q, k, v, o; each feed-forward up and down, gated ones also gate.
    const int64_t blocks = c.config.n_layer + (c.config.arch == Arch::kT5 ? c.config.decoder_layers() : 0);
    const int64_t per_block = 4 + (c.config.gated_ffn() ? 3 : 2);
    CHECK(adapters == blocks * per_block + (c.config.arch == Arch::kT5 ? 4 * c.config.decoder_layers() : 0));
    int64_t adapter_parameters = 0;
    for (const auto& p : model.module()->named_parameters()) {
      if (is_lora_tensor(p.key())) adapter_parameters += p.value().numel();
    }
    CHECK(adapter_parameters == lora_parameter_count(c.config, all_linear(4)));
    CHECK(torch::equal(outputs(model), before));  // B = 0: a new adapter changes nothing
    randomize_adapters(*model.module());
    const auto adapted = outputs(model);
    CHECK((adapted - before).abs().max().item<double>() > 1e-4);  // a classifier's pooled tanh moves least
    merge_lora(*model.module());
    CHECK(parameter_names(*model.module()) == plain_names);
    const auto merged = outputs(model);
    const double scale = adapted.abs().max().item<double>();
    CHECK((merged - adapted).abs().max().item<double>() <= 2e-6 * std::max(1.0, scale));
  }
}

namespace {

// A fixed batch for MODEL's family (2 rows): next tokens (gpt), a masked token per row (bert), a class (classifier),
// targets of the encoder input (t5).
TrainBatch fixed_batch(const ModelConfig& config) {
  TrainBatch b;
  const int64_t V = config.vocab_size;
  b.input_ids = torch::arange(24, torch::kLong).remainder(V - 5).add(3).view({2, 12});  // (2, 12)
  b.attention_mask = torch::ones_like(b.input_ids);
  switch (config.arch) {
    case Arch::kGpt: b.labels = (b.input_ids * 7).remainder(V); break;
    case Arch::kT5:
      b.decoder_input_ids = b.input_ids.narrow(1, 0, 6).contiguous();  // (2, 6)
      b.labels = (b.decoder_input_ids * 5).remainder(V);
      break;
    case Arch::kBert:
      if (!config.labels.empty()) {
        b.labels = torch::tensor({0, 2}, torch::kLong);
      } else {
        b.labels = torch::full_like(b.input_ids, -1);
        b.labels.select(1, 4).fill_(11);
        b.labels.select(1, 7).fill_(13);
        b.input_ids.select(1, 4).fill_(1);
      }
      break;
  }
  return b;
}

}  // namespace

TEST_CASE("LoRA trains on each family: the loss of a fixed batch falls, the base stays bit-identical", "[lora]") {
  const std::pair<const char*, ModelConfig> cases[] = {{"gpt", tiny_gpt_config()},
                                                       {"llama-like", llama_like_config()},
                                                       {"bert", tiny_bert_config()},
                                                       {"bert classifier", classifier_config()},
                                                       {"t5", tiny_t5_config(/*gated=*/true)}};
  for (const auto& [name, config] : cases) {
    INFO(name);
    torch::manual_seed(11);
    AnyModel model = build_model(config);
    std::map<std::string, torch::Tensor> base;
    for (const auto& p : model.module()->named_parameters()) base[p.key()] = p.value().detach().clone();
    TrainConfig t;
    t.lora_rank = 4;
    t.lora_dropout = 0.0;
    t.lora_targets = "q,v,o,down";
    attach_lora(*model.module(), lora_settings(t));
    freeze_all_but_trainable(model, t);
    std::vector<torch::Tensor> trainable;
    for (const auto& p : model.module()->named_parameters()) {
      const bool head = config.labels.size() > 0 && p.key().rfind("classifier.", 0) == 0;
      CHECK(p.value().requires_grad() == (is_lora_tensor(p.key()) || head));
      if (p.value().requires_grad()) trainable.push_back(p.value());
    }
    torch::optim::AdamW optimizer(trainable, torch::optim::AdamWOptions(3e-2).weight_decay(0.0));
    const TrainBatch batch = fixed_batch(config);
    std::vector<double> losses;
    for (int step = 0; step < 30; ++step) {
      optimizer.zero_grad();
      auto loss = task_loss(model, batch);
      loss.backward();
      optimizer.step();
      losses.push_back(loss.item<double>());
    }
    INFO("loss " << losses.front() << " -> " << losses.back());
    CHECK(losses.back() < losses.front() - 0.1);  // the base is frozen: without the adapters nothing moves
    for (const auto& p : model.module()->named_parameters()) {
      if (base.count(p.key()) && !p.value().requires_grad()) {
        CHECK(torch::equal(p.value(), base.at(p.key())));
        CHECK_FALSE(p.value().grad().defined());
      }
    }
  }
}

TEST_CASE("LoRA with activation checkpointing: the adapters' gradients are bit for bit those without", "[lora]") {
  for (const ModelConfig& base_config : {llama_like_config(), tiny_t5_config(/*gated=*/true)}) {
    ModelConfig config = base_config;
    config.dropout = 0.1;
    TrainConfig t;
    t.lora_rank = 4;
    t.lora_dropout = 0.1;  // the adapters' own dropout masks must be recomputed identically too
    t.lora_targets = "all-linear";
    std::vector<std::map<std::string, torch::Tensor>> grads;
    for (const char* policy : {"none", "blocks"}) {
      torch::manual_seed(21);
      AnyModel model = build_model(config);
      attach_lora(*model.module(), lora_settings(t));
      randomize_adapters(*model.module());
      freeze_all_but_trainable(model, t);
      set_activation_checkpointing(model, parse_checkpoint_policy(policy));
      model.module()->train();
      torch::manual_seed(22);
      task_loss(model, fixed_batch(config)).backward();
      std::map<std::string, torch::Tensor> g;
      for (const auto& p : model.module()->named_parameters()) {
        if (p.value().requires_grad()) g[p.key()] = p.value().grad().clone();
      }
      grads.push_back(g);
    }
    REQUIRE(grads[0].size() == grads[1].size());
    for (const auto& [name, g] : grads[0]) {
      INFO(name);
      CHECK(torch::equal(g, grads[1].at(name)));
    }
  }
}

TEST_CASE("LoRA: targets and ranks are checked against the model's layers", "[lora]") {
  AnyModel gpt = build_model(tiny_gpt_config());  // gelu feed-forward: no gate
  LoraSettings gate = all_linear(2);
  gate.targets = parse_lora_targets("q,gate");
  CHECK_THROWS_WITH(attach_lora(*gpt.module(), gate),
                    Catch::Contains("'gate' matches no layer of this model (it has q,k,v,o,up,down)"));
  LoraSettings wide = all_linear(33);  // d_model 32
  CHECK_THROWS_WITH(attach_lora(*build_model(tiny_gpt_config()).module(), wide),
                    Catch::Contains("--lora-rank 33 exceeds the smaller side (32)"));
  CHECK_THROWS_WITH(parse_lora_targets("q,x"), Catch::Contains("unknown part 'x'"));
  CHECK(parse_lora_targets("v,q,v") == std::vector<LoraTarget>{LoraTarget::kValue, LoraTarget::kQuery});
  CHECK(parse_lora_targets("all-linear").size() == 7);
}

namespace {

// A tiny gpt trained for a few steps on the fixture's data: the base LoRA runs adapt.
TrainRequest base_request(const Fixture& f, const std::string& out, uint64_t seed) {
  TrainRequest r;
  r.model = tiny_gpt_config(f.vocab_size, 32, 4, 32);
  r.model.dropout = 0.1;
  r.tokenizer_model = Tokenizer::load(f.data_dir).serialized();
  r.train.data_dir = f.data_dir;
  r.train.out_dir = out;
  r.train.steps = 20;
  r.train.lr = 1e-2;
  r.train.warmup = 0;
  r.train.batch_size = 4;
  r.train.eval_interval = 20;
  r.train.eval_iters = 1;
  r.train.device = "cpu";
  r.train.seed = seed;
  r.show_progress = false;
  return r;
}

TrainRequest lora_request(const Fixture& f, const std::string& base, const std::string& out, int64_t steps) {
  TrainRequest r = base_request(f, out, 1);  // the base's seed: the same validation sample
  r.model = read_checkpoint(base).model;
  r.train.init_checkpoint = base;
  r.train.steps = steps;
  r.train.lr = 3e-2;
  r.train.warmup = 0;
  r.train.eval_interval = steps;
  r.train.lora_rank = 4;
  r.train.lora_targets = "all-linear";
  r.train.lora_dropout = 0.1;
  return r;
}

std::map<std::string, torch::Tensor> adapter_tensors(const std::string& checkpoint_dir) {
  const auto file = SafetensorsFile::open(checkpoint_dir + "/" + kAdapterFile);
  std::map<std::string, torch::Tensor> out;
  for (const auto& name : file.names()) out[name] = file.tensor(name);
  return out;
}

}  // namespace

TEST_CASE("LoRA run: only adapters train, the base stays bit-identical, resume is bit-exact", "[lora]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const double base_val = train_model(base_request(f, dir / "base", 1), torch::kCPU).last_val_loss;
  const std::string base_dir = resolve_checkpoint_dir(dir / "base");
  const std::string digest = weights_digest(base_dir);

  // The same validation sample: the adapters lower its loss.
  const double lora_val = train_model(lora_request(f, dir / "base", dir / "lora", 30), torch::kCPU).last_val_loss;
  INFO("val loss: base " << base_val << ", LoRA " << lora_val);
  CHECK(lora_val < base_val - 1e-3);  // zero-initialised B: an adapter that learnt nothing scores base_val exactly

  const CheckpointInfo run = read_checkpoint(dir / "lora");
  CHECK(fs::exists(fs::path(run.dir) / kAdapterFile));
  CHECK_FALSE(fs::exists(fs::path(run.dir) / "model.pt"));
  CHECK(run.train.lora_base_digest == digest);
  CHECK(run.train.init_checkpoint == fs::absolute(base_dir).lexically_normal().string());
  CHECK(weights_digest(base_dir) == digest);  // the base's file is untouched
  for (const auto& [name, tensor] : adapter_tensors(run.dir)) CHECK(is_lora_tensor(name));

  SECTION("loaded, the base parameters equal the base checkpoint's bit for bit; only adapters differ") {
    AnyModel adapted = load_model(run, torch::kCPU);
    AnyModel original = load_model(read_checkpoint(base_dir), torch::kCPU);
    auto params = adapted.module()->named_parameters();
    int64_t base_tensors = 0;
    for (const auto& p : original.module()->named_parameters()) {
      CHECK(torch::equal(params[p.key()], p.value()));
      ++base_tensors;
    }
    CHECK(int64_t(params.size()) == base_tensors + 2 * 2 * 6);  // 2 layers x 6 adapters (no gate) x A, B
  }
  SECTION("a run resumed halfway ends with the same adapters bit for bit") {
    TrainRequest first = lora_request(f, dir / "base", dir / "halves", 30);
    first.max_steps_this_call = 15;
    CHECK(train_model(first, torch::kCPU).interrupted);
    TrainRequest second = lora_request(f, dir / "base", dir / "halves", 30);
    second.resume_dir = dir / "halves";
    train_model(second, torch::kCPU);
    const auto a = adapter_tensors(resolve_checkpoint_dir(dir / "lora/last"));
    const auto b = adapter_tensors(resolve_checkpoint_dir(dir / "halves/last"));
    REQUIRE(a.size() == b.size());
    for (const auto& [name, tensor] : a) CHECK(torch::equal(tensor, b.at(name)));
  }
  SECTION("adapters trained on other weights are refused, by digest") {
    train_model(base_request(f, dir / "other", 2), torch::kCPU);
    CHECK_THROWS_AS(load_model(run, torch::kCPU, dir / "other"), LoraBaseMismatch);
    CHECK_THROWS_WITH(load_model(run, torch::kCPU, dir / "other"), Catch::Contains("was trained on other weights"));
    CHECK_THROWS_AS(write_merged_checkpoint(run, dir / "merged", dir / "other"), LoraBaseMismatch);
    CHECK_FALSE(fs::exists(dir / "merged"));
  }
  SECTION("merged, it is a plain checkpoint with the unmerged model's outputs") {
    write_merged_checkpoint(run, dir / "merged");
    const CheckpointInfo merged = read_checkpoint(dir / "merged");
    CHECK(merged.train.lora_rank == 0);
    CHECK(fs::exists(fs::path(merged.dir) / "model.pt"));
    AnyModel unmerged = load_model(run, torch::kCPU), plain = load_model(merged, torch::kCPU);
    unmerged.module()->eval();
    plain.module()->eval();
    CHECK((outputs(unmerged) - outputs(plain)).abs().max().item<double>() < 1e-5);
  }
}

TEST_CASE("LoRA: --base-precision bf16 or int8 stores the frozen projections so and computes in fp32", "[lora]") {
  const BasePrecision precision = GENERATE(BasePrecision::kBf16, BasePrecision::kInt8);
  const torch::ScalarType stored = precision == BasePrecision::kInt8 ? torch::kChar : torch::kBFloat16;
  INFO("base precision " << enum_name(precision));
  torch::manual_seed(5);
  const ModelConfig config = llama_like_config();
  AnyModel low = build_model(config);
  TrainConfig t;
  t.lora_rank = 4;
  t.lora_dropout = 0.0;
  t.lora_targets = "all-linear";
  attach_lora(*low.module(), lora_settings(t));
  randomize_adapters(*low.module());
  // The reference: the same model in fp32 with its projection weights rounded through bf16, or through int8 with
  // per-row scales (max |row| / 127).
  AnyModel rounded = build_model(config);
  attach_lora(*rounded.module(), lora_settings(t));
  {
    torch::NoGradGuard no_grad;
    auto target = rounded.module()->named_parameters();
    for (const auto& p : low.module()->named_parameters()) target[p.key()].copy_(p.value());
  }
  const int64_t trainable = freeze_all_but_trainable(low, t);
  CHECK(trainable == lora_parameter_count(config, lora_settings(t)));
  freeze_all_but_trainable(rounded, t);
  auto before = rounded.module()->named_parameters();
  lower_frozen_projections(low, precision);
  int64_t lowered = 0;
  {
    torch::NoGradGuard no_grad;
    auto target = rounded.module()->named_parameters();
    const auto buffers = low.module()->named_buffers();
    for (const auto& p : low.module()->named_parameters()) {
      if (p.value().scalar_type() == torch::kFloat) continue;
      ++lowered;
      INFO(p.key());
      CHECK(p.value().scalar_type() == stored);
      CHECK_FALSE(p.value().requires_grad());
      auto value = p.value().to(torch::kFloat);  // (N, K)
      if (precision == BasePrecision::kInt8) {
        const std::string scale_name = p.key().substr(0, p.key().size() - 6) + kWeightScaleBuffer;  // "...weight"
        REQUIRE(buffers.find(scale_name) != nullptr);
        const auto scale = buffers[scale_name];  // (N)
        const auto original = before[p.key()];   // (N, K), fp32
        // Symmetric: each row's largest |w| is 127 steps; every weight within half a step of its original.
        CHECK(scale.sizes() == torch::IntArrayRef{original.size(0)});
        CHECK(torch::allclose(scale, std::get<0>(original.abs().max(1)) / 127.0));
        CHECK(value.abs().max().item<double>() <= 127);
        value = value * scale.unsqueeze(1);
        CHECK(((value - original).abs() - scale.unsqueeze(1) / 2).max().item<double>() <= 1e-6);
      }
      target[p.key()].copy_(value);
    }
  }
  CHECK(lowered == 2 * 5);  // 2 layers: c_attn, c_proj, c_fc, c_fc_lin, c_proj
  auto ids = torch::arange(16, torch::kLong).view({1, 16});
  auto loss_low = low.as<GPT>()->forward(ids).pow(2).mean();
  auto loss_ref = rounded.as<GPT>()->forward(ids).pow(2).mean();
  CHECK(loss_low.scalar_type() == torch::kFloat);
  CHECK(loss_low.item<double>() == Approx(loss_ref.item<double>()).epsilon(1e-5));
  loss_low.backward();
  loss_ref.backward();
  auto ref = rounded.module()->named_parameters();
  for (const auto& p : low.module()->named_parameters()) {
    if (!p.value().requires_grad()) {
      CHECK_FALSE(p.value().grad().defined());
      continue;
    }
    const auto& g = ref[p.key()].grad();
    INFO(p.key());
    CHECK((p.value().grad() - g).abs().max().item<double>() <= 1e-5 * std::max(1.0, g.abs().max().item<double>()));
  }
}

TEST_CASE("int8 frozen weight: the product uses its scales; a merged delta requantizes only its rows", "[lora]") {
  torch::manual_seed(11);
  torch::nn::Linear layer(torch::nn::LinearOptions(8, 6).bias(true));
  layer->weight.set_requires_grad(false);
  layer->bias.set_requires_grad(false);
  const auto original = layer->weight.clone();  // (6, 8)
  quantize_frozen_weight_int8(layer);
  REQUIRE(layer->weight.scalar_type() == torch::kChar);
  auto scale_of = [&] { return layer->named_buffers(false)[kWeightScaleBuffer].clone(); };  // (6)
  const auto scale = scale_of();
  const auto dequantized = layer->weight.to(torch::kFloat) * scale.unsqueeze(1);  // (6, 8)
  // The product: x (q s)^T + b, by hand from the stored values; and its input gradient (q s)^T applied to dy.
  const auto x = torch::randn({3, 8}).requires_grad_(true);
  const auto y = apply_linear(x, layer);
  CHECK(torch::allclose(y, x.detach().matmul(dequantized.t()) + layer->bias, 1e-6, 1e-6));
  y.sum().backward();
  CHECK(torch::allclose(x.grad(), dequantized.sum(0).expand({3, 8}), 1e-6, 1e-6));
  // A delta on rows 2..5 (an adapter's part): rows 0 and 1 keep their bytes and scales; the others hold the sum
  // within half a step of their new scale.
  const auto delta = torch::randn({4, 8}) * 0.5;
  add_to_weight_rows(layer, 2, delta);
  const auto after = scale_of();
  CHECK(torch::equal(layer->weight.narrow(0, 0, 2), (dequantized.narrow(0, 0, 2) / scale.narrow(0, 0, 2).unsqueeze(1))
                                                         .round()
                                                         .to(torch::kChar)));
  CHECK(torch::equal(after.narrow(0, 0, 2), scale.narrow(0, 0, 2)));
  const auto expected = dequantized.narrow(0, 2, 4) + delta;  // (4, 8)
  const auto got = layer->weight.narrow(0, 2, 4).to(torch::kFloat) * after.narrow(0, 2, 4).unsqueeze(1);
  CHECK(((got - expected).abs() - after.narrow(0, 2, 4).unsqueeze(1) / 2).max().item<double>() <= 1e-6);
  CHECK(torch::allclose(after.narrow(0, 2, 4), std::get<0>(expected.abs().max(1)) / 127.0));
  CHECK((original - dequantized).abs().max().item<double>() <= scale.max().item<double>() / 2 + 1e-6);
}

TEST_CASE("LoRA runs with --base-precision bf16 and int8 train", "[lora]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const double base_val = train_model(base_request(f, dir / "base", 1), torch::kCPU).last_val_loss;
  for (const BasePrecision precision : {BasePrecision::kBf16, BasePrecision::kInt8}) {
    const std::string run = dir / ("lora-" + enum_name(precision));
    TrainRequest lora = lora_request(f, dir / "base", run, 30);
    lora.train.base_precision = precision;
    const double lora_val = train_model(lora, torch::kCPU).last_val_loss;
    INFO("val loss: base " << base_val << ", LoRA on a " << enum_name(precision) << " base " << lora_val);
    CHECK(lora_val < base_val - 1e-3);  // zero-initialised B: an adapter that learnt nothing scores base_val exactly
    // Its checkpoint loads onto the fp32 base for eval and export.
    AnyModel model = load_model(read_checkpoint(run), torch::kCPU);
    for (const auto& p : model.module()->parameters()) CHECK(p.scalar_type() == torch::kFloat);
    // Resumed halfway (the base lowered again from fp32), it ends with the same adapters bit for bit.
    const std::string halves = run + "-halves";
    TrainRequest first = lora_request(f, dir / "base", halves, 30);
    first.train.base_precision = precision;
    first.max_steps_this_call = 15;
    CHECK(train_model(first, torch::kCPU).interrupted);
    TrainRequest second = lora_request(f, dir / "base", halves, 30);
    second.train.base_precision = precision;
    second.resume_dir = halves;
    train_model(second, torch::kCPU);
    const auto a = adapter_tensors(resolve_checkpoint_dir(run + "/last"));
    const auto b = adapter_tensors(resolve_checkpoint_dir(halves + "/last"));
    REQUIRE(a.size() == b.size());
    for (const auto& [name, tensor] : a) CHECK(torch::equal(tensor, b.at(name)));
  }
}

namespace {

// `lmzoo train` of a tiny model on the fixture's data (4 steps unless EXTRA says), EXTRA: its shape or --init.
CliResult train_tiny(const Fixture& f, const std::string& out, const std::string& extra) {
  return run_cli("train --data " + f.data_dir + " --out " + out +
                 " --batch-size 4 --eval-interval 4 --eval-iters 1 --device cpu " + extra +
                 (extra.find("--steps") == std::string::npos ? " --steps 4" : ""));
}

double reported_loss(const CliResult& r) { return last_json_line(r.out).at("nll").get<double>(); }

}  // namespace

TEST_CASE("lmzoo train --lora-rank: eval, generate, merge-lora, export --merge-lora and --format peft", "[lora][cli]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string gpt2_shape = "--n-layer 2 --d-model 32 --n-head 4 --seq-len 32 --bias";
  const std::string llama_shape =
      "--n-layer 2 --d-model 32 --n-head 4 --n-kv-heads 2 --seq-len 32 --position rope --norm rmsnorm "
      "--activation swiglu";
  REQUIRE(train_tiny(f, dir / "base", gpt2_shape).exit_code == 0);
  const CliResult lora =
      train_tiny(f, dir / "lora", "--init " + dir / "base" + " --lora-rank 4 --lora-targets q,v,o --steps 6");
  INFO(lora.err);
  REQUIRE(lora.exit_code == 0);
  CHECK(lora.err.find("(LoRA: 1536 trainable, the rest frozen)") != std::string::npos);  // 2 x 3 x 4 x (32 + 32)

  const CliResult eval_lora = run_cli("eval --checkpoint " + dir / "lora" + " --data " + f.data_dir + " --device cpu");
  REQUIRE(eval_lora.exit_code == 0);
  CHECK(run_cli("generate --checkpoint " + dir / "lora" + " --prompt the --max-new-tokens 4 --device cpu")
            .exit_code == 0);
  check_user_error(run_cli("export --checkpoint " + dir / "lora" + " --out " + dir / "x.pt"),
                   "add --merge-lora to fold them into the weights");
  CHECK_FALSE(fs::exists(dir / "x.pt"));
  CHECK(run_cli("export --checkpoint " + dir / "lora" + " --merge-lora --out " + dir / "merged.pt").exit_code == 0);

  SECTION("merge-lora writes a plain checkpoint that evaluates as the adapters did") {
    const CliResult merged = run_cli("merge-lora " + dir / "lora" + " --out " + dir / "merged");
    INFO(merged.err);
    REQUIRE(merged.exit_code == 0);
    CHECK(fs::exists(dir / "merged/model.pt"));
    const CliResult eval_merged =
        run_cli("eval --checkpoint " + dir / "merged" + " --data " + f.data_dir + " --device cpu");
    REQUIRE(eval_merged.exit_code == 0);
    CHECK(reported_loss(eval_merged) == Approx(reported_loss(eval_lora)).epsilon(1e-5));
    check_user_error(run_cli("merge-lora " + dir / "merged" + " --out " + dir / "again"), "has no LoRA adapters");
  }
  SECTION("merging onto another base is refused in one line and writes nothing") {
    REQUIRE(train_tiny(f, dir / "other", gpt2_shape + " --seed 9").exit_code == 0);
    const CliResult r = run_cli("merge-lora " + dir / "lora" + " --base " + dir / "other" + " --out " + dir / "m");
    check_user_error(r, "was trained on other weights");
    CHECK(r.exit_code == 2);
    CHECK_FALSE(fs::exists(dir / "m"));
  }
  SECTION("PEFT files applied as peft merges them equal the merged HF export (GPT-2: q and v stacked in c_attn)") {
    REQUIRE(run_cli("export --checkpoint " + dir / "base" + " --format hf --out " + dir / "base_hf").exit_code == 0);
    REQUIRE(run_cli("export --checkpoint " + dir / "lora" + " --format hf --merge-lora --out " + dir / "merged_hf")
                .exit_code == 0);
    const CliResult peft = run_cli("export --checkpoint " + dir / "lora" + " --format peft --out " + dir / "peft");
    INFO(peft.err);
    REQUIRE(peft.exit_code == 0);
    const auto config = nlohmann::json::parse(read_text(dir / "peft/adapter_config.json"));
    CHECK(config.at("r") == 8);  // q and v share GPT-2's c_attn: two rank-4 blocks
    CHECK(config.at("lora_alpha").get<double>() == 32.0);
    CHECK(config.at("fan_in_fan_out") == true);
    const CliResult check = run_binary("/usr/bin/python3", std::string(LMZOO_SOURCE_DIR) + "/tests/peft_reference.py merge " +
                                                               dir / "base_hf" + " " + dir / "peft" + " " + dir / "merged_hf");
    INFO(check.out << check.err);
    REQUIRE(check.exit_code == 0);
    const auto result = last_json_line(check.out);
    CHECK(result.at("modules") == 4);  // 2 layers: c_attn (q, v) and c_proj (o)
    CHECK(result.at("max_abs_diff").get<double>() < 1e-6);
    // Back: the PEFT files onto the base give a LoRA checkpoint that evaluates as the run did (c_attn's stacked
    // adapter becomes q, k and v adapters sharing its A: the same product, the k rows zero).
    const CliResult back = run_cli("import " + dir / "peft" + " --lora-base " + dir / "base" + " --out " + dir / "back");
    INFO(back.err);
    REQUIRE(back.exit_code == 0);
    CHECK(back.out.find("rank 8") != std::string::npos);
    const CliResult eval_back = run_cli("eval --checkpoint " + dir / "back" + " --data " + f.data_dir + " --device cpu");
    REQUIRE(eval_back.exit_code == 0);
    CHECK(reported_loss(eval_back) == Approx(reported_loss(eval_lora)).epsilon(1e-5));
    check_user_error(run_cli("import " + dir / "peft" + " --out " + dir / "nobase"), "--lora-base");
    CHECK_FALSE(fs::exists(dir / "nobase"));
    check_user_error(run_cli("export --checkpoint " + dir / "base" + " --format peft --out " + dir / "p2"),
                     "writes a LoRA run's adapters");
  }
  SECTION("PEFT files of a Llama-shaped run: one module per projection, all-linear") {
    REQUIRE(train_tiny(f, dir / "lbase", llama_shape).exit_code == 0);
    REQUIRE(train_tiny(f, dir / "llora", "--init " + dir / "lbase" + " --lora-rank 4 --lora-targets all-linear")
                .exit_code == 0);
    REQUIRE(run_cli("export --checkpoint " + dir / "lbase" + " --format hf --out " + dir / "lbase_hf").exit_code == 0);
    REQUIRE(run_cli("export --checkpoint " + dir / "llora" + " --format hf --merge-lora --out " + dir / "lmerged_hf")
                .exit_code == 0);
    REQUIRE(run_cli("export --checkpoint " + dir / "llora" + " --format peft --out " + dir / "lpeft").exit_code == 0);
    const auto config = nlohmann::json::parse(read_text(dir / "lpeft/adapter_config.json"));
    CHECK(config.at("r") == 4);
    CHECK(config.at("fan_in_fan_out") == false);
    CHECK(config.at("task_type") == "CAUSAL_LM");
    const CliResult check = run_binary("/usr/bin/python3", std::string(LMZOO_SOURCE_DIR) + "/tests/peft_reference.py merge " +
                                                               dir / "lbase_hf" + " " + dir / "lpeft" + " " + dir / "lmerged_hf");
    INFO(check.out << check.err);
    REQUIRE(check.exit_code == 0);
    CHECK(last_json_line(check.out).at("modules") == 14);  // 2 layers x q k v o gate up down
    // Back through PEFT: one module per lmzoo adapter, so the same tensors bit for bit.
    REQUIRE(run_cli("import " + dir / "lpeft" + " --lora-base " + dir / "lbase" + " --out " + dir / "lback").exit_code == 0);
    const auto original = adapter_tensors(resolve_checkpoint_dir(dir / "llora"));
    const auto back = adapter_tensors(resolve_checkpoint_dir(dir / "lback"));
    REQUIRE(original.size() == back.size());
    for (const auto& [name, tensor] : original) CHECK(torch::equal(tensor, back.at(name)));
    const auto back_config = read_checkpoint(dir / "lback").train;
    CHECK(back_config.lora_targets == "q,k,v,o,gate,up,down");
    CHECK(back_config.lora_base_digest == read_checkpoint(dir / "llora").train.lora_base_digest);
  }
}

TEST_CASE("lmzoo train: bad LoRA flags are one line, exit 2, and create no run directory", "[lora][cli]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  REQUIRE(train_tiny(f, dir / "base", "--n-layer 2 --d-model 32 --n-head 4 --seq-len 32").exit_code == 0);
  const std::string init = "--init " + dir / "base";
  struct Bad {
    std::string flags, message;
  };
  const Bad cases[] = {
      {init + " --lora-rank 0", "--lora-rank must be at least 1"},
      {init + " --lora-rank 33", "--lora-rank 33 exceeds the smaller side (32)"},
      {init + " --lora-rank 4 --lora-targets q,gate", "'gate' matches no layer of this model (it has q,k,v,o,up,down)"},
      {init + " --lora-rank 4 --lora-targets q,z", "unknown part 'z'"},
      {init + " --lora-rank 4 --trainable nothing_named_so", "'nothing_named_so' is part of no parameter name"},
      {"--lora-rank 4", "--lora-rank needs --init"},
      {init + " --base-precision bf16", "--base-precision applies with --lora-rank"},
      {init + " --base-precision int8", "--base-precision applies with --lora-rank"},
      {init + " --lora-rank 4 --base-precision int4", "--base-precision int4 is not one of fp32|bf16|int8"},
      {init + " --lora-alpha 8", "--lora-alpha applies with --lora-rank"},
  };
  for (const Bad& bad : cases) {
    const CliResult r = train_tiny(f, dir / "run", bad.flags);
    INFO(bad.flags);
    check_user_error(r, bad.message);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(fs::exists(dir / "run"));
  }
}

TEST_CASE("PEFT import: use_rslora's scale alpha / sqrt(r) reaches the merged weights", "[lora][cli][peft]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  REQUIRE(train_tiny(f, dir / "base", "--n-layer 1 --d-model 32 --n-head 4 --seq-len 32 --position rope --norm rmsnorm "
                                      "--activation swiglu").exit_code == 0);
  // rsLoRA scales B A by lora_alpha / sqrt(r): 6 / sqrt(9) = 2 (plain LoRA's lora_alpha / r would be 6 / 9).
  const int64_t r = 9;
  const double alpha = 6.0, scale = 2.0;
  torch::manual_seed(3);
  const torch::Tensor A = torch::randn({r, 32}), B = torch::randn({32, r});  // (r, in), (out, r)
  fs::create_directories(dir / "peft");
  write_text(dir / "peft/adapter_config.json",
             nlohmann::json({{"peft_type", "LORA"}, {"r", r}, {"lora_alpha", alpha}, {"use_rslora", true},
                             {"bias", "none"}, {"lora_dropout", 0.0}, {"target_modules", {"o_proj"}}})
                 .dump());
  const std::string module = "base_model.model.model.layers.0.self_attn.o_proj";
  write_safetensors(dir / "peft/adapter_model.safetensors",
                    {{module + ".lora_A.weight", A}, {module + ".lora_B.weight", B}});
  const CliResult imported = run_cli("import " + dir / "peft" + " --lora-base " + dir / "base" + " --out " + dir / "lora");
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  const TrainConfig t = read_checkpoint(dir / "lora").train;
  CHECK(t.lora_rank == r);
  CHECK(t.lora_alpha / double(t.lora_rank) == Approx(alpha / std::sqrt(double(r))));
  CHECK(t.lora_alpha / double(t.lora_rank) == Approx(scale));

  // End to end: merge-lora folds scale * B A into lmzoo's o projection (h.0.attn.c_proj).
  const CliResult merged = run_cli("merge-lora " + dir / "lora" + " --out " + dir / "merged");
  INFO(merged.err);
  REQUIRE(merged.exit_code == 0);
  auto o_weight = [](const std::string& checkpoint) {
    AnyModel model = load_model(read_checkpoint(checkpoint), torch::kCPU);
    return model.module()->named_parameters()["h.0.attn.c_proj.weight"].detach().clone();
  };
  const torch::Tensor expected = o_weight(dir / "base") + scale * torch::mm(B, A);  // (out, in)
  CHECK(torch::allclose(o_weight(dir / "merged"), expected, 1e-5, 1e-5));
  CHECK_FALSE(torch::allclose(o_weight(dir / "merged"), o_weight(dir / "base") + alpha / double(r) * torch::mm(B, A),
                              1e-5, 1e-5));
}
