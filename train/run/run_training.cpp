// Setting up and running a training run on every rank: request, checks, device, run directory, cleanup.
#include "train/run/run_training.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "train/checkpoint/run_directory.h"
#include "train/device/device.h"
#include "train/distributed/data_parallel.h"
#include "train/run/resume_setup.h"
#include "train/run/run_device.h"

namespace lmzoo {

namespace {

// train_model; when REMOVE_IF_UNUSED (rank 0 of a run whose directory it made), a run directory the failed run
// never logged or saved anything to is removed.
TrainResult train_cleaning_up(const TrainRequest& request, const torch::Device& device, bool remove_if_unused) {
  try {
    return train_model(request, device);
  } catch (...) {
    if (remove_if_unused) remove_unused_run_dir(request.train.out_dir);
    throw;
  }
}

}  // namespace

std::string run_settings(const TrainRequest& request) {
  return nlohmann::json({{"model", request.model}, {"train", request.train},
                         {"tokenizer_bytes", request.tokenizer_model.size()},
                         {"tokenizer_digest", std::hash<std::string>()(request.tokenizer_model)}})
      .dump();
}

TrainResult run_training(const RunPlan& plan, Communicator* ranks) {
  const bool lead = !ranks || ranks->rank() == 0;  // rank 0 owns the run directory
  // OpenBLAS keeps a thread pool of its own (by default one thread per core), whose count decides how its GEMMs
  // split and so the bits of their sums: it follows LibTorch's count here, as under lmzoo train --threads, so a
  // program that calls the library trains to the same bits as the CLI with the same thread count.
  configure_cpu_threads(0);
  const bool resuming = !plan.resume_dir.empty();
  std::unique_ptr<RunLock> run_lock;  // one live run per run directory
  if (resuming) {
    on_ranks_agreeing(ranks, lead, [&] { run_lock = take_run_dir(plan.resume_dir, RunDirUse::kResume); },
                      "open the run " + plan.resume_dir);
  }
  TrainRequest request;
  on_ranks_agreeing(ranks, true, [&] { request = plan.build_request(); }, "set up the run");
  torch::Device device(torch::kCPU);
  on_ranks_agreeing(ranks, true, [&] {
    request.train.validate();
    device = training_device(request.train, ranks);  // a bad device, or fp16 off CUDA, before the directory is made
  }, "set up the run");
  if (ranks) require_same_settings(*ranks, run_settings(request));
  const std::string run_dir = request.train.out_dir;
  const bool new_run_dir = !std::filesystem::exists(run_dir);
  if (!resuming) {
    on_ranks_agreeing(ranks, lead, [&] { run_lock = take_run_dir(run_dir, RunDirUse::kNewRun); },
                      "take the run directory " + run_dir);
  }
  request.ranks = ranks;
  return train_cleaning_up(request, device, lead && new_run_dir);
}

TrainResult train_new_run(const RunSpec& spec, const TrainCallbacks& callbacks) {
  return run_training({"", [&] {
                         TrainRequest request = new_run_request(spec);
                         request.callbacks = callbacks;
                         return request;
                       }});
}

TrainResult resume_run(const std::string& run_dir, const std::function<void(TrainConfig&)>& change,
                       const TrainCallbacks& callbacks) {
  return run_training({run_dir, [&] {
                         const CheckpointInfo run = stored_run(run_dir);
                         TrainConfig asked = run.train;
                         change(asked);
                         TrainRequest request = resume_request(run, asked);
                         request.callbacks = callbacks;
                         return request;
                       }});
}

}  // namespace lmzoo
