// lmzoo bench: training speed of any preset with its family's default objective on prepared data, or of a gpt on
// seeded random tokens (median ms/iter, tokens/s, MFU; peak RSS on the CPU, peak GPU memory on CUDA, each beside
// the memory estimate's prediction), the peak FLOP/s from a GEMM on the same device in the same process, with
// train's fine-tuning and memory switches. Defaults: nanoGPT's CPU "baby".
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/interrupt.h"
#include "data/tokenizers/tokenizer.h"
#include "models/presets.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/device/device.h"
#include "train/device/device_peak.h"
#include "train/device/training_memory.h"
#include "train/metrics/op_profile.h"
#include "train/run/run_device.h"
#include "train/trainer.h"

namespace lmzoo::cli {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

cxxopts::Options bench_options() {
  cxxopts::Options options("lmzoo bench",
                           "Training-speed benchmark of any preset with its default objective (gpt: causal, bert: mlm, t5: span). "
                           "Defaults are nanoGPT's CPU baby run: gpt-nano, batch 12, "
                           "AdamW lr 1e-3 cosine to 1e-4, warmup 100, betas (0.9, 0.99), wd 0.1, clip 1.0. "
                           "The fine-tuning and memory switches are train's; with --lora-rank the preset's "
                           "randomly initialised model is the frozen base. Reports the peak resident memory (CUDA: "
                           "the peak allocated) beside the memory estimate's prediction.");
  options.add_options()
      ("data", "prepared data directory (e.g. a char-level tokenizer's shards); without it a gpt preset trains on "
               "seeded random token ids over its vocabulary", cxxopts::value<std::string>())
      ("vocab-size", "without --data: the random tokens' vocabulary (default: the preset's; needed for a preset that "
                     "takes its vocabulary from a tokenizer, e.g. gpt-nano)", cxxopts::value<int64_t>())
      ("preset", "model preset", cxxopts::value<std::string>()->default_value("gpt-nano"))
      ("steps", "iterations to run", cxxopts::value<int64_t>()->default_value("60"))
      ("skip", "first iterations left out of the timing", cxxopts::value<int64_t>()->default_value("10"))
      ("batch-size", "sequences per batch", cxxopts::value<int64_t>()->default_value("12"))
      ("eval-iters", "validation batches for the final loss (0: none)", cxxopts::value<int64_t>()->default_value("0"))
      ("seq-len", "context length (default: the preset's)", cxxopts::value<int64_t>())
      ("precision", "fp32|bf16", cxxopts::value<std::string>()->default_value("fp32"))
      ("tf32", "CUDA: fp32 matmuls on TF32 tensor cores (--tf32=false: full fp32)",
       cxxopts::value<bool>()->implicit_value("true"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("cpu"))
      ("threads", "intra-op CPU threads", cxxopts::value<int>())
      ("profile", "profile the timed steps: print the kernels (CUDA; the CPU: the ATen ops) per step, the top ones "
                  "by time and the host synchronisations, and write their Chrome trace to this file",
       cxxopts::value<std::string>())
      ("dry-run", "print the predicted peak memory of this run by part and exit without running it")
      ("json", "print only the JSON result line");
  add_train_field_options(options, "Fine-tuning and memory");
  add_host_memory_option(options, "Fine-tuning and memory");
  add_train_field_options(options, {"cuda-graphs", "attention-kernel", "fused-add-norm", "fused-bias-gelu"}, "CUDA speed");
  return options;
}

// The model bench trains: the preset's, its vocabulary the data's tokenizer's or (random tokens) the preset's or
// --vocab-size.
void set_model(const cxxopts::ParseResult& r, TrainRequest& request) {
  request.model = find_preset(r["preset"].as<std::string>()).config;
  if (r.count("data")) {
    if (r.count("vocab-size")) throw UsageError("--vocab-size is for a run without --data (the data's tokenizer sets it)");
    const Tokenizer tokenizer = Tokenizer::load(r["data"].as<std::string>());
    request.tokenizer_model = tokenizer.serialized();
    request.model.vocab_size = tokenizer.vocab_size();
  } else {
    if (request.model.arch != Arch::kGpt) {
      throw UsageError("without --data bench trains a gpt on random tokens; the " + enum_name(request.model.arch) +
                       " preset " + r["preset"].as<std::string>() + " needs --data");
    }
    if (r.count("vocab-size")) request.model.vocab_size = r["vocab-size"].as<int64_t>();
    if (request.model.vocab_size <= 0) {
      throw UsageError("the preset " + r["preset"].as<std::string>() +
                       " takes its vocabulary from a tokenizer: give --data or --vocab-size");
    }
    request.random_tokens = true;
  }
  if (r.count("seq-len")) request.model.max_seq_len = r["seq-len"].as<int64_t>();
  request.model.dropout = 0.0;  // timings without dropout, as nanoGPT's and HF's benchmarks run
  try {
    request.model.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// The run bench times: the preset on --data (or random tokens) with nanoGPT's baby-run hyperparameters and the
// fine-tuning and memory flags given, writing nothing.
TrainRequest bench_request(const cxxopts::ParseResult& r, int64_t steps) {
  TrainRequest request;
  set_model(r, request);
  request.train = bench_defaults(steps);  // the cosine schedule spans the whole run
  TrainConfig& t = request.train;
  apply_training_flags(r, t, /*only_given=*/true);  // "Fine-tuning and memory", the CUDA speed switches; bench's own below
  if (r.count("data")) t.data_dir = r["data"].as<std::string>();
  t.objective = default_objective(request.model.arch, /*pairs_data=*/false);
  t.batch_size = r["batch-size"].as<int64_t>();
  t.eval_iters = std::max<int64_t>(1, r["eval-iters"].as<int64_t>());
  t.log_interval = std::max<int64_t>(1, steps / 10);
  t.precision = enum_option<Precision>(r, "precision");
  t.device = r["device"].as<std::string>();
  if (r.count("tf32")) t.tf32 = r["tf32"].as<bool>();
  request.write_outputs = false;
  request.show_progress = !r.count("json");
  request.synchronize_steps = true;  // per-step times of GPU work, not of queueing it
  return request;
}

struct BenchRun {
  TrainResult result;
  double peak_before = 0;     // GEMM FLOP/s measured before the run
  ProfileSummary profile;     // with --profile: the profiled steps
};

// Runs the training. With a PROFILE_PATH, steps SKIP+1 (at least 2) to the last are profiled (every ATen op, and on
// CUDA every kernel where LibTorch records them), their Chrome trace written there and their summary kept. The
// trace file is opened before the run (a bad path fails now, not after it) and removed if the run fails.
BenchRun run_profiled(TrainRequest request, const torch::Device& device, const std::string& profile_path,
                      int64_t skip) {
  std::unique_ptr<OpProfile> profile;
  std::vector<ProfileEvent> events;
  const int64_t first = std::max<int64_t>(skip, 1), last = request.train.steps;
  if (!profile_path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(profile_path, ec)) throw std::runtime_error("--profile " + profile_path + " is a directory");
    std::ofstream probe(profile_path, std::ios::binary | std::ios::app);
    if (!probe) throw std::runtime_error("cannot write the profile " + profile_path + ": " + std::strerror(errno));
    request.callbacks.after_step = [&](int64_t step) {
      if (step == first) profile = std::make_unique<OpProfile>(device);
      if (step == last && profile) events = profile->stop();
    };
  }
  BenchRun run;
  try {
    run.peak_before = measure_peak_flops(device, request.train.precision);
    run.result = train_model(request, device);
    if (!profile_path.empty() && run.result.interrupted) {
      std::filesystem::remove(profile_path);
    } else if (!profile_path.empty()) {
      run.profile = summarize_profile(events, last - first, /*top=*/15);
      write_chrome_trace(events, profile_path);
    }
  } catch (...) {
    profile.reset();
    if (!profile_path.empty()) std::filesystem::remove(profile_path);
    throw;
  }
  return run;
}

// The profile's summary in the JSON line: per step, and the top rows.
nlohmann::json profile_json(const ProfileSummary& p) {
  const double steps = double(p.steps);
  nlohmann::json top = nlohmann::json::array();
  for (const ProfileRow& row : p.top) {
    top.push_back({{"name", row.name}, {"calls_per_step", double(row.calls) / steps}, {"ms_per_step", row.total_us / steps / 1e3}});
  }
  return {{"steps", p.steps},
          {"rows", p.kernels ? "cuda kernels" : "aten ops"},
          {"launches_per_step", double(p.launches) / steps},
          {"busy_ms_per_step", p.busy_us / steps / 1e3},
          {"host_synchronizations", p.host_synchronizations},
          {"top", top}};
}

// What bench reports of a run, --skip first steps left out.
struct BenchFigures {
  std::vector<double> timed;  // seconds of each timed step
  double ms = 0;              // median ms per step
  double tokens_per_s = 0;
  double flops_per_token = 0;
  double peak = 0;            // GEMM FLOP/s: the higher of the measurements before and after the run
  int64_t peak_memory = 0;    // most bytes allocated to tensors at once (CUDA's allocator, or the CPU's counted)
  int64_t peak_rss = 0;       // the process's peak resident memory
  MemoryEstimate predicted;   // the estimate of the run's peak: RSS on the CPU, allocated bytes on CUDA
};

BenchFigures measure(const BenchRun& run, const TrainRequest& request, const torch::Device& device, int64_t skip) {
  BenchFigures f;
  f.timed.assign(run.result.step_seconds.begin() + skip, run.result.step_seconds.end());
  f.ms = median(f.timed) * 1e3;
  const int64_t tokens_per_iter = request.train.batch_size * request.model.max_seq_len;
  f.tokens_per_s = tokens_per_iter / (f.ms / 1e3);
  f.flops_per_token = model_flops_per_token(request.model);
  // The run's peak memory first: the GEMM measurement after the run resets CUDA's peak statistic (it held only the
  // GEMM's buffers and what was still live when read after it, 65 MiB for a GPT-2 step that needs 30 GB).
  f.peak_memory = peak_device_memory_bytes(device);
  f.peak = std::max(run.peak_before, measure_peak_flops(device, request.train.precision));
  f.peak_rss = peak_host_memory_bytes();
  f.predicted = estimate_training_run(request.model, request.train, device);
  return f;
}

// The estimate's parts by name, in bytes.
nlohmann::json predicted_parts(const MemoryEstimate& e) {
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [name, bytes] : e.parts()) parts[name] = bytes;
  return parts;
}

// The JSON result line.
nlohmann::json bench_json(const cxxopts::ParseResult& r, const TrainRequest& request, const torch::Device& device,
                          const TrainResult& result, const BenchFigures& f, HostMemory host_memory) {
  const TrainConfig& t = request.train;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  nlohmann::json out = {{"preset", r["preset"].as<std::string>()},
                        {"objective", t.objective},
                        {"device", device.str()},
                        {"precision", enum_name(t.precision)},
                        {"ms_per_iter_median", f.ms},
                        {"ms_per_iter_min", *std::min_element(f.timed.begin(), f.timed.end()) * 1e3},
                        {"tokens_per_s", f.tokens_per_s},
                        {"mfu", f.flops_per_token * f.tokens_per_s / f.peak},
                        {"peak_gemm_gflops", f.peak / 1e9},
                        {"peak_memory_bytes", f.peak_memory},
                        {"peak_rss_bytes", f.peak_rss},
                        {"predicted_peak_bytes", f.predicted.total()},
                        {"trainable_parameters", result.trainable_parameters},
                        {"parameter_bytes", result.parameter_bytes},
                        {"predicted_trainable_parameters", f.predicted.trainable},
                        {"predicted_parts", predicted_parts(f.predicted)},
                        {"predicted_loading_bytes", f.predicted.loading},
                        {"data", t.data_dir.empty() ? "random tokens" : t.data_dir},
                        {"batch_size", t.batch_size},
                        {"seq_len", request.model.max_seq_len},
                        {"lora_rank", t.lora_rank},
                        {"lora_targets", t.lora_rank > 0 ? t.lora_targets : ""},
                        {"base_precision", enum_name(t.base_precision)},
                        {"activation_checkpointing", t.activation_checkpointing},
                        {"host_memory", enum_name(host_memory)},
                        {"model_gflops_per_s", f.flops_per_token * f.tokens_per_s / 1e9},
                        {"iters_timed", int64_t(f.timed.size())},
                        {"threads", torch::get_num_threads()},
                        {"openblas_coretype", coretype ? coretype : ""},
                        {"final_train_loss", result.last_train_loss}};
  if (r["eval-iters"].as<int64_t>() > 0) out["final_val_loss"] = result.last_val_loss;
  if (t.cuda_graphs) out["cuda_graphs"] = result.cuda_graphs;
  if (!result.attention.empty()) out["attention"] = result.attention;
  return out;
}

// The human-readable summary line.
void print_summary(const cxxopts::ParseResult& r, const TrainConfig& t, const torch::Device& device,
                   const BenchFigures& f) {
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf("%s (%s, %s, %s): %.2f ms/iter (median of %zu), %.0f tokens/s, MFU %.1f%% of a %.0f GFLOP/s %s GEMM",
              r["preset"].as<std::string>().c_str(), enum_name(t.objective).c_str(), device.str().c_str(),
              enum_name(t.precision).c_str(), f.ms, f.timed.size(), f.tokens_per_s,
              100.0 * f.flops_per_token * f.tokens_per_s / f.peak, f.peak / 1e9, enum_name(t.precision).c_str());
  if (device.is_cuda()) {
    std::printf(", peak memory %.2f GiB (predicted %.2f GiB)\n", f.peak_memory / 1073741824.0,
                f.predicted.total() / 1073741824.0);
  } else {
    std::printf(" (%d threads, OPENBLAS_CORETYPE=%s), peak RSS %.2f GiB, of which tensors %.2f GiB at most "
                "(predicted %.2f GiB)\n",
                torch::get_num_threads(), coretype ? coretype : "(unset)", f.peak_rss / 1073741824.0,
                f.peak_memory / 1073741824.0, f.predicted.total() / 1073741824.0);
  }
}

}  // namespace

int run_bench(int argc, char** argv) {
  cxxopts::Options options = bench_options();
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);
  const HostMemory host_memory = apply_host_memory_option(r);
  const int64_t steps = r["steps"].as<int64_t>(), skip = r["skip"].as<int64_t>();
  if (skip < 0) throw UsageError("--skip must be >= 0");
  if (steps <= skip) throw UsageError("--steps must be larger than --skip");

