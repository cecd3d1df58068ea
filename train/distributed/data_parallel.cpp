// Rank agreement, settings check, weight broadcast and replica digests over a Communicator.
#include "train/distributed/data_parallel.h"

#include <exception>
#include <stdexcept>

namespace lmzoo {

void on_ranks_agreeing(Communicator* comm, bool here, const std::function<void()>& work, const std::string& what) {
  std::exception_ptr error;
  if (here) {
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (comm && !comm->all(!error) && !error) {
    throw std::runtime_error("rank " + std::to_string(comm->rank()) + " stopped: another rank could not " + what +
                             " (its own message says why)");
  }
  if (error) std::rethrow_exception(error);
}

void require_same_settings(Communicator& comm, const std::string& settings) {
  // FNV-1a over the bytes, 63 bits (the reductions are on signed integers).
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : settings) hash = (hash ^ c) * 1099511628211ull;
  auto mine = torch::full({1}, int64_t(hash >> 1), torch::TensorOptions().dtype(torch::kLong).device(comm.device()));
  auto rank0 = mine.clone();
  comm.broadcast(rank0, 0);
  const bool same = torch::equal(mine.cpu(), rank0.cpu());
  if (comm.all(same)) return;
  if (!same) {
    throw std::invalid_argument("rank " + std::to_string(comm.rank()) + " was started with settings other than "
                                "rank 0's: every rank must run the same lmzoo train command line");
  }
  throw std::invalid_argument("rank " + std::to_string(comm.rank()) + " stopped: another rank was started with "
                              "other settings (every rank must run the same lmzoo train command line)");
}

void broadcast_module(torch::nn::Module& module, Communicator& comm) {
  torch::NoGradGuard no_grad;
  auto send = [&](torch::Tensor& t) {
    if (!t.defined()) return;
    auto staged = t.to(comm.device()).contiguous();  // a copy when the tensor lives elsewhere or is strided
    comm.broadcast(staged, 0);
    if (!staged.is_same(t)) t.copy_(staged);
  };
  for (auto& p : module.parameters()) send(p);
  for (auto& b : module.buffers()) send(b);
}

int64_t parameter_bits_digest(const torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  // Each tensor's bits as integers, weighted by position so that moved values count: wrapping int64 sums are
  // exact and independent of the order of summation.
  uint64_t digest = 0, index = 1;
  for (const auto& p : module.parameters()) {
    auto flat = p.detach().reshape(-1);
    const auto int_type = flat.element_size() == 4   ? torch::kInt32
                          : flat.element_size() == 2 ? torch::kInt16
                          : flat.element_size() == 1 ? torch::kChar
                                                     : torch::kInt64;
    auto bits = flat.contiguous().view(int_type).to(torch::kLong);
    auto weights = torch::arange(1, bits.numel() + 1, bits.options());
    digest += index++ * uint64_t((bits * weights).sum().item<int64_t>());
  }
  return int64_t(digest);
}

void require_identical_replicas(const torch::nn::Module& module, Communicator& comm, int64_t step) {
  const int64_t digest = parameter_bits_digest(module);
  auto low = torch::full({1}, digest, torch::TensorOptions().dtype(torch::kLong).device(comm.device()));
  auto high = low.clone();
  comm.allreduce(low, ReduceKind::kMin);
  comm.allreduce(high, ReduceKind::kMax);
  if (low.item<int64_t>() != high.item<int64_t>()) {
    throw std::runtime_error("rank " + std::to_string(comm.rank()) + ": the ranks' weights differ at step " +
                             std::to_string(step) + " (they must stay identical; a rank's hardware or build "
                             "differs, or a bug: please report it)");
  }
}

}  // namespace lmzoo
