// lmzoo bench: training speed of a model on prepared data (median ms/iter, tokens/s, MFU), with
// the peak FLOP/s taken from a GEMM measured in the same process. Defaults: nanoGPT's CPU "baby".
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <torch/csrc/autograd/profiler_legacy.h>

#include "data/tokenizer.h"
#include "models/presets.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/trainer.h"

namespace lmzoo::cli {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median FLOP/s of an n x n x n fp32 matmul on the CPU: the machine's practical peak.
double measure_gemm_flops(int64_t n, int repeats) {
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  std::vector<double> rates;
  for (int i = 0; i < repeats + 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto c = torch::matmul(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= 2) rates.push_back(2.0 * n * n * n / s);
  }
  return median(rates);
}

}  // namespace

int run_bench(int argc, char** argv) {
  cxxopts::Options options("lmzoo bench",
                           "Training-speed benchmark. Defaults are nanoGPT's CPU baby run: gpt-nano, batch 12, "
                           "AdamW lr 1e-3 cosine to 1e-4, warmup 100, betas (0.9, 0.99), wd 0.1, clip 1.0.");
  options.add_options()
      ("data", "prepared data directory (e.g. a char-level tokenizer's shards)", cxxopts::value<std::string>())
      ("preset", "model preset", cxxopts::value<std::string>()->default_value("gpt-nano"))
      ("steps", "iterations to run", cxxopts::value<int64_t>()->default_value("60"))
      ("skip", "first iterations left out of the timing", cxxopts::value<int64_t>()->default_value("10"))
      ("batch-size", "sequences per batch", cxxopts::value<int64_t>()->default_value("12"))
      ("eval-iters", "validation batches for the final loss (0: none)", cxxopts::value<int64_t>()->default_value("0"))
      ("precision", "fp32|bf16", cxxopts::value<std::string>()->default_value("fp32"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("cpu"))
      ("threads", "intra-op CPU threads", cxxopts::value<int>())
      ("profile", "write a Chrome trace of every ATen op in the run (autograd profiler) to this file",
       cxxopts::value<std::string>())
      ("json", "print only the JSON result line");
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);
  require_option(r, "data");
  const int64_t steps = r["steps"].as<int64_t>(), skip = r["skip"].as<int64_t>();
  if (steps <= skip) throw UsageError("--steps must be larger than --skip");

  TrainRequest request;
  request.train.data_dir = r["data"].as<std::string>();
  request.tokenizer_model = read_whole_file(request.train.data_dir + "/tokenizer.model");
  request.model = find_preset(r["preset"].as<std::string>()).config;
  request.model.vocab_size = Tokenizer::from_serialized(request.tokenizer_model).vocab_size();
  TrainConfig& t = request.train;
  t.batch_size = r["batch-size"].as<int64_t>();
  t.steps = steps;  // the cosine schedule spans the whole run
  t.lr = 1e-3;
  t.min_lr = 1e-4;
  t.warmup = 100;
  t.beta1 = 0.9;
  t.beta2 = 0.99;
  t.weight_decay = 0.1;
  t.grad_clip = 1.0;
  t.eval_interval = steps;
  t.eval_iters = std::max<int64_t>(1, r["eval-iters"].as<int64_t>());
  t.log_interval = std::max<int64_t>(1, steps / 10);
  t.precision = r["precision"].as<std::string>();
  t.device = r["device"].as<std::string>();
  request.write_outputs = false;
  request.show_progress = !r.count("json");
  // The GEMM peak is measured before and after the run and the higher figure kept: a busy
  // machine can slow either measurement, never speed it up.
  const double peak_before = measure_gemm_flops(512, 10);
  TrainResult result;
  {
    std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
    if (r.count("profile")) {
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(r["profile"].as<std::string>());
    }
    result = train_model(request);
  }

  std::vector<double> timed(result.step_seconds.begin() + skip, result.step_seconds.end());
  const double ms = median(timed) * 1e3;
  const int64_t tokens_per_iter = t.batch_size * request.model.max_seq_len;
  const double tokens_per_s = tokens_per_iter / (ms / 1e3);
  const ModelConfig& m = request.model;
  const double flops_per_token =
      6.0 * double(count_parameters(m, /*include_position_embeddings=*/false)) +
      12.0 * double(m.n_layer * m.d_model * m.max_seq_len);
  const double peak = std::max(peak_before, measure_gemm_flops(512, 10));
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  nlohmann::json out = {{"preset", r["preset"].as<std::string>()},
                        {"ms_per_iter_median", ms},
                        {"ms_per_iter_min", *std::min_element(timed.begin(), timed.end()) * 1e3},
                        {"tokens_per_s", tokens_per_s},
                        {"mfu", flops_per_token * tokens_per_s / peak},
                        {"peak_gemm_gflops", peak / 1e9},
                        {"model_gflops_per_s", flops_per_token * tokens_per_s / 1e9},
                        {"iters_timed", int64_t(timed.size())},
                        {"threads", torch::get_num_threads()},
                        {"openblas_coretype", coretype ? coretype : ""},
                        {"final_train_loss", result.last_train_loss}};
  if (r["eval-iters"].as<int64_t>() > 0) out["final_val_loss"] = result.last_val_loss;
  if (!r.count("json")) {
    std::printf("%s: %.2f ms/iter (median of %zu), %.0f tokens/s, MFU %.1f%% of a %.0f GFLOP/s GEMM "
                "(%d threads, OPENBLAS_CORETYPE=%s)\n",
                r["preset"].as<std::string>().c_str(), ms, timed.size(), tokens_per_s,
                100.0 * flops_per_token * tokens_per_s / peak, peak / 1e9, torch::get_num_threads(),
                coretype ? coretype : "(unset)");
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace lmzoo::cli
