// The training loop (nanoGPT-style): warmup + decay LR, grad accumulation, clipping, eval,
// best/last checkpoints, SIGINT-safe stop, skipped non-finite steps, fp16 loss scaling, one run per directory,
// metrics.jsonl and progress on stderr; data-parallel ranks (gradient buckets, rank 0 writes, agreed stops).
#include "train/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "models/presets.h"
#include "train/communicator.h"
#include "train/data_parallel.h"
#include "train/device.h"
#include "train/device_peak.h"
#include "models/kernels/fused_adamw.h"
#include "train/gradient_sync.h"
#include "train/loss_scaler.h"
#include "train/metrics_log.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/run_lock.h"
#include "train/schedule.h"
#include "train/skip_monitor.h"
#include "train/task.h"

namespace lmzoo {

namespace {

std::atomic<bool> g_stop_requested{false};
void request_stop(int) { g_stop_requested = true; }

// Installs SIGINT/SIGTERM handlers for the scope: the loop finishes its step, saves, and returns.
struct StopSignalScope {
  void (*old_int)(int), (*old_term)(int);
  StopSignalScope() {
    g_stop_requested = false;
    old_int = std::signal(SIGINT, request_stop);
    old_term = std::signal(SIGTERM, request_stop);
  }
  ~StopSignalScope() {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// True when no parameter holds a NaN or an infinity (one read from the device).
bool parameters_finite(const torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> bad;
  for (const auto& p : module.parameters()) bad.push_back(torch::logical_not(torch::isfinite(p)).any());
  return bad.empty() || !torch::stack(bad).any().item<bool>();
}

// The one line a run that keeps overflowing ends with, with the remedies this run has not tried.
std::string non_finite_stop_message(const TrainConfig& cfg, int64_t step, int64_t run) {
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", cfg.lr);
  std::string remedies = std::string("a lower --lr (this run's: ") + lr + ")";
  if (cfg.warmup < 100) remedies += ", a longer --warmup (this run's: " + std::to_string(cfg.warmup) + ")";
  if (cfg.grad_clip <= 0) remedies += ", --grad-clip 1";
  if (cfg.precision != "fp32") remedies += ", --precision fp32";
  return "stopped at step " + std::to_string(step) + ": the gradients were not finite (NaN or inf) in " +
         std::to_string(run) + " steps in a row, so none of them updated the model and nothing was saved (the " +
         "last checkpoint is untouched); try " + remedies;
}

// 1 / (the targets this step scores over all micro-batches and ranks), as a 0-dim tensor: on the ranks'
// collective device when there are ranks (no host sync on CUDA), else on the CPU.
torch::Tensor step_target_weight(const std::vector<int64_t>& micro_targets, Communicator* ranks) {
  double targets = 0;
  for (int64_t n : micro_targets) targets += double(n);
  auto total = torch::full({1}, targets, torch::TensorOptions().dtype(torch::kDouble).device(ranks ? ranks->device() : torch::kCPU));
  if (ranks) ranks->allreduce(total, ReduceKind::kSum);
  return (1.0 / total.clamp_min(1.0)).to(torch::kFloat).reshape({});  // () a batch scoring nothing weighs 0
}

// The run's configuration with its decay horizon fixed: by default the --steps the run started with.
TrainConfig with_decay_horizon(TrainConfig cfg) {
  if (cfg.decay_steps == 0) cfg.decay_steps = cfg.steps;
  return cfg;
}

}  // namespace

TrainResult train_model(const TrainRequest& request) {
  const TrainConfig cfg = with_decay_horizon(request.train);
  cfg.validate();
  request.model.validate();
  // A rank on CUDA trains on its own GPU (cuda:LOCAL_RANK, where its communicator lives).
  const torch::Device device = request.ranks && resolve_device(cfg.device).is_cuda() ? request.ranks->device()
                                                                                     : resolve_device(cfg.device);
  if (cfg.precision == "fp16" && !device.is_cuda()) {
    throw std::invalid_argument("--precision fp16 needs a CUDA device (on the CPU use bf16)");
  }
  const std::string run_dir = cfg.out_dir;
  TrainResult result;
  result.last_val_loss = std::nan("");
  // Data-parallel ranks: each reads its own rows of every step; rank 0 alone writes and shows progress.
  Communicator* const ranks = request.ranks;
  const bool lead = !ranks || ranks->rank() == 0;
  const bool writes = request.write_outputs && lead;
  const bool shows = request.show_progress && lead;
  const DataShard shard = ranks ? DataShard{ranks->rank(), ranks->world_size()} : DataShard{};
  // One live run per run directory, from before anything in it is read for the run until the process ends.
  std::unique_ptr<RunLock> run_lock;
  if (writes && !request.run_dir_locked) {
    run_lock = std::make_unique<RunLock>(run_dir);
    recover_run_dir(run_dir);  // leftovers of a process that died mid-swap
  }

  // Data: the task's seeded train batches, and its validation sample (if the data has one).
  const auto task = make_task(request.model, cfg, request.tokenizer_model, shard);
  const bool has_val = task->val_batches() > 0;

  // Model, optimizer and trainer state: fresh (optionally from pretrained weights), or restored whole
  // from a checkpoint.
  torch::manual_seed(cfg.seed);
  CheckpointInfo info;
  info.model = request.model;
  info.train = cfg;
  info.tokenizer_model = request.tokenizer_model;
  AnyModel model = build_model(request.model);
  if (!cfg.init_checkpoint.empty() && request.resume_dir.empty()) {
    init_from_checkpoint(model, read_checkpoint(cfg.init_checkpoint));
  }
  configure_device_math(device, cfg.tf32);
  model.module()->to(device);
  auto optimizer = make_optimizer(*model.module(), cfg);
  if (!request.resume_dir.empty()) {
    CheckpointInfo resumed = read_checkpoint(request.resume_dir);
    model = load_model(resumed, device);
    optimizer = make_optimizer(*model.module(), cfg);
    load_optimizer_state(resumed, *optimizer);
    restore_rng_state(resumed);
    info.state = resumed.state;
  }
  TrainerState& state = info.state;
  auto module = model.module();
  module->train();
  // Ranks start from rank 0's weights, and sum their gradients in buckets as the backward produces them.
  std::unique_ptr<GradientSync> gradient_sync;
  if (ranks) {
    broadcast_module(*module, *ranks);
    gradient_sync = std::make_unique<GradientSync>(module->parameters(), *ranks);
  }

  std::unique_ptr<MetricsLog> metrics;
  if (writes) {
    // Records past the checkpoint the run continues from (or any from a run that never saved) are dropped.
    truncate_metrics_after(run_dir + "/metrics.jsonl", state.step);
    metrics = std::make_unique<MetricsLog>(run_dir + "/metrics.jsonl");
  }
  // fp16: the loss scale (restored on resume); every precision: steps skipped for non-finite gradients.
  LossScaler scaler;
  if (cfg.precision == "fp16") {
    scaler = LossScaler(device, state.loss_scale > 0 ? state.loss_scale : LossScaler::kInitialScale,
                        state.scale_growth_tracker);
  }
  SkipMonitor skips(device);
  Progress progress;
  const int64_t world = ranks ? ranks->world_size() : 1;
  const int64_t tokens_per_step = task->tokens_per_batch() * cfg.grad_accum * world;  // all ranks
  if (shows) {
    const std::string where =
        ranks ? std::to_string(world) + " ranks (" + ranks->backend_name() + "), device " + device.str() + " each, global batch " +
                    std::to_string(cfg.batch_size * cfg.grad_accum * world)
              : "device " + device.str();
    progress.note("lmzoo train: " + std::to_string(count_parameters(request.model)) + " parameters, " + where + ", " +
                  std::to_string(tokens_per_step) + " tokens/step, steps " + std::to_string(state.step) + " -> " +
                  std::to_string(cfg.steps));
  }
  // MFU: the model's FLOPs per token against a GEMM timed on this device in this process.
  const double flops_per_token = model_flops_per_token(request.model);
  const double peak_flops = measure_peak_flops(device, cfg.precision) * double(world);
  StopSignalScope stop_signals;
  const auto run_start = std::chrono::steady_clock::now();
  const double elapsed_before = state.elapsed_s;
  auto window_start = run_start;
  int64_t window_steps = 0;

  // Rank 0 saves; every rank waits for it, and all stop when it could not.
  auto save = [&](const std::string& name) {
    on_ranks_agreeing(ranks, writes, [&] {
      if (!parameters_finite(*module)) {
        throw std::runtime_error("the weights are not finite at step " + std::to_string(state.step) +
                                 ": not saved (the last checkpoint is untouched); try a lower --lr or --precision fp32");
      }
      state.elapsed_s = elapsed_before + seconds_since(run_start);
      if (scaler.enabled()) {
        state.loss_scale = scaler.scale_value();
        state.scale_growth_tracker = scaler.growth_tracker();
      }
      save_checkpoint(run_dir + "/" + name, module, optimizer.get(), info);
    }, "save " + run_dir + "/" + name);
  };
  int64_t longest_skip_run = 0;  // consecutive skipped steps, as of the last sync point

  // Test hook: LMZOO_TEST_KILL_AT_STEP=N kills this process as it starts step N (a rank dying mid-run).
  const char* kill_at = std::getenv("LMZOO_TEST_KILL_AT_STEP");
  const int64_t kill_at_step = kill_at ? std::atoll(kill_at) : -1;

  while (state.step < cfg.steps) {
    if (state.step == kill_at_step) std::raise(SIGKILL);
    // One optimizer step: LR from the schedule, grad_accum micro-batches, clip, AdamW.
    const auto step_start = std::chrono::steady_clock::now();
    const double lr = learning_rate(cfg, state.step);
    set_learning_rate(*optimizer, lr);
    // Each micro-batch's mean loss is weighted by its share of the targets the step scores on all ranks, so the
    // summed gradient is that of the step's global mean loss (one rank of batch N*b = N ranks of batch b).
    std::vector<TrainBatch> micro_batches;
    std::vector<int64_t> micro_targets;
    for (int64_t micro = 0; micro < cfg.grad_accum; ++micro) {
      micro_batches.push_back(task->train_batch(state.step, micro));
      micro_targets.push_back(scored_targets(micro_batches.back()));
    }
    const torch::Tensor per_target = step_target_weight(micro_targets, ranks);
    // The loss stays on the device: reading it back (a host sync) waits for log steps.
    torch::Tensor loss_sum;
    for (int64_t micro = 0; micro < cfg.grad_accum; ++micro) {
      const TrainBatch batch = micro_batches[size_t(micro)].to(device);
      if (gradient_sync) gradient_sync->prepare(/*send=*/micro == cfg.grad_accum - 1);
      torch::Tensor loss;
      {
        AutocastScope autocast(cfg.precision, device);
        loss = task_loss(model, batch) * (per_target * double(micro_targets[size_t(micro)]));
      }
      (scaler.enabled() ? loss * scaler.scale() : loss).backward();
      loss_sum = micro == 0 ? loss.detach() : loss_sum + loss.detach();
    }
    if (gradient_sync) gradient_sync->finish();
    // Clip (when grad_clip > 0) and AdamW, fused; skipped (nothing changes) when the gradients are not finite.
    const AdamWStepResult step = clip_and_adamw_step(*optimizer, cfg.grad_clip, scaler.scale(), skips.uncounted());
    skips.record(step);
    scaler.update(step.skipped);
    for (auto& p : module->parameters()) p.mutable_grad() = torch::Tensor();  // set_to_none
    if (request.synchronize_steps && device.is_cuda()) torch::cuda::synchronize();
    ++state.step;
    state.tokens_seen += tokens_per_step;
    result.step_seconds.push_back(seconds_since(step_start));
    ++window_steps;

    // Reading from the device waits for it: only at log, eval and stop steps (on a CPU, every step).
    const bool log_step = state.step % cfg.log_interval == 0 || state.step == cfg.steps;
    const bool eval_step = state.step % cfg.eval_interval == 0 || state.step == cfg.steps;
    const bool sync_point = log_step || eval_step || !device.is_cuda();
    // A signal stops every rank at the same step: the ranks agree on it at sync points.
    bool signalled = g_stop_requested.load();
    if (ranks) signalled = sync_point && ranks->any(signalled);
    const bool stopping = signalled || (request.max_steps_this_call > 0 &&
                                        int64_t(result.step_seconds.size()) == request.max_steps_this_call);
    if (sync_point || stopping) {
      const SkipMonitor::Settled settled = skips.settle(*optimizer);
      state.skipped_steps += settled.skipped;
      longest_skip_run = settled.longest_run;
    }

    // Logging: progress bar / lines and a metrics record every log_interval steps.
    if (log_step || stopping) {
      result.last_train_loss = loss_sum.item<double>();
      if (ranks) result.last_train_loss = ranks->sum(result.last_train_loss);  // the global mean
    }
    if (log_step) {
      const double step_loss = result.last_train_loss;
      const double window_s = seconds_since(window_start);
      const double tokens_per_s = double(window_steps * tokens_per_step) / std::max(window_s, 1e-9);
      const double elapsed = seconds_since(run_start);
      if (shows) {
        // ETA from this call's own pace: steps done here over time spent here.
        const double pace = elapsed / double(result.step_seconds.size());
        progress.update({state.step, cfg.steps, step_loss, lr, tokens_per_s, pace * double(state.step),
                         flops_per_token * tokens_per_s / peak_flops,
                         device.is_cuda() ? peak_device_memory_bytes(device) : 0, state.skipped_steps});
      }
      if (metrics) {
        nlohmann::json record = {{"type", "train"}, {"step", state.step}, {"loss", step_loss}, {"lr", lr},
                                 {"tokens_per_s", tokens_per_s}, {"mfu", flops_per_token * tokens_per_s / peak_flops},
                                 {"tokens_seen", state.tokens_seen}, {"elapsed_s", elapsed_before + elapsed},
                                 {"skipped_steps", state.skipped_steps}};
        if (device.is_cuda()) record["peak_memory_bytes"] = peak_device_memory_bytes(device);
        if (scaler.enabled()) record["loss_scale"] = scaler.scale_value();
        metrics->append(record);
      }
      window_start = std::chrono::steady_clock::now();
      window_steps = 0;
    }

    // Too many non-finite steps in a row: stop before anything is saved.
    if (longest_skip_run >= cfg.max_consecutive_skips) {
      if (shows) progress.finish();
      throw std::runtime_error(non_finite_stop_message(cfg, state.step, longest_skip_run));
    }

    // Validation and checkpoints: last/ at every eval and on an early stop, best/ when validation
    // improves (or at every eval when the data has no validation split).
    if (eval_step || stopping) {
      const auto pause_start = std::chrono::steady_clock::now();
      bool improved = false;
      if (ranks && eval_step) require_identical_replicas(*module, *ranks, state.step);
      if (has_val && eval_step && !signalled) {
        const ValidationSum part = validation_loss_sum(model, *task, device, cfg.precision, shard);
        const double val_loss = ranks ? ranks->sum(part.weighted_loss) / ranks->sum(double(part.rows))
                                      : part.weighted_loss / double(part.rows);
        result.last_val_loss = val_loss;
        improved = val_loss < state.best_val_loss;
        if (improved) state.best_val_loss = val_loss;
        if (shows) {
          char line[128];
          std::snprintf(line, sizeof line, "step %ld: val loss %.4f (ppl %.2f)%s", long(state.step), val_loss,
                        std::exp(val_loss), improved ? ", best so far" : "");
          progress.note(line);
        }
        if (metrics) metrics->append({{"type", "eval"}, {"step", state.step}, {"val_loss", val_loss},
                                      {"val_ppl", std::exp(val_loss)}});
      }
      save("last");
      if (improved || (!has_val && eval_step)) save("best");
      if (stopping && state.step < cfg.steps) {
        if (shows) {
          progress.note(std::string(signalled ? "interrupted" : "stopped") + ": saved " + run_dir + "/last at step " +
                        std::to_string(state.step) + " (continue with lmzoo train --resume " + run_dir + ")");
        }
        result.interrupted = true;
        break;
      }
      // Evaluation and saving are not training time: keep them out of the tokens/s window.
      window_start += std::chrono::steady_clock::now() - pause_start;
    }
  }
  if (shows) progress.finish();
  state.elapsed_s = elapsed_before + seconds_since(run_start);
  result.state = state;
  return result;
}

}  // namespace lmzoo