  const TrainRequest request = bench_request(r, steps);
  const TrainConfig& t = request.train;
  t.validate();  // a LoRA or checkpointing setting outside its range: refused (exit 2) before anything runs
  const torch::Device device = training_device(t, nullptr);
  if (r.count("dry-run")) {
    const MemoryEstimate estimate = estimate_training_run(request.model, t, device);
    if (!r.count("json")) {
      for (const std::string& line : memory_report_lines(estimate, request.model, t, device)) std::cout << line << "\n";
    }
    std::cout << nlohmann::json({{"dry_run", true},
                                 {"preset", r["preset"].as<std::string>()},
                                 {"device", device.str()},
                                 {"predicted_peak_bytes", estimate.total()},
                                 {"predicted_trainable_parameters", estimate.trainable},
                                 {"predicted_parts", predicted_parts(estimate)},
                                 {"predicted_loading_bytes", estimate.loading}})
                     .dump()
              << std::endl;
    return 0;
  }
  // The GEMM peak is measured before and after the run and the higher figure kept: a busy
  // machine can slow either measurement, never speed it up.
  configure_device_math(device, t.tf32);
  const std::string profile_path = r.count("profile") ? r["profile"].as<std::string>() : "";
  if (device.is_cpu()) count_cpu_tensor_bytes();  // peak_memory_bytes: the tensors' own peak, beside the RSS
  const BenchRun run = run_profiled(request, device, profile_path, skip);
  if (run.result.interrupted) throw Interrupted("interrupted while benchmarking");
  const BenchFigures figures = measure(run, request, device, skip);
  nlohmann::json out = bench_json(r, request, device, run.result, figures, host_memory);
  if (!profile_path.empty()) out["profile"] = profile_json(run.profile);
  if (!r.count("json")) {
    print_summary(r, t, device, figures);
    if (t.cuda_graphs) std::cout << "CUDA graphs: " << run.result.cuda_graphs << "\n";
    if (!run.result.attention.empty()) std::cout << "attention: " << run.result.attention << "\n";
    if (!profile_path.empty()) {
      for (const std::string& line : profile_report_lines(run.profile)) std::cout << line << "\n";
      if (device.is_cuda()) std::cout << "(bench itself waits for the GPU once per step: cudaDeviceSynchronize)\n";
      std::cout << "Chrome trace: " << profile_path << "\n";
    }
  }
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace lmzoo::cli
