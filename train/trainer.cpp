// The training loop (nanoGPT-style): warmup + decay LR, grad accumulation, clipping, eval, curves.svg,
// best/last checkpoints, SIGINT-safe stop, skipped non-finite steps, fp16 loss scaling, metrics.jsonl and progress
// on stderr, step and validation callbacks that may stop the run; data-parallel ranks (gradient buckets, rank 0
// writes, agreed stops, optionally sharded optimizer state). The caller takes the run directory and the device.
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "base/interrupt.h"
#include "models/kernels/add_norm.h"
#include "models/kernels/fused_adamw.h"
#include "models/kernels/gelu_mlp.h"
#include "models/memory_estimate.h"
#include "models/parameter_sizes.h"
#include "models/presets.h"
#include "train/checkpoint/fault_points.h"
#include "train/device/attention_kernels.h"
#include "train/device/device.h"
#include "train/device/device_peak.h"
#include "train/device/out_of_memory.h"
#include "train/device/training_memory.h"
#include "train/distributed/communicator.h"
#include "train/distributed/data_parallel.h"
#include "train/distributed/gradient_sync.h"
#include "train/distributed/optimizer_shards.h"
#include "train/graphed_step.h"
#include "train/loss_scaler.h"
#include "train/metrics/loss_curves.h"
#include "train/metrics/metrics_log.h"
#include "train/metrics/progress.h"
#include "train/optimizer.h"
#include "train/peft/lora_setup.h"
#include "train/schedule.h"
#include "train/skip_monitor.h"
#include "train/task.h"

namespace lmzoo {

namespace {

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
  if (cfg.precision != Precision::kFp32) remedies += ", --precision fp32";
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

// The optimizer step's outcome, as the logging and checkpoint steps read it.
struct StepOutcome {
  double lr = 0.0;
  torch::Tensor loss_sum;  // on the device: read back only at sync points
};

// One call of train_model: the setup, then one method per part of an optimizer step, read top-down by run().
class TrainingRun {
 public:
  TrainingRun(const TrainRequest& request, const torch::Device& device);
  TrainResult run();

 private:
  void build_model_and_optimizer();
  void attach_adapters_to_base();
  void freeze_base();
  void make_optimizer_here();
  void open_outputs();
  TrainResult run_steps();
  StepOutcome train_step();
  torch::Tensor micro_step(const TrainBatch& batch, const torch::Tensor& weight);
  torch::Tensor eager_step(const std::vector<TrainBatch>& micro_batches, const std::vector<torch::Tensor>& weights);
  torch::Tensor graphed_step(const std::vector<TrainBatch>& micro_batches, const std::vector<torch::Tensor>& weights);
  void set_up_cuda_graphs();
  void choose_attention_kernel();
  void switch_on_fused_add_norm();
  void switch_on_fused_bias_gelu();
  void note_bias_gelu_refusal();
  void cuda_graphs_off(const std::string& why);
  bool settle_at_sync_point(bool sync_point, bool stopping);
  void log_step_if(const StepOutcome& step, bool log_step, bool stopping);
  bool step_callback_stops(const StepOutcome& step);
  bool eval_callback_stops(double val_loss, bool improved);
  bool evaluate_and_save(bool eval_step, bool stopping, bool signalled);
  void save(const std::vector<std::string>& names);
  void write_curves();
  torch::optim::AdamW& optimizer() { return shards_ ? shards_->local() : *optimizer_; }

