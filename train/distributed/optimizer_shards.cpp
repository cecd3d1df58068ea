// ZeRO-1 optimizer sharding: ownership by size, owners' broadcasts after the step, whole-state gather and load.
#include "train/distributed/optimizer_shards.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "models/torch_compat.h"

namespace lmzoo {

namespace {

using StateKey = std::remove_reference_t<decltype(std::declval<torch::optim::AdamW&>().state())>::key_type;

StateKey state_key(const torch::Tensor& p) { return compat::optimizer_state_key<StateKey>(p); }

}  // namespace

std::vector<int> assign_owners(const std::vector<int64_t>& sizes, int world_size) {
  std::vector<size_t> largest_first(sizes.size());
  std::iota(largest_first.begin(), largest_first.end(), size_t{0});
  std::stable_sort(largest_first.begin(), largest_first.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<int64_t> load(size_t(std::max(world_size, 1)), 0);
  std::vector<int> owner(sizes.size(), 0);
  for (size_t i : largest_first) {
    const auto lightest = std::min_element(load.begin(), load.end());  // the first (lowest rank) on a tie
    owner[i] = int(lightest - load.begin());
    *lightest += sizes[i];
  }
  return owner;
}

OptimizerShards::OptimizerShards(torch::nn::Module& model, const TrainConfig& config, Communicator& comm)
    : comm_(comm), config_(config), all_(parameter_groups(model)), order_(all_.in_order()) {
  std::vector<int64_t> sizes;
  for (const auto& p : order_) sizes.push_back(p.numel());
  owner_ = assign_owners(sizes, comm_.world_size());
  ParameterGroups mine;
  for (size_t i = 0; i < order_.size(); ++i) {
    if (owner_[i] != comm_.rank()) continue;
    (i < all_.decay.size() ? mine.decay : mine.no_decay).push_back(order_[i]);
  }
  local_ = make_optimizer(mine, config_);
}

std::vector<torch::Tensor> OptimizerShards::gradients() const {
  std::vector<torch::Tensor> grads;
  for (const auto& p : order_) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

void OptimizerShards::share_updates() {
  torch::NoGradGuard no_grad;
  for (int root = 0; root < comm_.world_size(); ++root) {
    // One flat buffer per element type of the root's parameters: [sum of their numel]
    std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
    for (size_t i = 0; i < order_.size(); ++i) {
      if (owner_[i] == root) by_type[order_[i].scalar_type()].push_back(order_[i]);
    }
    for (auto& [type, params] : by_type) {
      std::vector<torch::Tensor> flat_views;
      for (const auto& p : params) flat_views.push_back(p.detach().reshape(-1));
      auto flat = torch::cat(flat_views).to(comm_.device());
      comm_.broadcast(flat, root);
      if (root == comm_.rank()) continue;
      int64_t offset = 0;
      for (auto& p : params) {
        p.detach().copy_(flat.slice(0, offset, offset + p.numel()).view(p.sizes()));
        offset += p.numel();
      }
    }
  }
}

std::unique_ptr<torch::optim::AdamW> OptimizerShards::gather_to_rank0() {
  torch::NoGradGuard no_grad;
  const bool receiver = comm_.rank() == 0;
  std::unique_ptr<torch::optim::AdamW> whole;
  if (receiver) {
    whole = make_optimizer(all_, config_);
    const auto& mine = local_->param_groups();
    auto& theirs = whole->param_groups();
    for (size_t g = 0; g < theirs.size(); ++g) {  // the rate the step ran with, as an unsharded optimizer saves it
      static_cast<torch::optim::AdamWOptions&>(theirs[g].options())
          .lr(static_cast<const torch::optim::AdamWOptions&>(mine[g].options()).lr());
    }
  }
  // Each parameter's step count, + 1 (0: no state yet), from its owner: [n_params]
  std::vector<int64_t> own_steps(order_.size(), 0);
  for (size_t i = 0; i < order_.size(); ++i) {
    if (owner_[i] != comm_.rank()) continue;
    const auto it = local_->state().find(state_key(order_[i]));
    if (it != local_->state().end()) own_steps[i] = static_cast<torch::optim::AdamWParamState&>(*it->second).step() + 1;
  }
  auto steps = torch::tensor(own_steps, torch::kLong).to(comm_.device());
  comm_.allreduce(steps, ReduceKind::kSum);
  steps = steps.cpu().contiguous();
  const int64_t* step_of = steps.data_ptr<int64_t>();
  for (size_t i = 0; i < order_.size(); ++i) {
    const int64_t step_plus_one = step_of[i];
    if (step_plus_one == 0) continue;
    const auto& p = order_[i];
    // The two moments stacked: [2, *p.sizes()]
    torch::Tensor moments;
    if (owner_[i] == comm_.rank()) {
      auto& s = static_cast<torch::optim::AdamWParamState&>(*local_->state().at(state_key(p)));
      moments = torch::stack({s.exp_avg(), s.exp_avg_sq()}).to(comm_.device());
    } else {
      std::vector<int64_t> shape{2};
      shape.insert(shape.end(), p.sizes().begin(), p.sizes().end());
      moments = torch::empty(shape, p.options().device(comm_.device()));
    }
    comm_.broadcast(moments, owner_[i]);
    if (!receiver) continue;
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(step_plus_one - 1);
    s->exp_avg(moments[0].to(torch::kCPU));  // host memory: a GPU never holds more than its own share
    s->exp_avg_sq(moments[1].to(torch::kCPU));
    whole->state()[state_key(p)] = std::move(s);
  }
  return whole;
}

void OptimizerShards::load(const CheckpointInfo& checkpoint) {
  auto whole = make_optimizer(all_, config_);
  load_optimizer_state(checkpoint, *whole);
  for (size_t i = 0; i < order_.size(); ++i) {
    if (owner_[i] != comm_.rank()) continue;
    const StateKey key = state_key(order_[i]);
    auto it = whole->state().find(key);
    if (it != whole->state().end()) local_->state()[key] = std::move(it->second);
  }
}

int64_t OptimizerShards::owned_elements() const {
  int64_t n = 0;
  for (size_t i = 0; i < order_.size(); ++i) n += owner_[i] == comm_.rank() ? order_[i].numel() : 0;
  return n;
}

int64_t OptimizerShards::total_elements() const {
  int64_t n = 0;
  for (const auto& p : order_) n += p.numel();
  return n;
}

}  // namespace lmzoo
