// Hugging Face PEFT LoRA files (adapter_config.json + adapter_model.safetensors) onto an lmzoo checkpoint of their
// base model: a LoRA checkpoint (adapter.safetensors, the base named with its digest) that eval, generate,
// merge-lora and export read. Leaves out: writing PEFT files (train/peft/peft_export.h).
#pragma once
#include <string>

#include "models/hf_config.h"

namespace lmzoo {

struct PeftImportResult {
  HfArchitecture architecture;
  int64_t rank = 0;
  double alpha = 0;
  int64_t modules = 0;  // HF modules the file adapts
};

// Reads the PEFT adapter in ADAPTER_DIR, maps each base_model.model.<module>.lora_A/B onto the lmzoo projection
// (and part) the base checkpoint BASE's Hugging Face class names <module>, and writes the LoRA checkpoint OUT_DIR
// (which must not exist). A module HF fuses (GPT-2's c_attn) gives each of lmzoo's parts the shared A and its
// rows of B, the same product. use_rslora (scale alpha / sqrt(r)) is kept as lora_alpha = alpha sqrt(r). Throws
// HfConfigError naming adapter_config.json and the field for a file that is not a JSON object, a field of the
// wrong JSON type or outside train's range (r 1..65536, lora_alpha in (0, 1048576], also after the rslora
// rescaling; lora_dropout in [0, 1)), and settings lmzoo does not implement (DoRA, rank or alpha patterns, trained
// biases, modules_to_save); HfFormatError naming adapter_model.safetensors for a tensor that names no projection,
// has the wrong shape, is not floating point or holds NaN / Inf.
PeftImportResult import_peft_adapter(const std::string& adapter_dir, const std::string& base, const std::string& out_dir);

}  // namespace lmzoo
