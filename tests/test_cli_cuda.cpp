// The CLI on CUDA, tagged [cuda] (skipped without a GPU): train, resume, eval, generate (sampling, KV cache, beams)
// for gpt, bert, the bert classifier and t5 in fp32 and bf16; the CUDA-trained checkpoints evaluate and export on
// the CPU; a LoRA fine-tune on a bf16 base with checkpointed blocks trains, resumes, merges and exports; every
// command exits 0 with nothing on stderr but progress; bench reports the steps' true CUDA peak memory.
#include "tests/catch_compat.h"

#include <cmath>
#include <filesystem>
#include <string>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;

namespace {

const std::string kShape = " --n-layer 2 --n-head 2 --d-model 32 --seq-len 24 --batch-size 4 --warmup 2 ";

// Runs lmzoo ARGS and requires exit 0, showing stderr when it fails.
CliResult ok(const std::string& args) {
  auto r = run_cli(args);
  INFO("lmzoo " << args << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("Warning") == std::string::npos);
  CHECK(r.err.find("deprecated") == std::string::npos);
  return r;
}

// Trains ARCH_FLAGS on DATA for 6 steps on CUDA in PRECISION, resumes to 8, and checks the checkpoint evaluates
// and exports on the CPU. Returns the run directory.
std::string train_resume_and_move_to_cpu(const TempDir& dir, const std::string& name, const std::string& arch_flags,
                                         const std::string& data, const std::string& precision,
                                         const std::string& eval_data_flags) {
  const std::string run = dir / name;
  ok("train --data " + data + " --out " + run + arch_flags + kShape + " --steps 6 --eval-interval 3 --eval-iters 2" +
     " --device cuda --precision " + precision);
  auto resumed = ok("train --resume " + run + " --steps 8");
  CHECK(last_json_line(resumed.out)["step"] == 8);
  ok("eval --checkpoint " + run + eval_data_flags + " --device cuda --precision " + precision);
  ok("eval --checkpoint " + run + eval_data_flags + " --device cpu");
  ok("export --checkpoint " + run + " --out " + (dir / (name + ".pt")));
  CHECK(std::filesystem::exists(dir / (name + ".pt")));
  return run;
}

}  // namespace

TEST_CASE("CUDA CLI: gpt trains, resumes, evaluates, generates and exports", "[.cuda][cuda][cli]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  for (const std::string precision : {"fp32", "bf16"}) {
    const std::string run =
        train_resume_and_move_to_cpu(dir, "gpt-" + precision, " --arch gpt", f.data_dir, precision, " --data " + f.data_dir);
    auto gpu = ok("generate --checkpoint " + run + " --prompt 'The cat' --max-new-tokens 12 --temperature 0 --device cuda");
    auto cpu = ok("generate --checkpoint " + run + " --prompt 'The cat' --max-new-tokens 12 --temperature 0 --device cpu");
    CHECK(gpu.out.rfind("The cat", 0) == 0);
    if (precision == "fp32") CHECK(gpu.out == cpu.out);  // greedy decoding agrees across devices
    ok("generate --checkpoint " + run + " --prompt 'The cat' --max-new-tokens 8 --beams 3 --device cuda");
  }
}

TEST_CASE("CUDA CLI: bert pretrains and a classifier fine-tunes, evaluates and labels", "[.cuda][cuda][cli]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  write_text(dir / "train.jsonl", "{\"text\": \"the cat sat\", \"label\": \"a\"}\n{\"text\": \"the river ran\", \"label\": \"b\"}\n"
                                  "{\"text\": \"a bird sat\", \"label\": \"a\"}\n{\"text\": \"a tree grew\", \"label\": \"b\"}\n");
  for (const std::string precision : {"fp32", "bf16"}) {
    const std::string base =
        train_resume_and_move_to_cpu(dir, "bert-" + precision, " --arch bert", f.data_dir, precision, " --data " + f.data_dir);
    ok("generate --checkpoint " + base + " --prompt 'the [MASK] sat' --device cuda");
    const std::string clf = dir / ("clf-" + precision);
    ok("train --init " + base + " --data " + (dir / "train.jsonl") + " --val-data " + (dir / "train.jsonl") + " --out " +
       clf + " --steps 4 --batch-size 2 --device cuda --precision " + precision);
    ok("eval --checkpoint " + clf + " --data " + (dir / "train.jsonl") + " --device cuda --precision " + precision);
    ok("eval --checkpoint " + clf + " --data " + (dir / "train.jsonl") + " --device cpu");
    ok("generate --checkpoint " + clf + " --prompt 'the cat sat' --device cuda");
    ok("export --checkpoint " + clf + " --out " + (dir / ("clf-" + precision + ".pt")));
  }
}

TEST_CASE("CUDA CLI: t5 span corruption trains, resumes, evaluates, generates and exports", "[.cuda][cuda][cli]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  for (const std::string precision : {"fp32", "bf16"}) {
    const std::string run = train_resume_and_move_to_cpu(dir, "t5-" + precision, " --arch t5", f.data_dir, precision,
                                                         " --data " + f.data_dir + " --batches 2");
    ok("generate --checkpoint " + run + " --prompt 'the cat' --max-new-tokens 8 --device cuda");
    ok("generate --checkpoint " + run + " --prompt 'the cat' --max-new-tokens 8 --beams 2 --device cuda");
  }
}

