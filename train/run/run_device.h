// The device a training run trains on, resolved once per process: the run's setting (auto|cpu|cuda[:N]), or under
// torchrun the rank's own (cuda:LOCAL_RANK, or the CPU), with fp16 refused off CUDA. Leaves out autocast and CPU
// threads (device.h) and the collectives (communicator.h).
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "train/distributed/communicator.h"
#include "train/distributed/distributed_env.h"
#include "train/train_config.h"

namespace lmzoo {

// Where a run with settings TRAIN trains: the ranks' device when there are ranks (join_launched_ranks resolved
// it), else TRAIN.device resolved. Throws std::invalid_argument for fp16 off CUDA, and resolve_device's errors.
torch::Device training_device(const TrainConfig& train, const Communicator* ranks);

// This rank of the group ENV describes (torchrun's) joins the others on its device, DEVICE_SETTING resolved: gloo on
// the CPU; nccl on cuda:LOCAL_RANK, so a setting that names a CUDA index is refused. TIMEOUT bounds joining and
// every collective.
std::unique_ptr<Communicator> join_ranks(const DistributedEnv& env, const std::string& device_setting,
                                         std::chrono::milliseconds timeout);

}  // namespace lmzoo
