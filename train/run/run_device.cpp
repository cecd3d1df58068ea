// The training device: one resolution per process, the fp16 check, and a launched rank's device and group.
#include "train/run/run_device.h"

#include <stdexcept>

#include "train/device/device.h"

namespace lmzoo {

torch::Device training_device(const TrainConfig& train, const Communicator* ranks) {
  const torch::Device device = ranks ? ranks->device() : resolve_device(train.device);
  if (!device.is_cuda() && train.precision == Precision::kFp16) {
    throw std::invalid_argument("--precision fp16 needs a CUDA device (on the CPU use bf16)");
  }
  return device;
}

std::unique_ptr<Communicator> join_ranks(const DistributedEnv& env, const std::string& device_setting,
                                         std::chrono::milliseconds timeout) {
  torch::Device device = resolve_device(device_setting);
  if (device.is_cuda()) {
    if (device_setting.find(':') != std::string::npos) {
      throw std::invalid_argument("--device " + device_setting + ": under torchrun each rank trains on "
                                  "cuda:LOCAL_RANK; pass --device cuda (or auto)");
    }
    device = torch::Device(torch::kCUDA, int8_t(env.local_rank));
  } else {
    device = torch::kCPU;
  }
  return connect_ranks(env, device, timeout);
}

}  // namespace lmzoo
