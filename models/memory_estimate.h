// The one memory estimate of a model at work (training, or inference: eval, generate, export, import), by part,
// and the refusal of what cannot fit. Leaves out: measuring memory (train/device/device_peak.h) and the device's size.
//
// Invariants of MemoryEstimate:
// - parameters is exact: parameter_count(config) (a tied head counts once), what the built module holds.
//   trainable: the parameters that get gradients and AdamW moments: all of them, or under LoRA the adapters
//   (rank x (in + out) per adapted projection), the base parameters --trainable names and a classifier's head.
// - Every figure is in bytes, as a double: products of sizes never wrap (a config past the formats' ranges is
//   refused by ModelConfig::validate() before any estimate), and each part is >= 0 and finite.
// - weights = 4 bytes per parameter (fp32 storage; bf16 autocast keeps fp32 weights and only lowers activations,
//   so the fp32 figure bounds it), the frozen projection weights at 2 under a bf16 base and 1 under an int8 one
//   (with one projection widened to fp32 while its product runs), plus the adapters.
//   optimizer: AdamW's exp_avg and exp_avg_sq, 8 bytes per trainable parameter. Training peaks either when the
//   backward starts or when it ends (gradients are set to none before each step), and gradients and activations
//   are what is live at the larger of the two:
//   start: activations = every tensor autograd keeps for the backward, summed over all blocks (plain attention
//   with its T x S scores and probabilities materialised; lmzoo's fused CPU attention keeps the probabilities
//   only, CUDA's fused kernels neither), plus the logits and their gradient (plain ops: also the log-softmax);
//   a checkpointed block keeps only its input, and one block's full set is live again while it is recomputed
//   (after the logits are gone: the larger of the two counts); LoRA adapters keep their rank-wide middle and, with
//   dropout, the mask and the dropped input. gradients = the LM head's, where it trains (the first one made).
//   end: gradients = 4 bytes per trainable parameter, and a tied head's second (the embedding's, as it is added);
//   activations = the first block's full set. Gradients and optimizer are 0 for inference.
// - activations, inference: the largest one block's transient tensors plus the logits, as nothing is kept between blocks.
// - kv_cache: inference only: keys and values of every decoder layer for the whole context of every sequence
//   (beam), and for t5 the cross-attention keys and values of the encoder output.
// - runtime: a host process's own memory beside the tensors (with_host_runtime: LibTorch's code and data, the
//   allocator's pools), measured; 0 otherwise.
// - loading: every parameter in fp32 (4 bytes each), as the model is built or its checkpoint read, before a bf16
//   or int8 base is lowered, plus what lowering the largest projection adds (bf16: its copy; int8: its fp32
//   quotient by the scales and the int8 result); more than the sum of the parts above only under such a base.
// - total() is the peak the run's tensors reach: the sum of the parts, or loading where that is more, plus runtime
//   where it is set.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/config.h"
#include "models/lora.h"

namespace lmzoo {

struct MemoryEstimate {
  int64_t parameters = 0;
  int64_t trainable = 0;
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double kv_cache = 0;
  double runtime = 0;
  double loading = 0;

