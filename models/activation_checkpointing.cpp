// Activation checkpointing as a custom autograd Function (LibTorch C++ has no torch.utils.checkpoint): the forward
// keeps the block's inputs and the RNG and autocast state; the backward reruns the block under that state and
// backpropagates through the rerun. Leaves out: higher-order gradients (create_graph) through a checkpointed block.
#include "models/activation_checkpointing.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <ATen/Context.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "models/torch_compat.h"

namespace lmzoo {

CheckpointPolicy parse_checkpoint_policy(const std::string& text) {
  if (text == "none") return CheckpointPolicy{0};
  if (text == "blocks") return CheckpointPolicy{1};
  const std::string prefix = "every-";
  const std::string digits = text.compare(0, prefix.size(), prefix) == 0 ? text.substr(prefix.size()) : "";
  const bool number = !digits.empty() && digits.size() <= 9 &&
                      std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
  if (number && std::stoll(digits) >= 1) return CheckpointPolicy{std::stoll(digits)};
  throw std::invalid_argument("--activation-checkpointing must be none, blocks or every-N (N >= 1), got '" + text +
                              "'");
}

namespace {

// The states of the default generators a block may draw from: the CPU's always, and the inputs' device's.
class RngSnapshot {
 public:
  static RngSnapshot take(const torch::Device& device) {
    RngSnapshot snapshot;
    std::vector<torch::Device> devices{torch::Device(torch::kCPU)};
    if (!device.is_cpu()) devices.push_back(device);
    for (const auto& d : devices) {
      at::Generator generator = at::globalContext().defaultGenerator(d);
      std::lock_guard<std::mutex> lock(generator.mutex());
      snapshot.states_.emplace_back(generator, generator.get_state());
    }
    return snapshot;
  }
  void restore() const {
    for (const auto& [generator, state] : states_) {
      at::Generator g = generator;
      std::lock_guard<std::mutex> lock(g.mutex());
      g.set_state(state);
    }
  }

 private:
  std::vector<std::pair<at::Generator, torch::Tensor>> states_;
};

// Whether autocast is on, and with which dtype, for CPU and CUDA.
class AutocastSnapshot {
 public:
  static AutocastSnapshot take() {
    AutocastSnapshot snapshot;
    for (auto& s : snapshot.settings_) {
      s.enabled = compat::is_autocast_enabled(s.type);
      s.dtype = compat::autocast_dtype(s.type);
    }
    return snapshot;
  }
  void restore() const {
    for (const auto& s : settings_) {
      compat::set_autocast(s.type, true, s.dtype);  // the dtype is set only while enabling
      compat::set_autocast(s.type, s.enabled);
    }
  }
  bool any_enabled() const {
    return std::any_of(settings_.begin(), settings_.end(), [](const Setting& s) { return s.enabled; });
  }

 private:
  struct Setting {
    c10::DeviceType type;
    bool enabled = false;
    at::ScalarType dtype = at::kBFloat16;
  };
  std::array<Setting, 2> settings_{Setting{c10::DeviceType::CPU}, Setting{c10::DeviceType::CUDA}};
};

// For its lifetime: the generators and autocast as a checkpointed forward found them; then back as they were.
// Weight casts cached while the rerun had autocast on are dropped when autocast was off around it (as an
// AutocastScope's end drops them): kept, the next step's forward would reuse casts of weights the optimizer has
// since changed.
class ForwardStateReplay {
 public:
  ForwardStateReplay(const RngSnapshot& rng, const AutocastSnapshot& autocast, const torch::Device& device)
      : found_rng_(RngSnapshot::take(device)), found_autocast_(AutocastSnapshot::take()) {
    rng.restore();
    autocast.restore();
  }
  ~ForwardStateReplay() {
    found_autocast_.restore();
    if (!found_autocast_.any_enabled()) at::autocast::clear_cache();
    found_rng_.restore();
  }
  ForwardStateReplay(const ForwardStateReplay&) = delete;
  ForwardStateReplay& operator=(const ForwardStateReplay&) = delete;

