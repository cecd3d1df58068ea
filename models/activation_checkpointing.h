// Activation checkpointing: a block's forward run without keeping its activations and recomputed in the backward
// (the same RNG state and autocast settings, so dropout masks and kernels match), and which blocks a policy covers.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace lmzoo {

// Which blocks are checkpointed: every 0 (none), 1 (every block) or N (blocks 0, N, 2N, ...).
struct CheckpointPolicy {
  int64_t every = 0;
  bool covers(int64_t block) const { return every > 0 && block % every == 0; }
};

// "none", "blocks" or "every-N" (N >= 1); throws std::invalid_argument with one line otherwise.
CheckpointPolicy parse_checkpoint_policy(const std::string& text);

using BlockFunction = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// block(inputs), keeping only `inputs` for the backward, which reruns block under the RNG state and autocast
// settings of this forward and backpropagates through the rerun: parameter gradients accumulate (their hooks firing
// once per parameter, as without checkpointing) and the inputs' gradients flow on. inputs: the defined tensors that
// may need gradients (the hidden state, a position bias computed from parameters, the encoder output); masks belong
// in block's closure. parameters: the block's own, consulted only for requires_grad, so a block whose inputs need no
// gradient (frozen embeddings under LoRA) still trains its parameters. Without grad mode, or when neither the
// inputs nor the parameters need gradients, block is simply called.
torch::Tensor checkpointed(const BlockFunction& block, const std::vector<torch::Tensor>& inputs,
                           const std::vector<torch::Tensor>& parameters);

}  // namespace lmzoo
