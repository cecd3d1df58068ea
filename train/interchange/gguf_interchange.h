// GGUF files in and out (llama.cpp's format): export a decoder checkpoint (a LoRA run's adapters merged) as one
// .gguf llama.cpp runs, and import a .gguf of llama.cpp's llama / qwen2 / gpt2 / gptneox architectures as an lmzoo
// checkpoint, through the Hugging Face tables (train/interchange/hf_interchange.h). Leaves out: bytes and names
// (data/gguf/, models/gguf_architecture.h).
#pragma once
#include <string>

#include "data/gguf/gguf_format.h"
#include "data/gguf/gguf_tokenizer.h"
#include "models/gguf_architecture.h"
#include "train/checkpoint/checkpoint.h"

namespace lmzoo {

struct GgufExportResult {
  GgufArch architecture = GgufArch::kLlama;
  GgufTokenizerSummary tokenizer;
  int64_t tensors = 0;
  int64_t quantized = 0;  // tensors stored as the requested type (the rest f32, or f16 for odd q8_0 rows)
};

// Writes CHECKPOINT as the GGUF file OUT (replaced atomically: a failure leaves OUT as it was) with its matrices as
// TYPE. Throws std::invalid_argument, before writing anything, naming what GGUF or llama.cpp cannot express (BERT,
// T5, ALiBi, post-norm, a unigram tokenizer...).
GgufExportResult export_gguf_model(const CheckpointInfo& checkpoint, const std::string& out, GgufTensorType type);

struct GgufImportResult {
  GgufArch architecture = GgufArch::kLlama;
  ModelConfig config;
  int64_t tensors = 0;
};

// Reads the GGUF file PATH (validated whole first: GgufFormatError for a damaged one) and writes the checkpoint
// directory OUT_DIR, as import_hf_model does (nothing written on failure).
GgufImportResult import_gguf_model(const std::string& path, const std::string& out_dir);

}  // namespace lmzoo
