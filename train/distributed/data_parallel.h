// What keeps the ranks of a data-parallel run in step: identical starting weights, the same settings, checks that
// the replicas stay identical, and steps that succeed on all ranks or fail on all with one line each.
#pragma once
#include <functional>
#include <string>

#include <torch/torch.h>

#include "train/distributed/communicator.h"

namespace lmzoo {

// Runs `work` on this rank when `here` is true, then agrees with the other ranks (comm may be null: one
// process) that it succeeded everywhere. A rank whose work threw rethrows its own error; the others throw one
// line saying that another rank could not `what`.
void on_ranks_agreeing(Communicator* comm, bool here, const std::function<void()>& work, const std::string& what);

// Throws std::invalid_argument on every rank unless every rank passed the same `settings` (a canonical
// dump of the run's configuration): the rank that differs is told which rank it differs from.
void require_same_settings(Communicator& comm, const std::string& settings);

// Copies rank 0's parameters and buffers to every rank (as DDP does when it wraps a model).
void broadcast_module(torch::nn::Module& module, Communicator& comm);

// A digest of the parameters' exact bits, independent of summation order.
int64_t parameter_bits_digest(const torch::nn::Module& module);

// Throws on every rank when the ranks' parameters are no longer bit-identical (checked at evaluations).
void require_identical_replicas(const torch::nn::Module& module, Communicator& comm, int64_t step);

}  // namespace lmzoo
