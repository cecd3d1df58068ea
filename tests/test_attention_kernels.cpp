// --attention-kernel: the run's attention shape from its model and settings; each kernel timed alone or refused with
// LibTorch's reason; the fastest chosen and reported; a preference undone when its scope ends; a CPU run says the
// switch is CUDA's. On a GPU ([cuda]) flash and the memory-efficient kernel time the causal bf16 shape.
#include "tests/catch_compat.h"

#include "models/torch_compat.h"
#include "tests/model_fixtures.h"
#include "train/device/attention_kernels.h"
#include "train/trainer.h"

using namespace lmzoo;
using namespace lmzoo::test;

TEST_CASE("the attention shape is the step's: batch, heads, length, head size, precision, causal or masked",
          "[attention_kernels]") {
  const ModelConfig gpt = tiny_gpt_config();
  TrainConfig train = bench_defaults(1);
  train.batch_size = 3;
  train.precision = Precision::kBf16;
  const AttentionShape s = attention_shape(gpt, train);
  CHECK(s.batch == 3);
  CHECK(s.heads == gpt.n_head);
  CHECK(s.length == gpt.max_seq_len);
  CHECK(s.head_dim == gpt.d_model / gpt.n_head);
  CHECK(s.dtype == torch::kBFloat16);
  CHECK(s.causal);
  TrainConfig prefix = train;
  prefix.objective = Objective::kPrefix;
  CHECK_FALSE(attention_shape(gpt, prefix).causal);  // the prefix attends both ways: a mask
  ModelConfig alibi = gpt;
  alibi.position = Position::kAlibi;
  CHECK_FALSE(attention_shape(alibi, train).causal);  // a bias in the scores: a mask
  TrainConfig mlm = train;
  mlm.objective = Objective::kMlm;
  mlm.precision = Precision::kFp32;
  const AttentionShape bert = attention_shape(tiny_bert_config(), mlm);
  CHECK_FALSE(bert.causal);
  CHECK(bert.dtype == torch::kFloat);
}

TEST_CASE("the fastest timed kernel is chosen and the report lists every kernel, refused ones with their reason",
          "[attention_kernels]") {
  const std::vector<KernelTime> times = {{AttentionKernel::kFlash, 0.0, "needs a GPU"},
                                         {AttentionKernel::kEfficient, 2.5, ""},
                                         {AttentionKernel::kCudnn, 0.0, "not built"},
                                         {AttentionKernel::kMath, 1.5, ""}};
  CHECK(fastest_kernel(times) == AttentionKernel::kMath);
  CHECK(attention_report(times, AttentionKernel::kMath) ==
        "math 1.500 ms (chosen), efficient 2.500 ms, flash refused (needs a GPU), cudnn refused (not built)");
  const std::vector<KernelTime> none = {{AttentionKernel::kFlash, 0.0, "no"}, {AttentionKernel::kMath, 0.0, "no"}};
  CHECK(fastest_kernel(none) == AttentionKernel::kDefault);
  CHECK(attention_report(none, AttentionKernel::kDefault) ==
        "flash refused (no), math refused (no); none could be timed: LibTorch's own order");
}

TEST_CASE("on a CPU every kernel is timed or refused, math is timed where SDPA exists, and the switches are "
          "restored", "[attention_kernels]") {
  AttentionShape s;
  s.batch = 2, s.heads = 2, s.length = 16, s.head_dim = 8;
  s.causal = false;
  const std::vector<KernelTime> times = time_attention_kernels(s, torch::Device(torch::kCPU), 2);
  REQUIRE(times.size() == 4);
  for (const KernelTime& t : times) {
    INFO(enum_name(t.kernel) << ": " << t.refused);
    CHECK((t.refused.empty() == (t.ms > 0)));
    if (t.kernel == AttentionKernel::kMath) CHECK(t.refused.empty() == bool(LMZOO_HAS_SDPA));
    if (t.kernel == AttentionKernel::kEfficient) CHECK_FALSE(t.refused.empty());  // CUDA only
  }
#if LMZOO_HAS_SDPA
  auto& c = at::globalContext();
  CHECK(c.userEnabledFlashSDP());
  CHECK(c.userEnabledMemEfficientSDP());
  CHECK(c.userEnabledMathSDP());
  {
    PreferredAttentionKernel math(AttentionKernel::kMath);
    CHECK_FALSE(c.userEnabledFlashSDP());
    CHECK(c.userEnabledMathSDP());
  }
  CHECK(c.userEnabledFlashSDP());
#endif
}

TEST_CASE("a CPU run with --attention-kernel says the switch is CUDA's and trains as without it",
          "[attention_kernels][train]") {
  TrainRequest request;
  request.model = tiny_gpt_config();
  request.train = bench_defaults(3);
  request.train.batch_size = 2;
  request.random_tokens = true;
  request.write_outputs = false;
  request.show_progress = false;
  const TrainResult plain = train_model(request, torch::kCPU);
  request.train.attention_kernel = AttentionKernel::kFastest;
  const TrainResult fastest = train_model(request, torch::kCPU);
  CHECK(plain.attention.empty());
  CHECK(fastest.attention == "--attention-kernel applies to CUDA; the CPU runs lmzoo's own attention");
  CHECK(fastest.last_train_loss == plain.last_train_loss);
}

TEST_CASE("CUDA: the causal bf16 shape times flash and the memory-efficient kernel, and one is chosen",
          "[.cuda][cuda][attention_kernels]") {
  LMZOO_SKIP_UNLESS_CUDA();
  AttentionShape s;
  s.batch = 4, s.heads = 4, s.length = 256, s.head_dim = 64;
  s.dtype = torch::kBFloat16;
  const std::vector<KernelTime> times = time_attention_kernels(s, torch::Device(torch::kCUDA, 0));
  for (const KernelTime& t : times) {
    INFO(enum_name(t.kernel) << ": " << t.refused);
    if (t.kernel == AttentionKernel::kFlash || t.kernel == AttentionKernel::kEfficient) CHECK(t.refused.empty());
  }
  const AttentionKernel chosen = fastest_kernel(times);
  INFO(attention_report(times, chosen));
  CHECK(chosen != AttentionKernel::kDefault);
  CHECK(chosen != AttentionKernel::kMath);
}