  const TrainRequest& request_;
  const TrainConfig cfg_;
  Communicator* const ranks_;  // data-parallel ranks; null in one process
  const torch::Device device_;
  const std::string run_dir_;
  const bool writes_, shows_;  // rank 0 alone writes and shows progress
  const bool reports_steps_;   // a step callback: the loss is read every step
  const DataShard shard_;
  std::unique_ptr<TrainingTask> task_;
  bool has_val_ = false;
  CheckpointInfo info_;  // model, train config, tokenizer and trainer state: what a checkpoint stores
  TrainerState& state_ = info_.state;
  AnyModel model_{GPT{nullptr}};
  std::shared_ptr<torch::nn::Module> module_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;  // one process, or ranks that each keep the whole state
  std::unique_ptr<OptimizerShards> shards_;          // ranks that each keep their share (--shard-optimizer)
  std::unique_ptr<GradientSync> gradient_sync_;
  std::unique_ptr<MetricsLog> metrics_;
  LossScaler scaler_;
  std::unique_ptr<SkipMonitor> skips_;
  std::unique_ptr<GraphedTrainStep> graphed_;  // --cuda-graphs while the step can be replayed
  std::unique_ptr<PreferredAttentionKernel> attention_kernel_;  // --attention-kernel, for the run's lifetime
  std::unique_ptr<FusedAddNormScope> fused_add_norm_;           // --fused-add-norm, for the run's lifetime
  std::unique_ptr<FusedBiasGeluScope> fused_bias_gelu_;         // --fused-bias-gelu, for the run's lifetime
  bool bias_gelu_refusal_noted_ = false;
  Progress progress_;
  int64_t trainable_parameters_ = 0;  // LoRA runs: what trains
  int64_t tokens_per_step_ = 0;
  double flops_per_token_ = 0.0, peak_flops_ = 0.0;
  std::chrono::steady_clock::time_point run_start_, window_start_;
  double elapsed_before_ = 0.0;
  int64_t window_steps_ = 0;
  int64_t longest_skip_run_ = 0;  // consecutive skipped steps, as of the last sync point
  bool curves_failed_ = false;
  bool callback_stopped_ = false;
  TrainResult result_;
};

// Refuses, before any batch or model exists, a run whose estimated peak (weights, gradients and AdamW moments of
// what trains, one micro-batch's activations as checkpointing keeps them; on the CPU the runtime) exceeds the
// device's memory.
void require_run_fits(const ModelConfig& model, const TrainConfig& cfg, const torch::Device& device) {
  const MemoryEstimate need = estimate_training_run(model, cfg, device);
  require_fits(need, device_memory_capacity_bytes(device),
               "training " + std::to_string(need.parameters) + " parameters at batch " +
                   std::to_string(cfg.batch_size) + " x " + std::to_string(model.max_seq_len) + " tokens",
               device.is_cuda() ? device.str() : "this machine");
}

TrainingRun::TrainingRun(const TrainRequest& request, const torch::Device& device)
    : request_(request),
      cfg_(with_decay_horizon(request.train)),
      ranks_(request.ranks),
      device_((cfg_.validate(), request.model.validate(), device)),
      run_dir_(cfg_.out_dir),
      writes_(request.write_outputs && (!ranks_ || ranks_->rank() == 0)),
      shows_(request.show_progress && (!ranks_ || ranks_->rank() == 0)),
      reports_steps_(bool(request.callbacks.on_step)),
      shard_(ranks_ ? DataShard{ranks_->rank(), ranks_->world_size()} : DataShard{}) {
  result_.last_val_loss = std::nan("");
  require_run_fits(request.model, cfg_, device_);
  // Data: the task's seeded train batches (each rank its own rows), and its validation sample if the data has one.
  task_ = request.random_tokens
              ? make_random_token_task(request.model, cfg_, shard_)
              : make_task(request.model, cfg_, Tokenizer::from_serialized(request.tokenizer_model), shard_);
  has_val_ = task_->val_batches() > 0;
  build_model_and_optimizer();
  open_outputs();
}

// Model, optimizer and trainer state: fresh (optionally from pretrained weights), or restored whole from a
// checkpoint. Ranks start from rank 0's weights and sum their gradients in buckets as the backward produces them.
void TrainingRun::build_model_and_optimizer() {
  info_.model = request_.model;
  info_.train = cfg_;
  info_.tokenizer_model = request_.tokenizer_model;
  info_.chat = request_.chat;
  configure_device_math(device_, cfg_.tf32);
  if (request_.resume_dir.empty()) {
    torch::manual_seed(cfg_.seed);
    model_ = build_model(request_.model);
    if (!cfg_.init_checkpoint.empty()) init_from_checkpoint(model_, read_checkpoint(cfg_.init_checkpoint));
    if (is_lora_run(cfg_)) attach_adapters_to_base();
    model_.module()->to(device_);
    freeze_base();
    make_optimizer_here();
  } else {
    const CheckpointInfo resumed = read_checkpoint(request_.resume_dir);
    if (is_lora_run(cfg_)) {  // the base the run's adapters are tied to stays the one it started from
      info_.train.init_checkpoint = resumed.train.init_checkpoint;
      info_.train.lora_base_digest = resumed.train.lora_base_digest;
    }
    model_ = load_model(resumed, device_);
    freeze_base();
    make_optimizer_here();
    if (shards_) {
      shards_->load(resumed);
    } else {
      load_optimizer_state(resumed, *optimizer_);
    }
    restore_rng_state(resumed);
    state_ = resumed.state;
  }
  module_ = model_.module();
  set_activation_checkpointing(model_, parse_checkpoint_policy(cfg_.activation_checkpointing));
  module_->train();
  if (ranks_) {
    broadcast_module(*module_, *ranks_);
    gradient_sync_ = std::make_unique<GradientSync>(module_->parameters(), *ranks_);
  }
  if (is_lora_run(cfg_)) lower_frozen_projections(model_, cfg_.base_precision);  // after the fp32 broadcast
}

// A new LoRA run: adapters on the loaded base, which its checkpoints point at (resolved, with its weights' digest).
void TrainingRun::attach_adapters_to_base() {
  attach_lora(*model_.module(), lora_settings(cfg_));
  if (cfg_.init_checkpoint.empty()) {
    if (writes_) throw std::invalid_argument("a LoRA run needs an --init checkpoint: the base its adapters adapt");
    return;  // a benchmark on fresh weights
  }
  info_.train.init_checkpoint =
      std::filesystem::absolute(resolve_checkpoint_dir(cfg_.init_checkpoint)).lexically_normal().string();
  info_.train.lora_base_digest = weights_digest(info_.train.init_checkpoint);
}

// LoRA: only the adapters (and --trainable names, a classifier's head) keep requires_grad, so only they get
// gradients, optimizer state and gradient buckets.
void TrainingRun::freeze_base() {
  if (is_lora_run(cfg_)) trainable_parameters_ = freeze_all_but_trainable(model_, cfg_);
}

// The whole optimizer, or this rank's share of it.
void TrainingRun::make_optimizer_here() {
  if (ranks_ && cfg_.shard_optimizer) {
    shards_ = std::make_unique<OptimizerShards>(*model_.module(), cfg_, *ranks_);
  } else {
    optimizer_ = make_optimizer(*model_.module(), cfg_);
  }
}

// The run directory (made if missing), metrics.jsonl, the fp16 loss scale (restored on resume), the skip monitor,
// the first progress line and the MFU baseline: the model's FLOPs per token against a GEMM timed on this device in
// this process.
void TrainingRun::open_outputs() {
  if (writes_) {
    std::error_code ec;
    std::filesystem::create_directories(run_dir_, ec);  // already there when the caller took it (take_run_dir)
    if (ec) throw std::runtime_error("cannot create run directory " + run_dir_ + ": " + ec.message());
    // Records past the checkpoint the run continues from (or any from a run that never saved) are dropped.
    truncate_metrics_after(run_dir_ + "/metrics.jsonl", state_.step);
    metrics_ = std::make_unique<MetricsLog>(run_dir_ + "/metrics.jsonl");
  }
  if (cfg_.precision == Precision::kFp16) {
    scaler_ = LossScaler(device_, state_.loss_scale > 0 ? state_.loss_scale : LossScaler::kInitialScale,
                         state_.scale_growth_tracker);
  }
  skips_ = std::make_unique<SkipMonitor>(device_);
  if (cfg_.cuda_graphs) set_up_cuda_graphs();
  choose_attention_kernel();
  if (cfg_.fused_add_norm) switch_on_fused_add_norm();
  if (cfg_.fused_bias_gelu) switch_on_fused_bias_gelu();
  const int64_t world = ranks_ ? ranks_->world_size() : 1;
  tokens_per_step_ = task_->tokens_per_batch() * cfg_.grad_accum * world;  // all ranks
  if (shows_) {
    const std::string where =
        ranks_ ? std::to_string(world) + " ranks (" + ranks_->backend_name() + "), device " + device_.str() +
                     " each, global batch " + std::to_string(cfg_.batch_size * cfg_.grad_accum * world) +
                     (shards_ ? ", AdamW state sharded (ZeRO-1; rank 0 keeps " +
                                    std::to_string(shards_->owned_elements()) + " of " +
                                    std::to_string(shards_->total_elements()) + " parameters' moments)"
                              : "")
               : "device " + device_.str();
    const std::string lora =
        is_lora_run(cfg_) ? " (LoRA: " + std::to_string(trainable_parameters_) + " trainable, the rest frozen" +
                                (cfg_.base_precision != BasePrecision::kFp32 ? " in " + enum_name(cfg_.base_precision) : "") + ")"
                          : "";
    progress_.note("lmzoo train: " + std::to_string(parameter_count(request_.model)) + " parameters" + lora + ", " +
                   where +
                   ", " + std::to_string(tokens_per_step_) + " tokens/step, steps " + std::to_string(state_.step) +
                   " -> " + std::to_string(cfg_.steps));
    if (!task_->summary().empty()) progress_.note(task_->summary());
  }
  flops_per_token_ = model_flops_per_token(request_.model);
  peak_flops_ = measure_peak_flops(device_, cfg_.precision) * double(world);
}

// An allocator's error (out of memory) ends the progress bar's line before train_model reports it.
TrainResult TrainingRun::run() {
  try {
    return run_steps();
  } catch (const c10::Error&) {
    if (shows_) progress_.finish();
    throw;
  }
}

TrainResult TrainingRun::run_steps() {
  InterruptChecks stop_signals;  // SIGINT/SIGTERM: finish the step, save last/, return; a second: exit at once
  run_start_ = window_start_ = std::chrono::steady_clock::now();
  elapsed_before_ = state_.elapsed_s;
  while (state_.step < cfg_.steps) {
    fault_point("step", state_.step);  // where the suite's fault-injection build kills a rank
    const StepOutcome step = train_step();
    if (fused_bias_gelu_ && !bias_gelu_refusal_noted_) note_bias_gelu_refusal();
    if (request_.callbacks.after_step) request_.callbacks.after_step(state_.step);
    // Reading from the device waits for it: only at log, eval and stop steps, or every step for a step callback
    // (on a CPU, every step).
    const bool log_step = state_.step % cfg_.log_interval == 0 || state_.step == cfg_.steps;
    const bool eval_step = state_.step % cfg_.eval_interval == 0 || state_.step == cfg_.steps;
    const bool sync_point = log_step || eval_step || reports_steps_ || !device_.is_cuda();
    // A signal stops every rank at the same step: the ranks agree on it at sync points.
    bool signalled = interrupt_requested();
    if (ranks_) signalled = sync_point && ranks_->any(signalled);
    bool stopping = signalled || (request_.max_steps_this_call > 0 &&
                                  int64_t(result_.step_seconds.size()) == request_.max_steps_this_call);
    const bool too_many_skips = settle_at_sync_point(sync_point, stopping);
    log_step_if(step, log_step, stopping);
    if (too_many_skips) {  // nothing is saved
      if (shows_) progress_.finish();
      throw std::runtime_error(non_finite_stop_message(cfg_, state_.step, longest_skip_run_));
    }
    if (reports_steps_ && step_callback_stops(step)) stopping = true;
    if (evaluate_and_save(eval_step, stopping, signalled)) break;
  }
  if (shows_) progress_.finish();
  state_.elapsed_s = elapsed_before_ + seconds_since(run_start_);
  result_.state = state_;
  result_.peak_device_memory_bytes = peak_device_memory_bytes(device_);
  for (const auto& p : module_->parameters()) {
    if (p.requires_grad()) result_.trainable_parameters += p.numel();
    result_.parameter_bytes += p.numel() * int64_t(p.element_size());
  }
  return result_;
}

// One optimizer step: LR from the schedule, grad_accum micro-batches, clip, AdamW. Each micro-batch's mean loss
// is weighted by its share of the targets the step scores on all ranks, so the summed gradient is that of the
// step's global mean loss (one rank of batch N*b = N ranks of batch b).
StepOutcome TrainingRun::train_step() {
  const auto step_start = std::chrono::steady_clock::now();
  StepOutcome out;
  out.lr = learning_rate(cfg_, state_.step);
  set_learning_rate(optimizer(), out.lr);
  std::vector<TrainBatch> micro_batches;
  std::vector<int64_t> micro_targets;
  for (int64_t micro = 0; micro < cfg_.grad_accum; ++micro) {
    micro_batches.push_back(task_->train_batch(state_.step, micro));
    micro_targets.push_back(scored_targets(micro_batches.back()));
  }
  const torch::Tensor per_target = step_target_weight(micro_targets, ranks_);
  std::vector<torch::Tensor> weights;  // each micro-batch's share of the step's targets (0-dim)
  for (int64_t n : micro_targets) weights.push_back(per_target * double(n));
  if (graphed_) out.loss_sum = graphed_step(micro_batches, weights);
  if (!out.loss_sum.defined()) out.loss_sum = eager_step(micro_batches, weights);
  if (request_.synchronize_steps && device_.is_cuda()) torch::cuda::synchronize();
  ++state_.step;
  state_.tokens_seen += tokens_per_step_;
  result_.step_seconds.push_back(seconds_since(step_start));
  ++window_steps_;
  return out;
}

// One micro-batch's forward (autocast as the run asks) and backward; returns its weighted loss, detached.
torch::Tensor TrainingRun::micro_step(const TrainBatch& batch, const torch::Tensor& weight) {
  torch::Tensor loss;
  {
    AutocastScope autocast(cfg_.precision, device_);
    loss = task_loss(model_, batch, cfg_.fused_loss ? LossHead::kFused : LossHead::kLogits) * weight;
  }
  (scaler_.enabled() ? loss * scaler_.scale() : loss).backward();
  return loss.detach();
}

// The step as separate kernels: micro-batches (their gradients summed, ranks' synced), then clip + AdamW.
torch::Tensor TrainingRun::eager_step(const std::vector<TrainBatch>& micro_batches,
                                      const std::vector<torch::Tensor>& weights) {
  torch::Tensor loss_sum;  // stays on the device
  for (size_t micro = 0; micro < micro_batches.size(); ++micro) {
    const TrainBatch batch = micro_batches[micro].to(device_);
    if (gradient_sync_) gradient_sync_->prepare(/*send=*/micro + 1 == micro_batches.size());
    const torch::Tensor loss = micro_step(batch, weights[micro]);
    loss_sum = micro == 0 ? loss : loss_sum + loss;
  }
  if (gradient_sync_) gradient_sync_->finish();
  // Clip (when grad_clip > 0) and AdamW, fused; skipped (nothing changes) when the gradients are not finite.
  // Sharded: this rank updates its share, with the norm of all the gradients, and the owners share the results.
  const AdamWStepResult step = clip_and_adamw_step(optimizer(), cfg_.grad_clip, scaler_.scale(), skips_->uncounted(),
                                                   shards_ ? shards_->gradients() : std::vector<torch::Tensor>{});
  if (shards_) shards_->share_updates();
  skips_->record(step);
  scaler_.update(step.skipped);
  for (auto& p : module_->parameters()) p.mutable_grad() = torch::Tensor();  // set_to_none
  return loss_sum;
}

// --cuda-graphs: the step replayed from a CUDA graph once this call's first kGraphWarmupSteps ran eagerly (they
// make the optimizer's state and the libraries' lazy set-up); undefined when this step must run eagerly.
torch::Tensor TrainingRun::graphed_step(const std::vector<TrainBatch>& micro_batches,
                                        const std::vector<torch::Tensor>& weights) {
  constexpr size_t kGraphWarmupSteps = 2;
  if (result_.step_seconds.size() < kGraphWarmupSteps) return {};
  const std::string mismatch = graphed_->mismatch(micro_batches);
  if (!mismatch.empty()) {
    cuda_graphs_off(mismatch);
    return {};
  }
  const bool first = result_.cuda_graphs.empty();
  torch::Tensor loss_sum = graphed_->run(micro_batches, weights);
  if (!loss_sum.defined()) {
    cuda_graphs_off("it could not be recorded: " + graphed_->failure());
  } else if (first) {
    result_.cuda_graphs = "replayed from step " + std::to_string(state_.step + 1);
    if (shows_) progress_.note("CUDA graphs: the step is " + result_.cuda_graphs);
  }
  return loss_sum;
}

// --cuda-graphs on a run whose step can be replayed; otherwise the run says why, once, and steps run eagerly.
void TrainingRun::set_up_cuda_graphs() {
  const std::string why = GraphedTrainStep::unavailable_reason(cfg_, device_, ranks_ != nullptr);
  if (!why.empty()) {
    cuda_graphs_off(why);
    return;
  }
  graphed_ = std::make_unique<GraphedTrainStep>(
      optimizer(), *skips_, cfg_.grad_clip,
      [this](const TrainBatch& batch, const torch::Tensor& weight) { return micro_step(batch, weight); });
}

// --attention-kernel on CUDA: the kernel named, or each timed at the run's attention shape and the fastest, tried
// first until the run ends; reported.
void TrainingRun::choose_attention_kernel() {
  if (cfg_.attention_kernel == AttentionKernel::kDefault) return;
  if (!device_.is_cuda()) {
    result_.attention = "--attention-kernel applies to CUDA; the CPU runs lmzoo's own attention";
  } else if (cfg_.attention_kernel == AttentionKernel::kFastest) {
    const std::vector<KernelTime> times = time_attention_kernels(attention_shape(request_.model, cfg_), device_);
    const AttentionKernel fastest = fastest_kernel(times);
    result_.attention = attention_report(times, fastest);
    attention_kernel_ = std::make_unique<PreferredAttentionKernel>(fastest);
  } else {
    result_.attention = enum_name(cfg_.attention_kernel) + " first";
    attention_kernel_ = std::make_unique<PreferredAttentionKernel>(cfg_.attention_kernel);
  }
  if (shows_) progress_.note("attention: " + result_.attention);
}

// --fused-add-norm: the blocks' residual additions and the norms after them in lmzoo's CUDA kernel where it runs;
// says which.
void TrainingRun::switch_on_fused_add_norm() {
  fused_add_norm_ = std::make_unique<FusedAddNormScope>(true);
  const std::string why = fused_add_norm_unavailable_reason(device_);
  if (shows_) {
    progress_.note(why.empty() ? "fused add + norm: lmzoo's CUDA kernel" : "fused add + norm: plain ops (" + why + ")");
  }
}

// --fused-bias-gelu: the feed-forward layers' GELU side in cuBLASLt's epilogues where they run; says which.
void TrainingRun::switch_on_fused_bias_gelu() {
  fused_bias_gelu_ = std::make_unique<FusedBiasGeluScope>(true);
  const std::string why = fused_bias_gelu_unavailable_reason(device_, info_.model);
  if (shows_) {
    progress_.note(why.empty() ? "fused bias + GELU: cuBLASLt's epilogues"
                               : "fused bias + GELU: plain ops (" + why + ")");
  }
}

// Once per run: a product cuBLASLt had no epilogue kernel for took the plain ops.
void TrainingRun::note_bias_gelu_refusal() {
  const std::string refusal = gelu_mlp_first_refusal();
  if (refusal.empty()) return;
  bias_gelu_refusal_noted_ = true;
  if (shows_) {
    progress_.note("fused bias + GELU: " + refusal + ": such products take the plain ops (seen in step " +
                   std::to_string(state_.step) + ")");
  }
}

void TrainingRun::cuda_graphs_off(const std::string& why) {
  graphed_.reset();
  const std::string from = result_.cuda_graphs.empty() ? "" : result_.cuda_graphs + ", ";
  result_.cuda_graphs = from + "eager from step " + std::to_string(state_.step + 1) + ": " + why;
  if (shows_) progress_.note("CUDA graphs: steps run eagerly from step " + std::to_string(state_.step + 1) + ": " + why);
}

// Counts the skipped steps at sync points; true when too many non-finite steps came in a row.
bool TrainingRun::settle_at_sync_point(bool sync_point, bool stopping) {
  if (sync_point || stopping) {
    const SkipMonitor::Settled settled = skips_->settle(optimizer());
    state_.skipped_steps += settled.skipped;
    longest_skip_run_ = settled.longest_run;
  }
  return longest_skip_run_ >= cfg_.max_consecutive_skips;
}

// Progress line and a metrics record every log_interval steps (the loss read also for a stop or a step callback).
void TrainingRun::log_step_if(const StepOutcome& step, bool log_step, bool stopping) {
  if (log_step || stopping || reports_steps_) {
    result_.last_train_loss = step.loss_sum.item<double>();
    if (ranks_) result_.last_train_loss = ranks_->sum(result_.last_train_loss);  // the global mean
  }
  if (!log_step) return;
  const double window_s = seconds_since(window_start_);
  const double tokens_per_s = double(window_steps_ * tokens_per_step_) / std::max(window_s, 1e-9);
  const double elapsed = seconds_since(run_start_);
  const double mfu = flops_per_token_ * tokens_per_s / peak_flops_;
  if (shows_) {
    // ETA from this call's own pace: steps done here over time spent here.
    const double pace = elapsed / double(result_.step_seconds.size());
    progress_.update({state_.step, cfg_.steps, result_.last_train_loss, step.lr, tokens_per_s,
                      pace * double(state_.step), mfu, device_.is_cuda() ? peak_device_memory_bytes(device_) : 0,
                      state_.skipped_steps});
  }
  if (metrics_) {
    nlohmann::json record = {{"type", "train"}, {"step", state_.step}, {"loss", result_.last_train_loss},
                             {"lr", step.lr}, {"tokens_per_s", tokens_per_s}, {"mfu", mfu},
                             {"tokens_seen", state_.tokens_seen}, {"elapsed_s", elapsed_before_ + elapsed},
                             {"skipped_steps", state_.skipped_steps}};
    if (device_.is_cuda()) record["peak_memory_bytes"] = peak_device_memory_bytes(device_);
    if (scaler_.enabled()) record["loss_scale"] = scaler_.scale_value();
    metrics_->append(record);
  }
  window_start_ = std::chrono::steady_clock::now();
  window_steps_ = 0;
}

// The step's report to the program's callback (its tokens/s from this step's time); true when it, on any rank,
// asks to stop.
bool TrainingRun::step_callback_stops(const StepOutcome& step) {
  const double tokens_per_s = double(tokens_per_step_) / std::max(result_.step_seconds.back(), 1e-9);
  const bool stop = request_.callbacks.on_step({state_.step, result_.last_train_loss, step.lr, tokens_per_s}) ==
                    RunControl::kStop;
  callback_stopped_ = ranks_ ? ranks_->any(stop) : stop;
  return callback_stopped_;
}

// The validation's report to the program's callback; true when it, on any rank, asks to stop.
bool TrainingRun::eval_callback_stops(double val_loss, bool improved) {
  if (!request_.callbacks.on_eval) return false;
  const bool stop = request_.callbacks.on_eval({state_.step, val_loss, improved}) == RunControl::kStop;
  if (ranks_ ? ranks_->any(stop) : stop) callback_stopped_ = true;
  return callback_stopped_;
}

// Validation and checkpoints: last/ at every eval and on an early stop, best/ when validation improves (or at
// every eval when the data has no validation split). True when the run stops here (a validation callback may ask).
bool TrainingRun::evaluate_and_save(bool eval_step, bool stopping, bool signalled) {
  if (!eval_step && !stopping) return false;
  const auto pause_start = std::chrono::steady_clock::now();
  bool improved = false;
  if (ranks_ && eval_step) require_identical_replicas(*module_, *ranks_, state_.step);
  if (has_val_ && eval_step && !signalled) {
    const ValidationSum part = validation_loss_sum(model_, *task_, device_, cfg_.precision, shard_);
    const double val_loss = ranks_ ? ranks_->sum(part.weighted_loss) / ranks_->sum(double(part.rows))
                                   : part.weighted_loss / double(part.rows);
    result_.last_val_loss = val_loss;
    improved = val_loss < state_.best_val_loss;
    if (improved) state_.best_val_loss = val_loss;
    if (shows_) {
      char line[128];
      std::snprintf(line, sizeof line, "step %ld: val loss %.4f (ppl %.2f)%s", long(state_.step), val_loss,
                    std::exp(val_loss), improved ? ", best so far" : "");
      progress_.note(line);
    }
    if (metrics_) {
      metrics_->append({{"type", "eval"}, {"step", state_.step}, {"val_loss", val_loss}, {"val_ppl", std::exp(val_loss)}});
    }
    if (eval_callback_stops(val_loss, improved)) stopping = true;
  }
  std::vector<std::string> checkpoints{"last"};
  if (improved || (!has_val_ && eval_step)) checkpoints.push_back("best");
  save(checkpoints);
  if (writes_ && eval_step) write_curves();
  if (stopping && state_.step < cfg_.steps) {
    if (shows_) {
      progress_.note(std::string(signalled ? "interrupted" : "stopped") + ": saved " + run_dir_ + "/last at step " +
                     std::to_string(state_.step) + " (continue with lmzoo train --resume " + run_dir_ + ")");
    }
    result_.interrupted = true;
    result_.stopped_by_callback = callback_stopped_;
    return true;
  }
  // Evaluation and saving are not training time: keep them out of the tokens/s window.
  window_start_ += std::chrono::steady_clock::now() - pause_start;
  return false;
}

// RUN_DIR/curves.svg from metrics.jsonl (lmzoo plot of this run). A picture that cannot be written is said once
// and does not stop the run.
void TrainingRun::write_curves() {
  try {
    write_run_curves(run_dir_);
  } catch (const std::exception& e) {
    if (shows_ && !curves_failed_) progress_.note(std::string("no curves.svg: ") + e.what());
    curves_failed_ = true;
  }
}

// Rank 0 saves each of RUN_DIR/NAMES (a sharded optimizer gathered to it once first, and let go after); every
// rank waits for it, and all stop when it could not.
void TrainingRun::save(const std::vector<std::string>& names) {
  const std::unique_ptr<torch::optim::AdamW> gathered = shards_ ? shards_->gather_to_rank0() : nullptr;
  for (const std::string& name : names) {
    on_ranks_agreeing(ranks_, writes_, [&] {
      if (!parameters_finite(*module_)) {
        throw std::runtime_error("the weights are not finite at step " + std::to_string(state_.step) +
                                 ": not saved (the last checkpoint is untouched); try a lower --lr or --precision fp32");
      }
      state_.elapsed_s = elapsed_before_ + seconds_since(run_start_);
      if (scaler_.enabled()) {
        state_.loss_scale = scaler_.scale_value();
        state_.scale_growth_tracker = scaler_.growth_tracker();
      }
      save_checkpoint(run_dir_ + "/" + name, module_, shards_ ? gathered.get() : optimizer_.get(), info_);
    }, "save " + run_dir_ + "/" + name);
  }
}

}  // namespace

// Running out of memory (CUDA's or the CPU's allocator), while setting up or in a step, ends the run in one line that
// names the estimate and the switches that lower it; the last checkpoint saved stays as it was.
TrainResult train_model(const TrainRequest& request, const torch::Device& device) {
  try {
    return TrainingRun(request, device).run();
  } catch (const c10::Error& e) {
    if (!is_out_of_memory(e)) throw;
    throw std::runtime_error(out_of_memory_message(request.model, request.train, device));
  }
}

}  // namespace lmzoo