TEST_CASE("CUDA CLI: fp16 with dynamic loss scaling trains, resumes with its scale, and moves to the CPU",
          "[.cuda][cuda][cli][fp16]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const Fixture& f = tiny_corpus("char");
  TempDir dir;
  const std::string run = dir / "gpt-fp16";
  ok("train --data " + f.data_dir + " --out " + run + " --arch gpt" + kShape +
     " --steps 6 --eval-interval 3 --eval-iters 2 --log-interval 1 --device cuda --precision fp16");
  const auto state = nlohmann::json::parse(read_text(run + "/last/trainer_state.json"));
  const double scale = state["loss_scale"];
  CHECK(scale > 0);
  CHECK(scale <= 65536.0);
  CHECK(std::exp2(std::round(std::log2(scale))) == scale);  // halved / doubled from 2^16: a power of two
  auto resumed = ok("train --resume " + run + " --steps 8");
  CHECK(last_json_line(resumed.out)["step"] == 8);
  CHECK(std::isfinite(last_json_line(resumed.out)["train_loss"].get<double>()));
  ok("eval --checkpoint " + run + " --data " + f.data_dir + " --device cpu");
}

TEST_CASE("CUDA CLI: LoRA with checkpointed blocks on a bf16 base trains, resumes, evaluates, generates and merges",
          "[.cuda][cuda][cli][lora]") {
  LMZOO_SKIP_UNLESS_CUDA();
  const Fixture& f = tiny_corpus("bpe");
  TempDir dir;
  const std::string base = dir / "base", lora = dir / "lora";
  ok("train --data " + f.data_dir + " --out " + base + " --arch gpt" + kShape +
     " --dropout 0.1 --steps 6 --eval-interval 3 --eval-iters 2 --device cuda");
  const std::string base_weights = read_text(base + "/last/model.pt");
  auto trained = ok("train --data " + f.data_dir + " --out " + lora + " --init " + base +
                    " --lora-rank 4 --lora-targets all-linear --lora-dropout 0.1 --dropout 0.1"
                    " --activation-checkpointing blocks --base-precision bf16 --batch-size 4 --warmup 2"
                    " --steps 6 --eval-interval 3 --eval-iters 2 --device cuda --precision bf16");
  CHECK(std::isfinite(last_json_line(trained.out)["train_loss"].get<double>()));
  CHECK(std::filesystem::exists(lora + "/last/adapter.safetensors"));
  CHECK_FALSE(std::filesystem::exists(lora + "/last/model.pt"));
  auto resumed = ok("train --resume " + lora + " --steps 8");
  CHECK(last_json_line(resumed.out)["step"] == 8);
  CHECK(read_text(base + "/last/model.pt") == base_weights);  // the base is only read
  ok("eval --checkpoint " + lora + " --data " + f.data_dir + " --device cuda --precision bf16");
  ok("generate --checkpoint " + lora + " --prompt 'the cat' --max-new-tokens 8 --temperature 0 --device cuda");
  // The adapters load onto the fp32 base on either device, and merged into it they score the same.
  auto nll = [&](const std::string& run, const std::string& device) {
    return last_json_line(ok("eval --checkpoint " + run + " --data " + f.data_dir + " --device " + device).out)
        .at("nll")
        .get<double>();
  };
  const double on_gpu = nll(lora, "cuda");
  CHECK(nll(lora, "cpu") == Approx(on_gpu).epsilon(1e-4));
  ok("merge-lora " + lora + " --out " + (dir / "merged"));
  CHECK(nll(dir / "merged", "cuda") == Approx(on_gpu).epsilon(1e-4));
  ok("export --checkpoint " + lora + " --merge-lora --out " + (dir / "lora.pt"));
  CHECK(std::filesystem::exists(dir / "lora.pt"));
}

TEST_CASE("CUDA bench: the peak is the allocator's over the steps, at least the training state and within 15% of "
          "the estimate for GPT-2 124M, bert-base and t5-small", "[.cuda][cuda][bench]") {
  LMZOO_SKIP_UNLESS_CUDA();
  // GPT-2 124M at batch 16 x 1024 in bf16 autocast: about 30 GB, so a peak read after the final GEMM timing (which
  // resets CUDA's peak statistic) instead of over the steps is far below both bounds. The encoders at the issue's
  // shapes (batch 32 x 512), and gpt2 with the fused loss (no logits tensor in the estimate either).
  for (const char* shape : {"--preset gpt2 --batch-size 16", "--preset gpt2 --batch-size 16 --fused-loss",
                            "--preset bert-base --seq-len 512 --batch-size 32",
                            "--preset t5-small --seq-len 512 --batch-size 32"}) {
    INFO(shape);
    auto r = ok(std::string("bench ") + shape + " --precision bf16 --device cuda --steps 4 --skip 1 --json");
    const auto j = last_json_line(r.out);
    const double peak = j["peak_memory_bytes"].get<double>(), predicted = j["predicted_peak_bytes"].get<double>();
    INFO("peak " << peak << ", predicted " << predicted);
    CHECK(peak >= 16.0 * j["trainable_parameters"].get<double>());  // fp32 weights, gradients and AdamW's moments
    CHECK(std::abs(predicted - peak) <= 0.15 * peak);
  }
}