  // weights + gradients + optimizer + activations + kv_cache: what the run holds once it runs.
  double running() const { return weights + gradients + optimizer + activations + kv_cache; }
  double total() const { return std::max(running(), loading) + runtime; }
  // The parts by name in a fixed order: weights, gradients, optimizer, activations, kv cache, runtime.
  std::vector<std::pair<std::string, double>> parts() const;
  // "412.3 GB (weights 100 GB, gradients 100 GB, optimizer 200 GB, activations 12.3 GB)": the non-zero parts, and
  // the loading figure where it is the peak.
  std::string describe() const;
};

// How a training run holds its model beyond a full fine-tune: LoRA adapters on a frozen base, the base parameters
// trained beside them, the frozen projection weights' storage, and the blocks that recompute their activations
// (TrainConfig's "Fine-tuning and memory" fields, parsed by train/device/training_memory.h).
struct TrainingPlan {
  LoraSettings lora;                   // rank 0: every parameter trains
  std::vector<std::string> trainable;  // with LoRA: base parameters trained beside the adapters, by name part
  // With LoRA: bytes per frozen projection weight element: 4 (fp32), 2 (a bf16 base) or 1 (an int8 base, whose
  // per-row fp32 scales, under 0.1% of its bytes, are not counted).
  int64_t base_element_bytes = 4;
  bool low_precision_base() const { return base_element_bytes < 4; }
  int64_t checkpoint_every = 0;        // 0: none; N: blocks 0, N, 2N, ... of each stack keep only their input
  // The output layer and its cross-entropy fused in chunks of this many rows (0: not fused): no logits per token;
  // one chunk's logits, the layer's weight gradient and the hidden states' gradient instead.
  int64_t fused_loss_chunk_rows = 0;
};

enum class MemoryUse { kTraining, kInference };

// What the model is run on: SEQUENCES rows (a batch, or beams), each a forward pass over LENGTH tokens at once
// (t5: the decoder's), CACHED positions held in the KV cache per row (inference: the context a generation grows
// to; 0: none), and for t5 ENCODER_LENGTH encoder tokens per row.
// FUSED_CPU_KERNELS: the run is on a CPU where lmzoo's AVX2 kernels run (kernels::avx2_enabled()): causal
// self-attention keeps one score map per head, and the cross-entropy no log-softmax. PLAN: training only.
struct Workload {
  MemoryUse use = MemoryUse::kTraining;
  int64_t sequences = 1;
  int64_t length = 1;
  int64_t cached = 0;
  int64_t encoder_length = 0;
  bool fused_cpu_kernels = false;
  TrainingPlan plan;
};

// Bytes per stored element: every tensor counted here is fp32.
constexpr double kBytesPerElement = 4.0;

// A training micro-batch of BATCH rows at the config's context (t5: max_seq_len tokens on both sides, the most
// any objective feeds it).
Workload training_workload(const ModelConfig& config, int64_t batch);

// Blocks of a stack of LAYERS that keep only their input under checkpointing every EVERY-th block (0: none).
int64_t checkpointed_blocks(int64_t layers, int64_t every);

// Training activations in fp32 elements (the whole batch) at the two moments a step peaks: when the backward starts
// (every kept tensor, the logits with their gradient; with checkpointing, one block's recompute where it is more
// than the logits) and when it ends (the first block's full set). WORKLOAD.use must be kTraining.
struct TrainingActivations {
  double at_start = 0;
  double at_end = 0;
};
TrainingActivations training_activations(const ModelConfig& config, const Workload& workload);

// The estimate for CONFIG (validated) at WORKLOAD.
MemoryEstimate estimate_memory(const ModelConfig& config, const Workload& workload);
// The weights alone (what building the module allocates).
MemoryEstimate estimate_weights(const ModelConfig& config);

// What a host process holds beside its tensors (LibTorch's and OpenBLAS's code and data, thread pools, the
// allocator), measured with Debian 12's LibTorch 1.13 on x86-64: lmzoo bench on gpt-nano over 99 random ids at
// batch 1 peaks at 197.7 MB of RSS, of which its estimated tensors are 15.4 MB (lmzoo presets alone: 166 MB).
// docs/benchmarks.md, "Memory: fine-tuning on one machine".
constexpr double kHostRuntimeBytes = 182e6;

// ESTIMATE with runtime = kHostRuntimeBytes: the peak resident memory of a process on the CPU.
MemoryEstimate with_host_runtime(MemoryEstimate estimate);

// 1234567890 -> "1.2 GB" (decimal units: kB, MB, GB, TB, PB).
std::string format_bytes(double bytes);

// This machine's physical memory in bytes (sysconf).
double host_memory_bytes();

// Throws std::runtime_error "WHAT needs about X (parts) but WHERE has Y" when the estimate exceeds AVAILABLE bytes.
void require_fits(const MemoryEstimate& estimate, double available, const std::string& what, const std::string& where);

// require_fits against this machine's physical memory.
void require_fits_in_host(const MemoryEstimate& estimate, const std::string& what);

}  // namespace lmzoo