 private:
  RngSnapshot found_rng_;
  AutocastSnapshot found_autocast_;
};

// What the backward needs besides the saved inputs, carried in the node's saved_data as a capsule (its only
// slot for a non-IValue object).
struct BlockReplay : torch::CustomClassHolder {
  BlockFunction block;
  std::vector<bool> needs_grad;  // per block input: requires_grad in the forward
  bool anchored = false;         // an anchor input follows the block's inputs (see checkpointed)
  torch::Device device{torch::kCPU};
  RngSnapshot rng;
  AutocastSnapshot autocast;
};

// Fresh leaves on the same data, each requiring gradients as its original did.
std::vector<torch::Tensor> detached_like(const std::vector<torch::Tensor>& inputs, const std::vector<bool>& needs_grad) {
  std::vector<torch::Tensor> leaves;
  leaves.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) leaves.push_back(inputs[i].detach().requires_grad_(needs_grad[i]));
  return leaves;
}

// block on fresh leaves with grad mode on: the kernels (fused ones choose by requires_grad) are those of the
// uncheckpointed forward, and the rerun takes the same ones.
torch::Tensor run_with_graph(const BlockReplay& replay, const std::vector<torch::Tensor>& leaves) {
  torch::AutoGradMode grad_mode(true);
  return replay.block(leaves);
}

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // inputs: the block's, then the anchor when replay->anchored.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                               c10::intrusive_ptr<BlockReplay> replay) {
    replay->rng = RngSnapshot::take(replay->device);
    replay->autocast = AutocastSnapshot::take();
    const std::vector<torch::Tensor> block_inputs(inputs.begin(), inputs.begin() + replay->needs_grad.size());
    // The graph built here dies with `out` at the end of this function: only the inputs stay.
    const torch::Tensor out = run_with_graph(*replay, detached_like(block_inputs, replay->needs_grad));
    ctx->save_for_backward(block_inputs);
    ctx->saved_data["replay"] = c10::IValue::make_capsule(replay);
    return torch::Tensor(out.variable_data());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(!torch::GradMode::is_enabled(),
                "activation checkpointing does not support higher-order gradients (create_graph)");
    const auto replay = c10::static_intrusive_pointer_cast<BlockReplay>(ctx->saved_data["replay"].toCapsule());
    const auto leaves = detached_like(ctx->get_saved_variables(), replay->needs_grad);
    torch::Tensor out;
    {
      ForwardStateReplay state(replay->rng, replay->autocast, replay->device);
      out = run_with_graph(*replay, leaves);
    }
    // Accumulates the parameters' gradients (each parameter's hooks fire once) and the leaves'.
    if (out.requires_grad()) torch::autograd::backward({out}, {grads[0]});
    torch::autograd::variable_list input_grads;
    for (const auto& leaf : leaves) input_grads.push_back(leaf.requires_grad() ? leaf.grad() : torch::Tensor());
    if (replay->anchored) input_grads.emplace_back();
    input_grads.emplace_back();  // the replay: not a tensor
    return input_grads;
  }
};

bool any_requires_grad(const std::vector<torch::Tensor>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const torch::Tensor& t) { return t.requires_grad(); });
}

}  // namespace

torch::Tensor checkpointed(const BlockFunction& block, const std::vector<torch::Tensor>& inputs,
                           const std::vector<torch::Tensor>& parameters) {
  TORCH_CHECK(!inputs.empty(), "a checkpointed block needs at least one input");
  for (const auto& t : inputs) TORCH_CHECK(t.defined(), "a checkpointed block's inputs must be defined tensors");
  const bool inputs_need_grad = any_requires_grad(inputs);
  if (!torch::GradMode::is_enabled() || !(inputs_need_grad || any_requires_grad(parameters))) return block(inputs);
  auto replay = c10::make_intrusive<BlockReplay>();
  replay->block = block;
  for (const auto& t : inputs) replay->needs_grad.push_back(t.requires_grad());
  replay->device = inputs.front().device();
  std::vector<torch::Tensor> edges = inputs;
  if (!inputs_need_grad) {
    // No input needs a gradient but a parameter does: an empty leaf that does puts the node in the graph, so the
    // backward reaches it and reruns the block (its own gradient stays undefined).
    edges.push_back(torch::empty({0}, inputs.front().options().requires_grad(true)));
    replay->anchored = true;
  }
  return CheckpointFunction::apply(at::TensorList(edges), replay);
}

}  // namespace lmzoo
