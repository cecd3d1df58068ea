// The memory estimate: its parameter count and parameter names against built models of every family, its
// activation, KV-cache, LoRA, bf16-base and checkpointing figures against sums worked by hand, its refusal line, a
// refused run's peak RSS (nothing was allocated), train --dry-run, and bench's measured peak RSS beside it.
#include "tests/catch_compat.h"

#include <cstring>
#include <set>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <map>

#include "models/memory_estimate.h"
#include "models/parameter_sizes.h"
#include "models/registry.h"
#include "tests/cli_checks.h"
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

// Bytes of training activations kept when the backward starts (see TrainingActivations).
double kept_at_start(const ModelConfig& c, const Workload& w) { return 4.0 * training_activations(c, w).at_start; }

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
    CHECK(e.trainable == e.parameters);
    // Names and sizes from the config alone equal the built module's; the projections are the blocks' linear
    // weight matrices.
    const AnyModel model = build_model(c);
    std::map<std::string, int64_t> built, listed;
    std::set<std::string> projections;
    for (const auto& p : model.module()->named_parameters()) {
      built[p.key()] = p.value().numel();
      const std::string& n = p.key();
      const bool in_block = n.rfind("h.", 0) == 0 || n.find(".h.") != std::string::npos;
      for (const char* layer : {".c_attn.weight", ".c_proj.weight", ".c_fc.weight", ".c_fc_lin.weight", ".c_q.weight",
                                ".c_kv.weight"}) {
        if (in_block && n.size() > std::strlen(layer) && n.compare(n.size() - std::strlen(layer), std::string::npos, layer) == 0) {
          projections.insert(n);
        }
      }
    }
    std::set<std::string> listed_projections;
    for (const auto& s : parameter_sizes(c)) {
      listed[s.name] = s.elements;
      if (s.projection) listed_projections.insert(s.name);
    }
    CHECK(listed == built);
    CHECK(listed_projections == projections);
    CHECK(e.weights == 4.0 * double(e.parameters));
    CHECK(e.trainable == e.parameters);
    CHECK(e.optimizer == 2.0 * e.weights);
    CHECK(e.kv_cache == 0);
  }
}

