// CUDA against CPU, tagged [cuda] (skipped without a GPU): every family's loss and gradients agree between a CPU
// model and its copy on the GPU in fp32, bf16 autocast stays close to fp32, KV-cache decoding equals full
// recomputation on the GPU, and a prefix-LM / padded batch takes the masked SDPA path correctly; checkpointed blocks
// replay their dropout masks from the CUDA generator, and LoRA adapters on a bf16 base train as on the CPU.
#include "tests/catch_compat.h"

#include <algorithm>
#include <string>

#include "models/activation_checkpointing.h"
#include "models/generation.h"
#include "models/lora.h"
#include "models/registry.h"
#include "tests/model_fixtures.h"
#include "train/device/device.h"
#include "train/peft/lora_setup.h"
#include "train/task.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

const torch::Device kCuda(torch::kCUDA, 0);

// A model built from src's config holding copies of src's parameters, on DEVICE.
AnyModel copy_to(const AnyModel& src, const torch::Device& device) {
  AnyModel dst = build_model(src.config());
  torch::NoGradGuard no_grad;
  auto dst_params = dst.module()->named_parameters();
  for (const auto& item : src.module()->named_parameters()) dst_params[item.key()].copy_(item.value());
  dst.module()->to(device);
  return dst;
}

// A batch for the model's family: ids < 99, labels -1 where not scored, pads at the end of row 1.
TrainBatch batch_for(const AnyModel& model) {
  torch::manual_seed(51);
  const int64_t B = 3, T = 12;
  TrainBatch b;
  b.input_ids = torch::randint(5, 99, {B, T}, torch::kLong);
  b.attention_mask = torch::ones({B, T}, torch::kLong);
  b.attention_mask.index_put_({1, torch::indexing::Slice(8, T)}, 0);
  if (model.arch() == Arch::kGpt) {
    b.attention_mask = torch::Tensor();
    b.labels = torch::randint(5, 99, {B, T}, torch::kLong);
  } else if (model.arch() == Arch::kBert && !model.is_classifier()) {
    b.token_type_ids = torch::zeros({B, T}, torch::kLong);
    b.labels = torch::full({B, T}, -1, torch::kLong);
    b.labels.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, 6)}, 42);
  } else if (model.is_classifier()) {
    b.token_type_ids = torch::zeros({B, T}, torch::kLong);
    b.labels = torch::tensor({0, 1, 0}, torch::kLong);
  } else {  // t5
    b.decoder_input_ids = torch::randint(5, 99, {B, 6}, torch::kLong);
    b.labels = torch::randint(5, 99, {B, 6}, torch::kLong);
  }
  return b;
}

// Loss and every gradient on the CPU and on CUDA (fp32, TF32 off) agree.
void check_cpu_cuda_agree(const ModelConfig& config, const TrainBatch* custom = nullptr) {
  torch::manual_seed(52);
  AnyModel cpu = build_model(config);
  AnyModel gpu = copy_to(cpu, kCuda);
  configure_device_math(kCuda, /*tf32=*/false);
  const TrainBatch batch = custom ? *custom : batch_for(cpu);
  auto cpu_loss = task_loss(cpu, batch);
  auto gpu_loss = task_loss(gpu, batch.to(kCuda));
  cpu_loss.backward();
  gpu_loss.backward();
  CHECK(gpu_loss.item<double>() == Approx(cpu_loss.item<double>()).epsilon(1e-4));
  auto gpu_params = gpu.module()->named_parameters();
  for (const auto& item : cpu.module()->named_parameters()) {
    if (!item.value().grad().defined()) continue;
    INFO(config.arch << " " << item.key());
    CHECK(torch::allclose(gpu_params[item.key()].grad().cpu(), item.value().grad(), 1e-3, 1e-5));
  }
}

ModelConfig tiny_classifier_config() {
  ModelConfig c = tiny_bert_config();
  c.labels = {"neg", "pos"};
  return c;
}

}  // namespace

