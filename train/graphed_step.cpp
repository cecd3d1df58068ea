// GraphedTrainStep: the step recorded once on static device buffers, then replayed with each step's inputs copied in.
#include "train/graphed_step.h"

#include <stdexcept>

#include "models/activation_checkpointing.h"
#include "models/kernels/fused_adamw.h"

namespace lmzoo {

namespace {

// A batch's tensors in TrainBatch's order, undefined ones included (handles: a copy into one fills the batch's).
std::vector<torch::Tensor> batch_tensors(const TrainBatch& b) {
  return {b.input_ids,         b.labels,     b.attention_mask, b.token_type_ids,
          b.decoder_input_ids, b.prefix_len, b.segment_ids,    b.scored_positions};
}
const char* const kBatchTensorNames[] = {"input_ids",         "labels",     "attention_mask", "token_type_ids",
                                         "decoder_input_ids", "prefix_len", "segment_ids",    "scored_positions"};

std::string shape_text(const torch::Tensor& t) {
  if (!t.defined()) return "none";
  std::string text = "(";
  for (int64_t d = 0; d < t.dim(); ++d) text += (d ? ", " : "") + std::to_string(t.size(d));
  return text + ")";
}

torch::Device parameters_device(torch::optim::AdamW& optimizer) {
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) return p.device();
  }
  throw std::invalid_argument("the optimizer holds no parameters");
}

}  // namespace

std::string GraphedTrainStep::unavailable_reason(const TrainConfig& cfg, const torch::Device& device,
                                                 bool data_parallel) {
  if (cfg.precision == Precision::kFp16) return "fp16's loss scale is grown and cut on the host (bf16 has none)";
  if (cfg.objective == Objective::kMlm) return "masked LM scores a different number of positions in each batch";
  if (data_parallel) return "data-parallel ranks exchange gradient buckets while the backward runs";
  if (parse_checkpoint_policy(cfg.activation_checkpointing).every > 0) {
    return "activation checkpointing keeps the random generators' states on the host";
  }
  return CudaGraph::unavailable_reason(device);
}

GraphedTrainStep::GraphedTrainStep(torch::optim::AdamW& optimizer, SkipMonitor& skips, double grad_clip,
                                   MicroStep micro_step)
    : optimizer_(optimizer), skips_(skips), grad_clip_(grad_clip), micro_step_(std::move(micro_step)) {}

std::string GraphedTrainStep::mismatch(const std::vector<TrainBatch>& batches) const {
  if (!graph_.recorded()) return "";
  if (batches.size() != batches_.size()) return "the number of micro-batches changed";
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto given = batch_tensors(batches[i]), recorded = batch_tensors(batches_[i]);
    for (size_t k = 0; k < given.size(); ++k) {
      const bool same = given[k].defined() == recorded[k].defined() &&
                        (!given[k].defined() || (given[k].sizes() == recorded[k].sizes() &&
                                                 given[k].scalar_type() == recorded[k].scalar_type()));
      if (!same) {
        return std::string("the batch's ") + kBatchTensorNames[k] + " has shape " + shape_text(given[k]) +
               " where the recorded step's had " + shape_text(recorded[k]);
      }
    }
  }
  return "";
}

void GraphedTrainStep::drop_gradients() {
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) p.mutable_grad() = torch::Tensor();
  }
}

torch::Tensor GraphedTrainStep::run(const std::vector<TrainBatch>& batches, const std::vector<torch::Tensor>& weights) {
  if (!graph_.recorded()) {
    failure_ = record(batches);
    if (!failure_.empty()) return {};
  }
  copy_inputs(batches, weights);
  count_step();
  graph_.replay();
  return loss_sum_;
}