TEST_CASE("parameter count: published conventions leave out whole parts, found by module name", "[memory][presets]") {
  CHECK(in_part("bert.pooler.weight", ParameterPart::kPooler));
  CHECK(in_part("mlm_bias", ParameterPart::kMlmHead));
  CHECK(in_part("bert.mlm_dense.bias", ParameterPart::kMlmHead));
  CHECK(in_part("encoder.wpe.weight", ParameterPart::kPositionTable));
  CHECK(in_part("position_embeddings.weight", ParameterPart::kPositionTable));
  CHECK_FALSE(in_part("attn_bias.rel_bias.weight", ParameterPart::kPositionTable));  // a bias table stays
  CHECK_FALSE(in_part("token_type_embeddings.weight", ParameterPart::kPositionTable));
  CHECK_FALSE(in_part("wpe_x.weight", ParameterPart::kPositionTable));  // whole components only
  CHECK_FALSE(in_part("h.0.mlp.c_fc.weight", ParameterPart::kMlmHead));
  // A classifier's parts sit under "bert.": each part left out equals the built module less the parameters it names.
  ModelConfig classifier = tiny(Arch::kBert);
  classifier.labels = {"neg", "pos"};
  classifier.bias = true;
  const AnyModel model = build_model(classifier);
  for (ParameterPart part : {ParameterPart::kPositionTable, ParameterPart::kPooler, ParameterPart::kMlmHead}) {
    int64_t kept = 0;
    for (const auto& p : model.module()->named_parameters()) {
      if (!in_part(p.key(), part)) kept += p.value().numel();
    }
    CHECK(parameter_count(classifier, {part}) == kept);
  }
  const int64_t d = classifier.d_model, all = parameter_count(classifier);
  CHECK(all == built_parameters(classifier));
  CHECK(all - parameter_count(classifier, {ParameterPart::kPooler}) == d * d + d);
  CHECK(all - parameter_count(classifier, {ParameterPart::kPositionTable}) == classifier.max_seq_len * d);
  CHECK(parameter_count(classifier, {ParameterPart::kPooler, ParameterPart::kMlmHead}) ==
        all - (d * d + d) - (all - parameter_count(classifier, {ParameterPart::kMlmHead})));
  // t5's relative tables are no position table: MFU's N keeps them.
  CHECK(parameter_count(tiny(Arch::kT5), {ParameterPart::kPositionTable}) == parameter_count(tiny(Arch::kT5)));
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
  CHECK(kept_at_start(c, w) == (96.0 + 2 * (256 + 320) + 297) * 16 * 4);
  // With dropout: masks of the embedding (32), each residual (2 x 32) and the attention probabilities (4 x 8).
  c.dropout = 0.1;
  CHECK(kept_at_start(c, w) == (96.0 + 32 + 2 * (256 + 32 + 32 + 320 + 32) + 297) * 16 * 4);
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

TEST_CASE("memory estimate: LoRA, a bf16 base and checkpointing match sums worked by hand", "[memory]") {
  // gpt, d 32, 4 heads, d_ff 128, 2 layers, vocab 99, context 16, no biases, tied head. Parameters: wte 99 x 32 +
  // wpe 16 x 32 + 2 blocks x (ln_1 32 + c_attn 32 x 96 + c_proj 32 x 32 + ln_2 32 + c_fc 32 x 128 + c_proj 128 x 32)
  // + ln_f 32. The projections are each block's four weight matrices.
  const ModelConfig c = tiny(Arch::kGpt);
  const double params = 99 * 32 + 16 * 32 + 2 * (32 + 3072 + 1024 + 32 + 4096 + 4096) + 32;
  const double projections = 2 * (3072 + 1024 + 4096 + 4096);
  Workload w;
  w.sequences = 2;
  w.length = 8;
  const MemoryEstimate full = estimate_memory(c, w);
  CHECK(double(full.parameters) == params);
  CHECK(full.optimizer == 8 * params);
  // The backward's start: every kept activation (1545 per token, as above) and the tied head's gradient (99 x 32);
  // its end: every gradient, the embedding's own 99 x 32 as it is added to the head's, and the first block's 576
  // beside the ends' 96. The end is larger here, and its parts are the estimate's.
  const double at_start = 1545.0 * 16 + 99 * 32, at_end = (96.0 + 576) * 16 + params + 99 * 32;
  REQUIRE(at_end > at_start);
  CHECK(full.gradients == 4 * (params + 99 * 32));
  CHECK(full.activations == 4 * (96.0 + 576) * 16);

  // LoRA rank 2 on q and v: per block q 2 x (32 in + 32 out) and v 2 x (32 + 32): 256 trained parameters per block.
  w.plan.lora.rank = 2;
  w.plan.lora.targets = {LoraTarget::kQuery, LoraTarget::kValue};
  w.plan.lora.dropout = 0;
  const double adapters = 2 * 256;
  MemoryEstimate lora = estimate_memory(c, w);
  CHECK(lora.trainable == int64_t(adapters));
  CHECK(lora.weights == 4 * (params + adapters));
  // The peak is the backward's start (the adapters' 512 gradients come later, and the frozen head makes none).
  CHECK(lora.gradients == 0);
  CHECK(lora.activations == kept_at_start(c, w));
  CHECK(lora.optimizer == 8 * adapters);
  CHECK(lora_parameter_count(c, w.plan.lora) == int64_t(adapters));
  // fp32 frozen projections keep what trained ones do (measured; see KeptInputs): the full fine-tune's 96 + 2 x 576
  // + 297 per token, and each adapter its rank-2 middle.
  CHECK(kept_at_start(c, w) == (96.0 + 2 * (576 + 2 + 2) + 297) * 16 * 4);
  // With dropout, each adapter also keeps its mask and its dropped 32-wide input.
  w.plan.lora.dropout = 0.05;
  CHECK(kept_at_start(c, w) == (96.0 + 2 * (576 + 2 * (2 + 64)) + 297) * 16 * 4);
  w.plan.lora.dropout = 0;
  // bf16 projections keep only their weights: per block ln_1 in 32 and out 32 (the adapters read it), q k v 96,
  // scores 64, no heads' output (c_proj is frozen), ln_2 in 32 but not out, c_fc's 128 (GELU keeps it) but not
  // GELU's output; the fp32 head still reads the final norm's output.
  w.plan.base_element_bytes = 2;
  CHECK(kept_at_start(c, w) == (96.0 + 2 * ((32 + 32 + 96 + 64) + (32 + 128) + 2 + 2) + 297) * 16 * 4);
  // Adapters on o and down keep the heads' output (32) and GELU's output (128) as well.
  w.plan.lora.targets = {LoraTarget::kQuery, LoraTarget::kValue, LoraTarget::kOutput, LoraTarget::kDown};
  CHECK(kept_at_start(c, w) ==
        (96.0 + 2 * ((32 + 32 + 96 + 64 + 32) + (32 + 128 + 128) + 4 * 2) + 297) * 16 * 4);
  w.plan.base_element_bytes = 4;
  w.plan.lora.targets = {LoraTarget::kQuery, LoraTarget::kValue};

  // --trainable ln_: the norms (ln_1, ln_2 per block, ln_f: 5 x 32) train beside the adapters; a bf16 base stores
  // the other projection weights in 2 bytes.
  w.plan.trainable = {"ln_"};
  w.plan.base_element_bytes = 2;
  lora = estimate_memory(c, w);
  CHECK(lora.trainable == int64_t(adapters + 5 * 32));
  // (and one projection, the largest, 4096, widened to fp32 while its product runs)
  CHECK(lora.weights == 4 * (params - projections + adapters + 4096) + 2 * projections);
  // An int8 base: one byte per frozen projection element, the same one widened to fp32, the same kept inputs.
  w.plan.base_element_bytes = 1;
  const MemoryEstimate int8_base = estimate_memory(c, w);
  CHECK(int8_base.weights == 4 * (params - projections + adapters + 4096) + 1 * projections);
  CHECK(int8_base.activations == lora.activations);
  // Lowered one projection at a time after the fp32 load: the largest one's fp32 quotient and int8 result beside
  // the fp32 weights (bf16: its bf16 copy, below).
  CHECK(int8_base.loading == 4 * params + (4 + 1) * 4096);
  w.plan.base_element_bytes = 2;
  CHECK(lora.optimizer == 8 * (adapters + 5 * 32));
  // Built (or read from model.pt) in fp32 before the lowering: every parameter at 4 bytes and the largest
  // projection's bf16 copy, the peak where that exceeds the running parts.
  CHECK(lora.loading == 4 * params + 2 * 4096);
  CHECK(lora.total() ==
        std::max(lora.weights + lora.gradients + lora.optimizer + lora.activations, 4 * params + 2 * 4096));
  w.plan = {};

  // Checkpointing every block: each keeps its 32-wide input; one block's 576 are live again during its recompute,
  // after the logits' 297 are gone: the larger of the two counts.
  w.plan.checkpoint_every = 1;
  CHECK(kept_at_start(c, w) == (96.0 + 2 * 32 + 576) * 16 * 4);
  // Every second block (block 0): block 1 keeps its 576, block 0 its input, plus one recompute.
  w.plan.checkpoint_every = 2;
  CHECK(kept_at_start(c, w) == (96.0 + 576 + 32 + 576) * 16 * 4);
  CHECK(checkpointed_blocks(22, 1) == 22);
  CHECK(checkpointed_blocks(22, 4) == 6);  // blocks 0, 4, 8, 12, 16, 20
  CHECK(checkpointed_blocks(22, 0) == 0);
  w.plan = {};

  // lmzoo's fused CPU kernels: attention keeps [q; k; v] (96) and the probabilities, 4 heads x 12 positions padded
  // to 16; the cross-entropy keeps the logits and makes their gradient (2 x 99). 12 tokens, 2 rows.
  w.length = 12;
  w.fused_cpu_kernels = true;
  CHECK(kept_at_start(c, w) == (96.0 + 2 * ((64 + 96 + 4 * 16 + 32) + 320) + 198) * 24 * 4);
  w.fused_cpu_kernels = false;
  CHECK(kept_at_start(c, w) == (96.0 + 2 * ((64 + 96 + 2 * 4 * 12 + 32) + 320) + 297) * 24 * 4);

  // A bert classifier under LoRA trains its head (32 x 3 + 3) beside the adapters.
  ModelConfig classifier = tiny(Arch::kBert);
  classifier.labels = {"neg", "pos", "mixed"};
  Workload wc = training_workload(classifier, 2);
  wc.plan.lora.rank = 2;
  wc.plan.lora.targets = {LoraTarget::kQuery, LoraTarget::kValue};
  CHECK(estimate_memory(classifier, wc).trainable == 2 * 256 + 32 * 3 + 3);

  // The runtime part is the measured constant, and counts in the total.
  const MemoryEstimate host = with_host_runtime(full);
  CHECK(host.runtime == kHostRuntimeBytes);
  CHECK(host.total() == full.total() + kHostRuntimeBytes);
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

TEST_CASE("memory estimate: train --dry-run prints the parts and the total and writes nothing", "[memory][cli]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir tmp;
  const std::string shape = " --n-layer 2 --d-model 32 --n-head 4 --seq-len 16 --batch-size 2 --device cpu";
  auto dry_run = [&](const std::string& flags) {  // an --init run takes its shape from the checkpoint
    const bool init = flags.find("--init") != std::string::npos;
    auto r = run_cli("train --data " + f.data_dir + (init ? " --batch-size 2 --device cpu" : shape) + " " + flags +
                     " --dry-run");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = last_json_line(r.out);
    double sum = 0;
    for (const auto& [name, bytes] : j["predicted_parts"].items()) {
      sum += bytes.get<double>();
      if (bytes.get<double>() > 0) CHECK(r.out.find(name) != std::string::npos);  // one line per part
    }
    // The peak: the parts' sum, or every weight in fp32 while loading (a bf16 base) where that is more.
    const double runtime = j["predicted_parts"]["runtime"].get<double>();
    const double loading = j["predicted_loading_bytes"].get<double>();
    CHECK(j["predicted_peak_bytes"].get<double>() == Approx(std::max(sum - runtime, loading) + runtime));
    CHECK(r.out.find("\ntotal") != std::string::npos);
    return j;
  };
  const std::string run_dir = tmp / "run";
  const auto full = dry_run("--out " + run_dir);
  CHECK(!std::filesystem::exists(run_dir));
  CHECK(full["trainable_parameters"] == full["parameters"]);
  const auto checkpointed = dry_run("--activation-checkpointing blocks");  // no --out needed
  CHECK(checkpointed["predicted_parts"]["activations"].get<double>() <
        full["predicted_parts"]["activations"].get<double>());
  // LoRA adapts an --init checkpoint: 2 blocks x (q 2 x (32 + 32) + v 2 x (32 + 32)) adapters train.
  REQUIRE(run_cli("train --data " + f.data_dir + shape + " --steps 1 --out " + tmp / "base").exit_code == 0);
  const auto lora = dry_run("--init " + tmp / "base" + " --lora-rank 2 --lora-targets q,v --out " + tmp / "lora");
  CHECK(lora["trainable_parameters"] == 2 * 256);
  CHECK(lora["parameters"] == full["parameters"]);
  CHECK(!std::filesystem::exists(tmp / "lora"));
  // An int8 base: the frozen projections (2 blocks x (c_attn 96 x 32 + c_proj 32 x 32 + c_fc 128 x 32 + c_proj
  // 32 x 128) = 2 x 12288 elements) at 1 byte instead of 4, one of them (the largest, 4096) widened to fp32.
  const auto int8_base = dry_run("--init " + tmp / "base" + " --lora-rank 2 --lora-targets q,v --base-precision int8");
  CHECK(lora["predicted_parts"]["weights"].get<double>() - int8_base["predicted_parts"]["weights"].get<double>() ==
        3.0 * 2 * 12288 - 4.0 * 4096);
  // A setting outside its set is a flag error.
  check_user_error(run_cli("train --data " + f.data_dir + " --activation-checkpointing sometimes --dry-run"),
                   "--activation-checkpointing must be none, blocks or every-N");
}

TEST_CASE("bench: peak RSS beside the prediction, both growing with the batch", "[bench][cli]") {
  // gpt-nano (4 layers, d 128, context 64) on random tokens over 2000 ids. Batch 48 keeps about 150 MB more
  // activations and logits than batch 2: well above the runtime's noise.
  auto bench = [](int64_t batch) {
    auto r = run_cli("bench --vocab-size 2000 --steps 3 --skip 1 --threads 1 --json --batch-size " + std::to_string(batch));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return last_json_line(r.out);
  };
  const auto small = bench(2), large = bench(48);
  CHECK(small["data"] == "random tokens");
  for (const auto& j : {small, large}) {
    const double measured = j["peak_rss_bytes"].get<double>(), predicted = j["predicted_peak_bytes"].get<double>();
    INFO("measured " << measured << ", predicted " << predicted);
    CHECK(measured > 0);
    CHECK(predicted > 0.5 * measured);
    CHECK(predicted < 2.0 * measured);
  }
  const double grew = large["peak_rss_bytes"].get<double>() - small["peak_rss_bytes"].get<double>();
  const double predicted_growth = large["predicted_peak_bytes"].get<double>() - small["predicted_peak_bytes"].get<double>();
  INFO("measured growth " << grew << ", predicted growth " << predicted_growth);
  CHECK(predicted_growth > 100e6);
  CHECK(grew > 0.5 * predicted_growth);
  CHECK(grew < 2.0 * predicted_growth);
  // Without --data a preset that takes its vocabulary from a tokenizer needs --vocab-size; bert trains on data.
  check_user_error(run_cli("bench --steps 3 --skip 1"), "--vocab-size");
  check_user_error(run_cli("bench --preset bert-tiny --steps 3 --skip 1"), "needs --data");
  check_user_error(run_cli("bench --vocab-size 99 --steps 3 --skip 1 --lora-rank 2 --lora-targets q,x"),
                   "unknown part 'x'");
  check_user_error(run_cli("bench --vocab-size 99 --steps 3 --skip 1 --host-memory some"), "keep");
}

TEST_CASE("bench: the tensors' peak counted on the CPU, and --host-memory release keeps the RSS near it",
          "[bench][cli]") {
  // gpt-nano at batch 48: about 200 MB of tensors. The counted peak is at least the parameters, gradients and
  // moments (16 bytes per parameter) and the estimate's activations at the backward's start are within 30% of it;
  // released memory leaves the RSS at most the tensors' peak plus LibTorch's runtime (and 30% of the tensors).
  auto bench = [](const std::string& flags) {
    auto r = run_cli("bench --vocab-size 2000 --steps 3 --skip 1 --threads 1 --json --batch-size 48 " + flags);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return last_json_line(r.out);
  };
  const auto released = bench("--host-memory release");
  CHECK(released["host_memory"] == "release");
  const double tensors = released["peak_memory_bytes"].get<double>();
  const double rss = released["peak_rss_bytes"].get<double>();
  const double predicted = released["predicted_peak_bytes"].get<double>() - kHostRuntimeBytes;
  INFO("tensors " << tensors << ", rss " << rss << ", predicted tensors " << predicted);
  CHECK(tensors >= 16.0 * released["trainable_parameters"].get<double>());
  CHECK(predicted == Approx(tensors).epsilon(0.3));
  CHECK(rss < tensors + kHostRuntimeBytes + 0.3 * tensors);
  // auto: release under LoRA or checkpointing, keep otherwise.
  CHECK(bench("")["host_memory"] == "keep");
  CHECK(bench("--activation-checkpointing blocks")["host_memory"] == "release");
}
