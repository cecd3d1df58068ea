// Session: a checkpoint's configs, tokenizer and device, and its model built on first use.
#include "train/run/session.h"

#include <stdexcept>

#include "train/device/device.h"
#include "train/device/device_peak.h"

namespace lmzoo {

void require_inference_fits(const ModelConfig& model, const Workload& workload, const torch::Device& device,
                            const std::string& what) {
  require_fits(estimate_memory(model, workload), device_memory_capacity_bytes(device), what,
               device.is_cuda() ? device.str() : "this machine");
}

Session::Session(CheckpointInfo info, Tokenizer tokenizer, torch::Device device)
    : info_(std::move(info)), tokenizer_(std::move(tokenizer)), device_(device) {}

Session Session::open(const std::string& path, const std::string& device) {
  configure_cpu_threads(0);  // OpenBLAS's pool follows LibTorch's count, as under the CLI's --threads
  CheckpointInfo info = open_checkpoint(path);
  Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
  return Session(std::move(info), std::move(tokenizer), resolve_device(device));
}

AnyModel& Session::model() {
  if (!model_) {
    model_.emplace(load_model(info_, device_));
    model_->module()->eval();
  }
  return *model_;
}

}  // namespace lmzoo