TEST_CASE("CUDA: loss and gradients equal the CPU's for every family (fp32)", "[.cuda][cuda]") {
  LMZOO_SKIP_UNLESS_CUDA();
  SECTION("gpt") { check_cpu_cuda_agree(tiny_gpt_config()); }
  SECTION("gpt, rope + grouped-query heads") {
    auto c = tiny_gpt_config();
    c.position = Position::kRope;
    c.n_kv_heads = 2;
    check_cpu_cuda_agree(c);
  }
  SECTION("gpt, alibi") {
    auto c = tiny_gpt_config();
    c.position = Position::kAlibi;
    check_cpu_cuda_agree(c);
  }
  SECTION("gpt, prefix-LM mask") {
    auto c = tiny_gpt_config();
    AnyModel probe = build_model(c);
    TrainBatch b = batch_for(probe);
    b.prefix_len = torch::tensor({3, 0, 7}, torch::kLong);
    check_cpu_cuda_agree(c, &b);
  }
  SECTION("bert (pad mask)") { check_cpu_cuda_agree(tiny_bert_config()); }
  SECTION("bert classifier") { check_cpu_cuda_agree(tiny_classifier_config()); }
  SECTION("t5 v1.0 (relative bias)") { check_cpu_cuda_agree(tiny_t5_config()); }
  SECTION("t5 v1.1 (gated, untied)") { check_cpu_cuda_agree(tiny_t5_config(/*gated=*/true)); }
}

TEST_CASE("CUDA: bf16 autocast loss stays within 2% of fp32 for every family", "[.cuda][cuda]") {
  LMZOO_SKIP_UNLESS_CUDA();
  for (const ModelConfig& config : {tiny_gpt_config(), tiny_bert_config(), tiny_classifier_config(), tiny_t5_config()}) {
    torch::manual_seed(53);
    AnyModel model = build_model(config);
    model.module()->to(kCuda);
    const TrainBatch batch = batch_for(model).to(kCuda);
    const double fp32 = task_loss(model, batch).item<double>();
    double bf16 = 0.0;
    {
      AutocastScope autocast(Precision::kBf16, kCuda);
      bf16 = task_loss(model, batch).item<double>();
    }
    INFO(config.arch);
    CHECK(bf16 == Approx(fp32).epsilon(0.02));
  }
}

TEST_CASE("CUDA: KV-cache decoding equals full recomputation", "[.cuda][cuda]") {
  LMZOO_SKIP_UNLESS_CUDA();
  torch::manual_seed(54);
  GPT model(tiny_gpt_config());
  model->to(kCuda);
  model->eval();
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(0, 99, {2, 10}, torch::TensorOptions().dtype(torch::kLong).device(kCuda));
  auto full = model->forward(ids);  // (B, T, V)
  KVCache cache = model->new_cache();
  auto first = model->forward(ids.slice(1, 0, 6), &cache);  // prompt of 6, then one token at a time
  std::vector<torch::Tensor> steps = {first};
  for (int64_t t = 6; t < 10; ++t) steps.push_back(model->forward(ids.slice(1, t, t + 1), &cache));
  CHECK(torch::allclose(torch::cat(steps, 1), full, 1e-4, 1e-5));
}

namespace {

// One training pass on CUDA under an activation-checkpointing POLICY: the loss, every gradient (on the CPU) and the
// CUDA generator's state after it.
struct CudaPass {
  torch::Tensor loss;
  std::vector<torch::Tensor> grads;
  torch::Tensor rng_after;
};

CudaPass cuda_train_pass(AnyModel& model, const TrainBatch& batch, const std::string& policy) {
  set_activation_checkpointing(model, parse_checkpoint_policy(policy));
  model.module()->train();
  for (auto& p : model.module()->parameters()) p.mutable_grad() = torch::Tensor();
  torch::manual_seed(99);  // the CPU's and every CUDA device's generator
  CudaPass pass;
  auto loss = task_loss(model, batch);
  loss.backward();
  pass.loss = loss.detach().cpu();
  for (const auto& p : model.module()->parameters()) {
    pass.grads.push_back(p.grad().defined() ? p.grad().cpu() : torch::Tensor());
  }
  pass.rng_after = at::globalContext().defaultGenerator(kCuda).get_state();
  set_activation_checkpointing(model, CheckpointPolicy{});
  return pass;
}

}  // namespace

