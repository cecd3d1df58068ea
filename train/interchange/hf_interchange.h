// Hugging Face model directories in and out: import (config.json + safetensors + tokenizer files -> an lmzoo
// checkpoint) and export (an lmzoo checkpoint -> a directory transformers' from_pretrained loads).
// Leaves out: the name and config tables (models/hf_weights.h, models/hf_config.h).
#pragma once
#include <string>
#include <vector>

#include "models/hf_weights.h"
#include "train/checkpoint/checkpoint.h"

namespace lmzoo {

struct HfImportResult {
  std::string checkpoint_dir;
  HfArchitecture architecture;
  ModelConfig config;
  HfImportReport report;
  std::vector<std::string> notes;  // settings read loosely (hf_config.h)
  int64_t tokenizer_size = 0;
};

// Reads HF_DIR (config.json, model.safetensors or a sharded index) and the tokenizer in TOKENIZER_DIR (empty:
// HF_DIR) and writes the checkpoint directory OUT_DIR (weights only, step 0), replacing an lmzoo checkpoint there
// but nothing else. Parameters the HF class lacks keep a seeded initialisation. Throws one line on any fault.
HfImportResult import_hf_model(const std::string& hf_dir, const std::string& out_dir,
                               const std::string& tokenizer_dir = "");

struct HfExportResult {
  HfArchitecture architecture;
  std::vector<std::string> files;  // written into the output directory
};

// Writes OUT_DIR/config.json, OUT_DIR/model.safetensors and the tokenizer's files, each replaced atomically.
// Throws HfFormatError, before writing anything, when the model has no Hugging Face twin.
HfExportResult export_hf_model(const CheckpointInfo& checkpoint, const std::string& out_dir);

}  // namespace lmzoo
