// The one memory estimate of a model at work (training, or inference: eval, generate, export, import), by part,
// and the refusal of what cannot fit. Leaves out: measuring memory (train/device_peak.h) and the device's size.
//
// Invariants of MemoryEstimate:
// - parameters is exact: count_parameters(config) (a tied head counts once), what the built module holds.
// - Every figure is in bytes, as a double: products of sizes never wrap (a config past the formats' ranges is
//   refused by ModelConfig::validate() before any estimate), and each part is >= 0 and finite.
// - weights = 4 bytes per parameter (fp32 storage; bf16 autocast keeps fp32 weights and only lowers activations,
//   so the fp32 figure bounds it). gradients (4 per parameter) and optimizer (AdamW's exp_avg and exp_avg_sq,
//   8 per parameter) are 0 for inference. A LoRA run will set them from its trainable count instead.
// - activations, training: every tensor autograd keeps for the backward, summed over all blocks (plain attention
//   with its T x S scores materialised, as on the CPU; fused kernels keep less, so this is an upper bound within
//   the same order), plus the logits, their log-softmax and gradient. Inference: the largest one block's
//   transient tensors plus the logits, as nothing is kept between blocks.
// - kv_cache: inference only: keys and values of every decoder layer for the whole context of every sequence
//   (beam), and for t5 the cross-attention keys and values of the encoder output.
// - total() is the sum of the parts: the peak the run's tensors reach, before the library's own memory.
#pragma once
#include <cstdint>
#include <string>

#include "models/config.h"

namespace lmzoo {

struct MemoryEstimate {
  int64_t parameters = 0;
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double kv_cache = 0;

  double total() const { return weights + gradients + optimizer + activations + kv_cache; }
  // "412.3 GB (weights 100 GB, gradients 100 GB, optimizer 200 GB, activations 12.3 GB)": the non-zero parts.
  std::string describe() const;
};

enum class MemoryUse { kTraining, kInference };

// What the model is run on: SEQUENCES rows (a batch, or beams), each a forward pass over LENGTH tokens at once
// (t5: the decoder's), CACHED positions held in the KV cache per row (inference: the context a generation grows
// to; 0: none), and for t5 ENCODER_LENGTH encoder tokens per row.
struct Workload {
  MemoryUse use = MemoryUse::kTraining;
  int64_t sequences = 1;
  int64_t length = 1;
  int64_t cached = 0;
  int64_t encoder_length = 0;
};

// Bytes per stored element: every tensor counted here is fp32.
constexpr double kBytesPerElement = 4.0;

// A training micro-batch of BATCH rows at the config's context (t5: max_seq_len tokens on both sides, the most
// any objective feeds it).
Workload training_workload(const ModelConfig& config, int64_t batch);

// The estimate for CONFIG (validated) at WORKLOAD.
MemoryEstimate estimate_memory(const ModelConfig& config, const Workload& workload);
// The weights alone (what building the module allocates).
MemoryEstimate estimate_weights(const ModelConfig& config);

// 1234567890 -> "1.2 GB" (decimal units: kB, MB, GB, TB, PB).
std::string format_bytes(double bytes);

// This machine's physical memory in bytes (sysconf).
double host_memory_bytes();

// Throws std::runtime_error "WHAT needs about X (parts) but WHERE has Y" when the estimate exceeds AVAILABLE bytes.
void require_fits(const MemoryEstimate& estimate, double available, const std::string& what, const std::string& where);

// require_fits against this machine's physical memory.
void require_fits_in_host(const MemoryEstimate& estimate, const std::string& what);

}  // namespace lmzoo