TEST_CASE("CUDA: checkpointed blocks replay their dropout masks: loss, gradients and RNG equal the plain pass",
          "[.cuda][cuda][checkpointing]") {
  LMZOO_SKIP_UNLESS_CUDA();
  configure_device_math(kCuda, /*tf32=*/false);
  for (ModelConfig config : {tiny_gpt_config(), tiny_bert_config(), tiny_t5_config(/*gated=*/true)}) {
    config.dropout = 0.1;  // attention (SDPA's own dropout on CUDA), residual and feed-forward dropout
    torch::manual_seed(55);
    AnyModel model = build_model(config);
    model.module()->to(kCuda);
    const TrainBatch batch = batch_for(model).to(kCuda);
    const CudaPass plain = cuda_train_pass(model, batch, "none");
    const CudaPass checkpointed = cuda_train_pass(model, batch, "blocks");
    INFO(config.arch);
    CHECK(torch::equal(plain.loss, checkpointed.loss));  // the first forward is the same kernels on the same masks
    CHECK(torch::equal(plain.rng_after, checkpointed.rng_after));
    // Another mask in a recompute would move a gradient by O(1); CUDA's backward kernels (embedding, attention)
    // may add in another order from run to run.
    const auto names = model.module()->named_parameters();
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      INFO(names[i].key());
      REQUIRE(plain.grads[i].defined() == checkpointed.grads[i].defined());
      if (plain.grads[i].defined()) CHECK(torch::allclose(checkpointed.grads[i], plain.grads[i], 1e-4, 1e-6));
    }
  }
}

TEST_CASE("CUDA: LoRA on a bf16 or int8 base: loss and adapter gradients equal the CPU's, merged equals unmerged",
          "[.cuda][cuda][lora]") {
  LMZOO_SKIP_UNLESS_CUDA();
  configure_device_math(kCuda, /*tf32=*/false);
  TrainConfig lora;
  lora.lora_rank = 4;
  lora.lora_dropout = 0.0;
  lora.lora_targets = "all-linear";
  const BasePrecision precision = GENERATE(BasePrecision::kBf16, BasePrecision::kInt8);
  INFO("base precision " << enum_name(precision));
  for (const ModelConfig& config : {tiny_gpt_config(), tiny_t5_config(/*gated=*/true)}) {
    INFO(config.arch);
    torch::manual_seed(56);
    AnyModel cpu = build_model(config);
    attach_lora(*cpu.module(), lora_settings(lora));
    {
      torch::NoGradGuard no_grad;  // a new adapter's B is zero: draw it so that the adapters count
      for (auto& p : cpu.module()->named_parameters()) {
        if (p.key().find("lora_B") != std::string::npos) p.value().normal_(0.0, 0.2);
      }
    }
    AnyModel gpu = build_model(config);
    attach_lora(*gpu.module(), lora_settings(lora));
    {
      torch::NoGradGuard no_grad;
      auto target = gpu.module()->named_parameters();
      for (const auto& p : cpu.module()->named_parameters()) target[p.key()].copy_(p.value());
    }
    for (AnyModel* m : {&cpu, &gpu}) {
      freeze_all_but_trainable(*m, lora);
      lower_frozen_projections(*m, precision);  // on the CPU for both: the same stored values
      m->module()->eval();  // no dropout: the two devices draw different masks
    }
    gpu.module()->to(kCuda);
    const TrainBatch batch = batch_for(cpu);
    auto cpu_loss = task_loss(cpu, batch);
    auto gpu_loss = task_loss(gpu, batch.to(kCuda));
    CHECK(gpu_loss.item<double>() == Approx(cpu_loss.item<double>()).epsilon(1e-4));
    cpu_loss.backward();
    gpu_loss.backward();
    auto gpu_params = gpu.module()->named_parameters();
    int64_t adapters = 0;
    for (const auto& p : cpu.module()->named_parameters()) {
      INFO(p.key());
      CHECK(gpu_params[p.key()].scalar_type() == p.value().scalar_type());
      if (!p.value().requires_grad()) {
        CHECK_FALSE(gpu_params[p.key()].grad().defined());
        continue;
      }
      adapters += is_lora_tensor(p.key());
      // Relative to the gradient's largest entry: the two devices add in another order, and an entry near zero
      // (a gated feed-forward's) misses an element-wise 1e-5 on the GPU machine.
      const auto& g = p.value().grad();
      const double scale = std::max(1e-6, g.abs().max().item<double>());
      CHECK((gpu_params[p.key()].grad().cpu() - g).abs().max().item<double>() <= 1e-3 * scale);
    }
    CHECK(adapters > 0);
    // Folding the adapters into the (bf16, int8) weights on the GPU keeps the forward within their rounding.
    torch::NoGradGuard no_grad;
    const double unmerged = task_loss(gpu, batch.to(kCuda)).item<double>();
    merge_lora(*gpu.module());
    for (const auto& p : gpu.module()->named_parameters()) CHECK_FALSE(is_lora_tensor(p.key()));
    CHECK(task_loss(gpu, batch.to(kCuda)).item<double>() == Approx(unmerged).epsilon(1e-2));
  }
}
