// llama.cpp's decoder architectures as GGUF names them (llama, qwen2, gpt2, gptneox): which lmzoo models map onto
// each (Mistral writes as llama, as llama.cpp's converter does), their hyper-parameter keys, and the tensor names
// and layouts both ways between Hugging Face's tensors and llama.cpp's (Llama's q/k rows permuted from rotate-half
// to interleaved pairs, GPT-2's Conv1D transposed, GPT-NeoX's per-head q/k/v regrouped). Leaves out: bytes
// (data/gguf/), checkpoints (train/interchange/gguf_interchange.h).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/gguf/gguf_reader.h"
#include "data/gguf/gguf_writer.h"
#include "models/hf_config.h"

namespace lmzoo {

enum class GgufArch { kLlama, kQwen2, kGpt2, kGptNeoX };

template <>
struct EnumTable<GgufArch> {
  static constexpr const char* what = "GGUF architecture";
  static constexpr EnumEntry<GgufArch> entries[] = {
      {GgufArch::kLlama, "llama", "Llama, SmolLM2, TinyLlama, Mistral (rotary pairs interleaved)"},
      {GgufArch::kQwen2, "qwen2", "Qwen2 / Qwen2.5 (q/k/v biases, rotate-half rotary)"},
      {GgufArch::kGpt2, "gpt2", "GPT-2 (learned positions, LayerNorm, GELU)"},
      {GgufArch::kGptNeoX, "gptneox", "GPT-NeoX / Pythia (partial rotary, parallel residual)"},
  };
};

// The GGUF architecture of a model whose Hugging Face class is HF; throws std::invalid_argument naming what llama.cpp
// cannot compute (a sliding window shorter than the context, an activation llama.cpp's graph does not use).
GgufArch gguf_arch_of(HfArchitecture hf, const ModelConfig& config);

// The {arch}.* hyper-parameter keys llama.cpp reads.
void add_gguf_hparams(GgufWriter& writer, GgufArch arch, const ModelConfig& config);

// The GGUF tensors of a model's Hugging Face tensors (canonical names, as hf_tensors_from_model gives them), in
// llama.cpp's names and layouts; a tied model also gets output.weight where llama.cpp's graph requires it.
std::vector<std::pair<std::string, torch::Tensor>> gguf_tensors_from_hf(
    GgufArch arch, const ModelConfig& config, const std::vector<std::pair<std::string, torch::Tensor>>& hf);

// The type a tensor is stored as when the file's matrices are TYPE, as llama.cpp's converter chooses: 1-D tensors,
// norms and position embeddings f32; q8_0 rows that are not a multiple of 32 f16.
GgufTensorType gguf_storage_type(const std::string& name, const torch::Tensor& t, GgufTensorType type);

// Import: FILE's architecture (refused by name when not one of the four), the Hugging Face config.json that
// transformers would build the same model from, and its tensors under Hugging Face's names.
GgufArch gguf_arch_of_file(const GgufFile& file);
nlohmann::json hf_config_from_gguf(const GgufFile& file, GgufArch arch);
std::vector<std::pair<std::string, torch::Tensor>> hf_tensors_from_gguf(const GgufFile& file, GgufArch arch,
                                                                        const nlohmann::json& hf_config);

}  // namespace lmzoo
