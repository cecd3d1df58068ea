// CudaGraph over at::cuda::CUDAGraph (CUDA builds on LibTorch >= 2.2; elsewhere it reports why it cannot record).
#include "train/device/cuda_graph.h"

#include <stdexcept>

#include "lmzoo_build_config.h"
#include "models/torch_compat.h"

#define LMZOO_HAS_CUDA_GRAPHS (LMZOO_WITH_CUDA && LMZOO_TORCH_AT_LEAST(2, 2))
#if LMZOO_HAS_CUDA_GRAPHS
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lmzoo {

#if LMZOO_HAS_CUDA_GRAPHS
namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

struct CudaGraph::Impl {
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // made when recording: its constructor asks for the current stream
  bool recorded = false;
};
#else
struct CudaGraph::Impl {
  bool recorded = false;
};
#endif

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) {}
CudaGraph::~CudaGraph() = default;

std::string CudaGraph::unavailable_reason(const torch::Device& device) {
  if (!device.is_cuda()) return "the device is " + device.str() + ", not a CUDA GPU";
#if LMZOO_HAS_CUDA_GRAPHS
  return "";
#else
  return "this lmzoo was built against a LibTorch without CUDA graphs (CUDA and LibTorch 2.2 or later)";
#endif
}

bool CudaGraph::recorded() const { return impl_->recorded; }

#if LMZOO_HAS_CUDA_GRAPHS
std::string CudaGraph::record(const std::function<void()>& work) {
  impl_ = std::make_unique<Impl>();
  // Recording needs a stream of its own; it starts after what the caller's stream has queued, and the caller's
  // stream continues after it.
  const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAEvent before, after;
  before.record(caller);
  before.block(side);
  std::string error;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    // Autocast's cache of cast weights would keep tensors made during recording alive past it.
    const bool autocast_cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    try {
      impl_->graph = std::make_unique<at::cuda::CUDAGraph>();
      impl_->graph->capture_begin();
      try {
        work();
      } catch (const std::exception& e) {
        error = first_line(e.what());
      }
      impl_->graph->capture_end();  // ends the stream's capture mode even when `work` failed
    } catch (const std::exception& e) {
      if (error.empty()) error = first_line(e.what());
    }
    at::autocast::set_autocast_cache_enabled(autocast_cache);
  }
  after.record(side);
  after.block(caller);
  if (!error.empty()) {
    impl_ = std::make_unique<Impl>();  // the partial graph and its memory pool go
    (void)cudaGetLastError();          // a refused capture leaves its error code behind
    return error;
  }
  impl_->recorded = true;
  return "";
}

void CudaGraph::replay() {
  if (!impl_->recorded) throw std::logic_error("CudaGraph::replay before a successful record");
  impl_->graph->replay();
}
#else
std::string CudaGraph::record(const std::function<void()>&) {
  return unavailable_reason(torch::Device(torch::kCUDA, 0));
}

void CudaGraph::replay() { throw std::logic_error("CudaGraph::replay in a build without CUDA graphs"); }
#endif

}  // namespace lmzoo
