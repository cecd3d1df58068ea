// c10d process groups behind the Communicator interface: a TCPStore (prefixed per run attempt), then
// ProcessGroupGloo or ProcessGroupNCCL; their errors become one line that names the rank.
#include "lmzoo_build_config.h"
#if LMZOO_WITH_GLOO
#define USE_C10D_GLOO 1
#endif
#if LMZOO_WITH_NCCL
#define USE_C10D_NCCL 1
#endif

#include "train/distributed/communicator.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if LMZOO_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if LMZOO_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace lmzoo {

namespace {

std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

// For its scope, file descriptor 2 goes to /dev/null: c10d and glog log their retries while the ranks meet
// ("Logging before InitGoogleLogging()", socket.cpp's connect warnings), and lmzoo reports the outcome itself
// in one line.
class MutedStderr {
 public:
  MutedStderr() : saved_(::dup(STDERR_FILENO)) {
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && null >= 0) ::dup2(null, STDERR_FILENO);
    if (null >= 0) ::close(null);
  }
  ~MutedStderr() {
    if (saved_ < 0) return;
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  MutedStderr(const MutedStderr&) = delete;
  MutedStderr& operator=(const MutedStderr&) = delete;

 private:
  const int saved_;
};

std::string what_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return first_line(c10_error->what_without_backtrace());
  return first_line(e.what());
}

c10d::ReduceOp to_c10d(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum: return c10d::ReduceOp::SUM;
    case ReduceKind::kMin: return c10d::ReduceOp::MIN;
    case ReduceKind::kMax: return c10d::ReduceOp::MAX;
  }
  return c10d::ReduceOp::SUM;
}

// PyTorch 2.x's ProcessGroupNCCL warns when it is destroyed without shutdown() ("destroy_process_group() was not
// called before program exit"), as Python's destroy_process_group() would call it: a group that has shutdown() is
// shut down before it goes. LibTorch 1.13's groups have none (no-op); one that throws is being left anyway.
template <typename Group>
auto shut_down(Group& group, int) -> decltype(group.shutdown(), void()) {
  try {
    group.shutdown();
  } catch (const std::exception&) {
  }
}
template <typename Group>
void shut_down(Group&, long) {}

// One c10d backend (ProcessGroupGloo or ProcessGroupNCCL: the same collective API on LibTorch 1.13 and 2.x).
template <typename Group>
class C10dCommunicator : public Communicator {
 public:
  C10dCommunicator(int rank, int world_size, std::string name, torch::Device device,
                   c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group)
      : Communicator(rank, world_size),
        name_(std::move(name)),
        device_(device),
        store_(std::move(store)),
        group_(std::move(group)) {}
  ~C10dCommunicator() override { shut_down(*group_, 0); }
  std::string backend_name() const override { return name_; }
  torch::Device device() const override { return device_; }

  std::function<void()> start_allreduce(torch::Tensor tensor, ReduceKind kind) override {
    try {
      std::vector<at::Tensor> tensors{tensor};
      c10d::AllreduceOptions options;
      options.reduceOp = to_c10d(kind);
      auto work = group_->allreduce(tensors, options);
      return [this, work, tensor]() {
        try {
          work->wait();
        } catch (const std::exception& e) {
          fail(e);
        }
      };
    } catch (const std::exception& e) {
      fail(e);
    }
  }

  void broadcast(torch::Tensor tensor, int root) override {
    try {
      std::vector<at::Tensor> tensors{tensor};
      c10d::BroadcastOptions options;
      options.rootRank = root;
      group_->broadcast(tensors, options)->wait();
    } catch (const std::exception& e) {
      fail(e);
    }
  }

 private:
  std::string name_;
  torch::Device device_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Group> group_;
};

// The backend's process group over the store, behind the Communicator interface.
template <typename Group>
std::unique_ptr<Communicator> start_group(const DistributedEnv& env, const char* name, const torch::Device& device,
                                          const c10::intrusive_ptr<c10d::Store>& store,
                                          c10::intrusive_ptr<typename Group::Options> options) {
  auto group = c10::make_intrusive<Group>(store, env.rank, env.world_size, std::move(options));
  return std::make_unique<C10dCommunicator<Group>>(env.rank, env.world_size, name, device, store, group);
}

// LibTorch >= 2.4 serves the store with libuv by default; Debian's LibTorch 2.6 is built without it. Where the option
// exists, this turns it off (no-op on 1.13, which has only the classic server).
template <typename Options>
auto without_libuv(Options& options, int) -> decltype(options.useLibUV = false, bool()) {
  options.useLibUV = false;
  return true;
}
template <typename Options>
bool without_libuv(Options&, long) {
  return false;
}