// Static inputs are made before recording, outside the graph's memory pool (a block of the pool may be written by
// the graph before the step reads it); outputs and gradients are made while recording, in the pool.
std::string GraphedTrainStep::record(const std::vector<TrainBatch>& batches) {
  const torch::Device device = parameters_device(optimizer_);
  const auto on_device = torch::TensorOptions().dtype(torch::kFloat).device(device);
  batches_.clear();
  weights_.clear();
  for (const auto& b : batches) {
    batches_.push_back(b.to(device));
    weights_.push_back(torch::zeros({}, on_device));
  }
  adamw_inputs_ = {};
  std::vector<int64_t> group_offsets;
  int64_t slots = 0;
  for (auto& group : optimizer_.param_groups()) {
    adamw_inputs_.lr.push_back(torch::zeros({}, on_device));
    group_offsets.push_back(slots);
    slots += int64_t(group.params().size());
  }
  steps_ = torch::zeros({slots}, on_device);
  // AdamW's moments exist, in their parameters' dtype, before recording: made while recording, every replay would
  // zero them again.
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.requires_grad()) continue;
      auto& state = adamw_state_for(optimizer_, p);
      if (state.exp_avg().options().dtype() != p.options().dtype() || state.exp_avg().device() != p.device()) {
        state.exp_avg(state.exp_avg().to(p.options()).contiguous());
        state.exp_avg_sq(state.exp_avg_sq().to(p.options()).contiguous());
      }
    }
  }
  drop_gradients();
  const std::string error = graph_.record([&] {
    torch::Tensor sum;
    for (size_t i = 0; i < batches_.size(); ++i) {
      const torch::Tensor loss = micro_step_(batches_[i], weights_[i]);
      sum = i == 0 ? loss : sum + loss;
    }
    loss_sum_ = sum;
    if (!multi_tensor_adamw_supported(optimizer_)) {
      throw std::runtime_error("AdamW takes the library's own step here (amsgrad, or mixed devices or dtypes)");
    }
    // The parameters the backward gave gradients, in the optimizer's order; their counters' slots in steps_.
    updated_.clear();
    size_t g = 0;
    for (auto& group : optimizer_.param_groups()) {
      int64_t n = 0;
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        updated_.push_back(p);
        ++n;
      }
      adamw_inputs_.steps.push_back(steps_.narrow(0, group_offsets[g++], n));  // a view: no allocation
    }
    const AdamWStepResult step = device_input_clip_and_adamw_step(optimizer_, grad_clip_, skips_.uncounted(),
                                                                  adamw_inputs_);
    skips_.record(step);
  });
  // Gradients made while recording live in the graph's pool: each replay writes them again.
  drop_gradients();
  return error;
}

void GraphedTrainStep::copy_inputs(const std::vector<TrainBatch>& batches, const std::vector<torch::Tensor>& weights) {
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto given = batch_tensors(batches[i]), recorded = batch_tensors(batches_[i]);
    for (size_t k = 0; k < given.size(); ++k) {
      if (given[k].defined()) recorded[k].copy_(given[k].pin_memory(), /*non_blocking=*/true);
    }
    weights_[i].fill_(weights[i].item<float>());  // a CPU tensor: no wait for the device
  }
  size_t g = 0;
  for (auto& group : optimizer_.param_groups()) {
    adamw_inputs_.lr[g++].fill_(static_cast<torch::optim::AdamWOptions&>(group.options()).lr());
  }
}

// The host's Adam step counters advance as the eager step advances them; the graph reads them already counted,
// each group's in the first slots of its part of steps_.
void GraphedTrainStep::count_step() {
  std::vector<float> counters(size_t(steps_.numel()), 0.0f);
  size_t i = 0, group_offset = 0;
  for (auto& group : optimizer_.param_groups()) {
    size_t j = 0;
    for (auto& p : group.params()) {
      if (i < updated_.size() && updated_[i].is_same(p)) {
        auto& state = adamw_state_for(optimizer_, p);
        state.step(state.step() + 1);
        counters[group_offset + j++] = float(state.step());
        ++i;
      }
    }
    group_offset += group.params().size();
  }
  steps_.copy_(torch::tensor(counters, torch::kFloat).pin_memory(), /*non_blocking=*/true);
}

}  // namespace lmzoo
