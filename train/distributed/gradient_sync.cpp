// Gradient buckets over c10d: post-hooks on the parameters' gradient accumulators count what is ready; buckets are
// sent strictly in order (every rank issues the same collectives in the same order), each as one flat buffer.
#include "train/distributed/gradient_sync.h"

#include <mutex>
#include <unordered_set>

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace lmzoo {

struct GradientSync::State {
  struct Bucket {
    std::vector<size_t> members;  // indices into params
    torch::Tensor flat;           // (sum of members' numel,) the buffer sent
    int64_t pending = 0;          // members whose gradient this backward has not produced yet
    std::function<void()> wait;   // set once sent
  };
  Communicator* communicator = nullptr;
  std::vector<torch::Tensor> params;
  std::vector<size_t> bucket_of;   // param index -> bucket index
  std::vector<int64_t> offset_of;  // param index -> offset in its bucket's flat buffer
  std::vector<Bucket> buckets;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // kept alive: they hold the hooks
  std::mutex mutex;
  bool sending = false;
  size_t next_to_send = 0;

  void send(Bucket& bucket) {
    for (size_t i : bucket.members) {
      const auto& grad = params[i].grad();
      auto slot = bucket.flat.narrow(0, offset_of[i], params[i].numel());
      if (grad.defined()) {
        slot.copy_(grad.reshape(-1));
      } else {
        slot.zero_();
      }
    }
    bucket.wait = communicator->start_allreduce(bucket.flat, ReduceKind::kSum);
  }
  // Sends every bucket from next_to_send on that is ready, in order.
  void send_ready() {
    while (next_to_send < buckets.size() && buckets[next_to_send].pending == 0) send(buckets[next_to_send++]);
  }
  void gradient_ready(size_t param) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!sending) return;
    Bucket& bucket = buckets[bucket_of[param]];
    if (bucket.pending > 0 && --bucket.pending == 0) send_ready();
  }
};

namespace {

// Runs after a parameter's AccumulateGrad node: its .grad now holds this backward's contribution.
class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(std::weak_ptr<GradientSync::State> state, size_t param) : state_(std::move(state)), param_(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    if (auto state = state_.lock()) state->gradient_ready(param_);
    return outputs;
  }

 private:
  std::weak_ptr<GradientSync::State> state_;
  size_t param_;
};

}  // namespace

GradientSync::GradientSync(const std::vector<torch::Tensor>& parameters, Communicator& communicator,
                           int64_t bucket_bytes, int64_t first_bucket_bytes)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.communicator = &communicator;
  std::unordered_set<const void*> seen;
  for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {  // the backward meets the last ones first
    if (it->requires_grad() && seen.insert(it->unsafeGetTensorImpl()).second) s.params.push_back(*it);
  }
  int64_t bucket_used = 0;
  for (size_t i = 0; i < s.params.size(); ++i) {
    const auto& p = s.params[i];
    const int64_t bytes = p.numel() * int64_t(p.element_size());
    const int64_t cap = s.buckets.size() <= 1 ? first_bucket_bytes : bucket_bytes;
    const bool fits = !s.buckets.empty() && bucket_used + bytes <= cap &&
                      s.params[s.buckets.back().members.front()].scalar_type() == p.scalar_type();
    if (!fits) {
      s.buckets.emplace_back();
      bucket_used = 0;
    }
    s.bucket_of.push_back(s.buckets.size() - 1);
    s.offset_of.push_back(bucket_used / int64_t(p.element_size()));
    s.buckets.back().members.push_back(i);
    bucket_used += bytes;
  }
  for (auto& bucket : s.buckets) {
    int64_t numel = 0;
    for (size_t i : bucket.members) numel += s.params[i].numel();
    const auto& first = s.params[bucket.members.front()];
    bucket.flat = torch::empty({numel}, first.options().device(communicator.device()).requires_grad(false));
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(s.params[i]);
    accumulator->add_post_hook(std::make_unique<ReadyHook>(state_, i));
    s.accumulators.push_back(std::move(accumulator));
  }
}

GradientSync::~GradientSync() = default;

int64_t GradientSync::bucket_count() const { return int64_t(state_->buckets.size()); }

void GradientSync::prepare(bool send) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->sending = send;
  if (!send) return;
  for (auto& bucket : state_->buckets) {
    bucket.pending = int64_t(bucket.members.size());
    bucket.wait = nullptr;
  }
  state_->next_to_send = 0;
}

void GradientSync::finish() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.sending) return;
    // Parameters the graph did not reach (on this rank) count as ready with a zero gradient.
    for (auto& bucket : s.buckets) bucket.pending = 0;
    s.send_ready();
    s.sending = false;
  }
  torch::NoGradGuard no_grad;
  for (auto& bucket : s.buckets) {
    bucket.wait();
    for (size_t i : bucket.members) {
      auto& p = s.params[i];
      auto summed = bucket.flat.narrow(0, s.offset_of[i], p.numel()).view(p.sizes());  // as p's shape
      // A parameter the graph did not reach keeps no gradient, so AdamW leaves it alone as in one process (the
      // ranks run the same graph; were it otherwise, the replica check at the next evaluation would say so).
      if (p.grad().defined()) p.mutable_grad().copy_(summed);
    }
  }
}

}  // namespace lmzoo
