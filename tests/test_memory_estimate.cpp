// The memory estimate: its parameter count against built models of every family, its activation and KV-cache
// figures against sums worked by hand, its refusal line, and a refused run's peak RSS (nothing was allocated).
#include "tests/catch_compat.h"

#include <set>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "models/memory_estimate.h"
#include "models/registry.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

// Unique parameter tensors of a built module (a tied head counts once), summed by element.
int64_t built_parameters(const ModelConfig& c) {
  const AnyModel model = build_model(c);
  std::set<const void*> seen;
  int64_t total = 0;
  for (const auto& p : model.module()->parameters()) {
    if (seen.insert(p.data_ptr()).second) total += p.numel();
  }
  return total;
}

ModelConfig tiny(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.vocab_size = 99;
  c.n_layer = 2;
  c.n_head = 4;
  c.d_model = 32;
  c.max_seq_len = 16;
  if (arch == Arch::kT5) {
    c.init = InitScheme::kT5;
    c.position = Position::kRelative;
  }
  return c;
}

// Runs `lmzoo ARGS` in a child; returns its exit code and sets PEAK_RSS to the child's peak resident bytes.
int run_measured(const std::string& args, int64_t& peak_rss) {
  TempDir tmp;
  const std::string line = "cd " + tmp.path.string() + " && exec " + LMZOO_BINARY + " " + args + " >/dev/null 2>" +
                           (tmp / "err") + " </dev/null";
  const char* argv[] = {"/bin/sh", "-c", line.c_str(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) == 0);
  int status = 0;
  rusage usage{};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  peak_rss = int64_t(usage.ru_maxrss) * 1024;
  INFO(read_text(tmp / "err"));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("memory estimate: parameters equal the built model's for every family and variant", "[memory]") {
  std::vector<ModelConfig> configs;
  for (Arch arch : {Arch::kGpt, Arch::kBert, Arch::kT5}) configs.push_back(tiny(arch));
  ModelConfig untied = tiny(Arch::kGpt);
  untied.tie_embeddings = false;
  untied.bias = true;
  ModelConfig llama = tiny(Arch::kGpt);
  llama.activation = Activation::kSwiglu;
  llama.norm = NormKind::kRmsNorm;
  llama.position = Position::kRope;
  llama.n_kv_heads = 2;
  llama.vocab_multiple = 64;
  ModelConfig classifier = tiny(Arch::kBert);
  classifier.labels = {"neg", "pos", "mixed"};
  ModelConfig t5_gated = tiny(Arch::kT5);
  t5_gated.activation = Activation::kGeglu;
  t5_gated.n_decoder_layer = 3;
  t5_gated.tie_embeddings = false;
  t5_gated.head_dim = 4;
  for (const auto& c : {untied, llama, classifier, t5_gated}) configs.push_back(c);
  for (const auto& c : configs) {
    INFO(nlohmann::json(c).dump());
    const MemoryEstimate e = estimate_memory(c, training_workload(c, 2));
    CHECK(e.parameters == built_parameters(c));
    CHECK(e.weights == 4.0 * double(e.parameters));
    CHECK(e.gradients == e.weights);
    CHECK(e.optimizer == 2.0 * e.weights);
    CHECK(e.kv_cache == 0);
  }
}

TEST_CASE("memory estimate: activations and KV cache match sums worked by hand", "[memory]") {
  // gpt, d 32, 4 heads, d_ff 128, 2 layers, vocab 99, no dropout; batch 2 x 8 tokens. Per token (fp32 elements):
  // ends: embedding 32 + final norm in/out 64 = 96; attention: norm 64 + qkv 96 + scores 2 x 4 heads x 8 = 64 +
  // heads' output 32 = 256; feed-forward: norm 64 + c_fc out and gelu out 2 x 128 = 320; logits 3 x 99 = 297.
  // (96 + 2 x (256 + 320) + 297) x 16 tokens x 4 bytes.
  ModelConfig c = tiny(Arch::kGpt);
  Workload w;
  w.sequences = 2;
  w.length = 8;
  CHECK(estimate_memory(c, w).activations == (96.0 + 2 * (256 + 320) + 297) * 16 * 4);
  // With dropout: masks of the embedding (32), each residual (2 x 32) and the attention probabilities (4 x 8).
  c.dropout = 0.1;
  CHECK(estimate_memory(c, w).activations == (96.0 + 32 + 2 * (256 + 32 + 32 + 320 + 32) + 297) * 16 * 4);
  c.dropout = 0;

  // Inference: 3 beams caching 40 positions: keys and values of 2 layers x 32 wide each.
  w.use = MemoryUse::kInference;
  w.sequences = 3;
  w.length = 8;
  w.cached = 40;
  const MemoryEstimate inference = estimate_memory(c, w);
  CHECK(inference.kv_cache == 3.0 * 40 * 2 * 2 * 32 * 4);
  CHECK(inference.gradients == 0);
  CHECK(inference.optimizer == 0);
  // The prompt pass (8 tokens x (attention 2 x 32 + 96 + 4 x 2 x 8 + 32, feed-forward 320, residual 32, logits
  // 2 x 99)) is larger than one cached step over 40 positions; per beam.
  CHECK(inference.activations == 3.0 * 8 * ((64 + 96 + 64 + 32) + 320 + 32 + 198) * 4);
}

TEST_CASE("memory estimate: the refusal line gives the total, its parts and the memory there is", "[memory]") {
  MemoryEstimate e;
  e.weights = 100e9;
  e.gradients = 100e9;
  e.optimizer = 200e9;
  e.activations = 12.3e9;
  CHECK(e.describe() == "412.3 GB (weights 100.0 GB, gradients 100.0 GB, optimizer 200.0 GB, activations 12.3 GB)");
  CHECK_THROWS_WITH(require_fits(e, 23.4e9, "training", "this machine"),
                    "training needs about 412.3 GB (weights 100.0 GB, gradients 100.0 GB, optimizer 200.0 GB, "
                    "activations 12.3 GB) but this machine has 23.4 GB");
  CHECK_NOTHROW(require_fits(e, 413e9, "training", "this machine"));
  CHECK(format_bytes(999) == "999 bytes");
  CHECK(format_bytes(1.5e15) == "1.5 PB");
  CHECK(host_memory_bytes() > 1e8);
}

TEST_CASE("memory estimate: a model past the machine is refused before anything is allocated", "[memory][cli]") {
  const Fixture& f = tiny_corpus("bpe");
  ModelConfig huge = tiny(Arch::kGpt);
  huge.n_layer = 1024;
  huge.d_model = 16384;
  huge.n_head = 16;
  huge.max_seq_len = 256;
  const MemoryEstimate need = estimate_memory(huge, training_workload(huge, 12));
  REQUIRE(need.total() > 10 * host_memory_bytes());
  CHECK_THROWS_WITH(build_model(huge), Catch::Contains("but this machine has"));

  int64_t baseline = 0, refused = 0;
  CHECK(run_measured("presets", baseline) == 0);
  CHECK(run_measured("train --data " + f.data_dir + " --out run --n-layer 1024 --d-model 16384 --n-head 16 "
                     "--seq-len 256 --device cpu", refused) == 1);
  INFO("peak RSS: lmzoo presets " << baseline << " bytes, the refused train " << refused << " bytes; the estimate "
                                  << need.describe());
  // The refused run reads its data's manifest and tokenizer, nothing near one layer's 3.2 GB of weights.
  CHECK(refused < baseline + 200'000'000);
}