c10::intrusive_ptr<c10d::Store> join_store(const DistributedEnv& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = uint16_t(env.master_port);
  options.isServer = env.rank == 0 && !env.agent_store;  // torchrun's agent already serves the port
  options.numWorkers = size_t(env.world_size);
  options.waitWorkers = false;  // wait_for_all_ranks waits for them, within the same deadline
  options.timeout = timeout;
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& e) {
    if (what_of(e).find("libuv") == std::string::npos || !without_libuv(options, 0)) throw;
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);  // this LibTorch has no libuv
  }
  return c10::make_intrusive<c10d::PrefixStore>("lmzoo/" + std::to_string(env.restart_count), store);
}

// Each rank checks in on the store and waits until all WORLD_SIZE have, until DEADLINE: the one wait for ranks
// that never start, so that --dist-timeout bounds it (the process group then forms at once).
void wait_for_all_ranks(c10d::Store& store, const DistributedEnv& env, std::chrono::steady_clock::time_point deadline) {
  int64_t joined = store.add("ranks_joined", 1);
  while (joined < env.world_size) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("only " + std::to_string(joined) + " of " + std::to_string(env.world_size) +
                               " ranks joined within --dist-timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    joined = store.add("ranks_joined", 0);
  }
}

#if LMZOO_WITH_GLOO
bool is_loopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "localhost" || address == "::1";
}

// GLOO_SOCKET_IFNAME (comma-separated interfaces) as in PyTorch; else loopback when the store is on this machine's
// loopback (every rank is here: no host name lookup, which warns where the name does not resolve); else the host
// name's address.
std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices(const DistributedEnv& env) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  if (const char* names = std::getenv("GLOO_SOCKET_IFNAME"); names && *names) {
    std::stringstream list(names);
    for (std::string name; std::getline(list, name, ',');) {
      if (!name.empty()) devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
    }
  }
  if (devices.empty() && is_loopback(env.master_addr)) {
    devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  }
  if (devices.empty()) devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  return devices;
}
#endif

}  // namespace

void Communicator::fail(const std::exception& e) const {
  throw std::runtime_error("rank " + std::to_string(rank_) + " of " + std::to_string(world_size_) +
                           ": lost contact with another rank, which stopped, hung or never joined (" + what_of(e) +
                           ")");
}

double Communicator::sum(double value) {
  auto t = torch::full({1}, value, torch::TensorOptions().dtype(torch::kDouble).device(device()));
  allreduce(t, ReduceKind::kSum);
  return t.item<double>();
}

bool Communicator::any(bool value) {
  auto t = torch::full({1}, int64_t(value), torch::TensorOptions().dtype(torch::kLong).device(device()));
  allreduce(t, ReduceKind::kMax);
  return t.item<int64_t>() != 0;
}

bool Communicator::all(bool value) {
  auto t = torch::full({1}, int64_t(value), torch::TensorOptions().dtype(torch::kLong).device(device()));
  allreduce(t, ReduceKind::kMin);
  return t.item<int64_t>() != 0;
}

bool nccl_available() { return LMZOO_WITH_NCCL != 0; }

std::unique_ptr<Communicator> connect_ranks(const DistributedEnv& env, const torch::Device& device,
                                            std::chrono::milliseconds timeout) {
  const std::string who = "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size);
  const MutedStderr muted;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = join_store(env, timeout);
  } catch (const std::exception& e) {
    // torchrun of PyTorch 2.4+ built without libuv (Debian 13's 2.6) cannot serve its store unless told so.
    const std::string hint = env.agent_store ? "; if torchrun reported 'use_libuv was requested', launch with "
                                               "python3 tools/torchrun.py (torchrun without libuv)" : "";
    throw std::runtime_error(who + ": could not join the store at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " (" + what_of(e) + ")" + hint);
  }
  try {
    wait_for_all_ranks(*store, env, deadline);
  } catch (const std::exception& e) {
    throw std::runtime_error(who + ": could not form the process group with the other ranks (" + what_of(e) + ")");
  }
  try {
    if (device.is_cuda()) {
#if LMZOO_WITH_NCCL
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      return start_group<c10d::ProcessGroupNCCL>(env, "nccl", device, store, options);
#else
      throw std::invalid_argument("this lmzoo was built without NCCL, which training on several GPUs needs "
                                  "(build against a LibTorch with NCCL, or train with --device cpu)");
#endif
    }
#if LMZOO_WITH_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices = gloo_devices(env);
    return start_group<c10d::ProcessGroupGloo>(env, "gloo", torch::kCPU, store, options);
#else
    throw std::invalid_argument("this lmzoo was built without Gloo, which training on several CPU processes "
                                "needs (install libgloo-dev and rebuild)");
#endif
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(who + ": could not form the process group with the other ranks (" + what_of(e) + ")");
  }
}

}  // namespace lmzoo
