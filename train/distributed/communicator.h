// The ranks of one run as a c10d process group (Gloo on the CPU, NCCL on CUDA) joined through a TCPStore: the
// few collectives the trainer uses. Leaves out: which gradients to send when (gradient_sync.h).
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "train/distributed/distributed_env.h"

namespace lmzoo {

enum class ReduceKind { kSum, kMin, kMax };

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // "gloo" or "nccl".
  virtual std::string backend_name() const = 0;
  // Where the tensors given to the collectives live: the CPU (gloo) or this rank's GPU (nccl).
  virtual torch::Device device() const = 0;
  // Starts reducing `tensor` in place over all ranks. The returned function waits for it: on the host (gloo), or by
  // ordering the current CUDA stream after it (nccl). A rank that died or hung makes it throw one line.
  virtual std::function<void()> start_allreduce(torch::Tensor tensor, ReduceKind kind) = 0;
  void allreduce(torch::Tensor tensor, ReduceKind kind) { start_allreduce(std::move(tensor), kind)(); }
  // Copies rank `root`'s tensor into every rank's.
  virtual void broadcast(torch::Tensor tensor, int root) = 0;

  // Host conveniences (each one collective that waits).
  double sum(double value);
  bool any(bool value);  // true on every rank when it is true on one
  bool all(bool value);  // true on every rank when it is true on all

 protected:
  Communicator(int rank, int world_size) : rank_(rank), world_size_(world_size) {}
  // Turns a c10d/gloo/nccl failure into one line that names this rank.
  [[noreturn]] void fail(const std::exception& e) const;

 private:
  int rank_, world_size_;
};

// Joins the group described by `env`: rank 0 serves the TCPStore on MASTER_ADDR:MASTER_PORT (or, under torchrun,
// every rank joins its agent's store), then Gloo (device CPU) or NCCL (a CUDA device). `timeout` bounds joining
// and every collective. Throws one line when a rank does not join in time or the backend is missing.
std::unique_ptr<Communicator> connect_ranks(const DistributedEnv& env, const torch::Device& device,
                                            std::chrono::milliseconds timeout);

// Whether this build can drive CUDA ranks (NCCL found at build time).
bool nccl_available();

}  // namespace lmzoo
