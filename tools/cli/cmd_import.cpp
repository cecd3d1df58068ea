// lmzoo import: a Hugging Face model directory (every HfArchitecture) as an lmzoo checkpoint, or a PEFT LoRA
// adapter onto the checkpoint of its base as a LoRA checkpoint, or a GGUF file (llama.cpp's llama / qwen2 / gpt2 /
// gptneox) as an lmzoo checkpoint.
#include <filesystem>
#include <iostream>

#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/interchange/gguf_interchange.h"
#include "train/interchange/hf_interchange.h"
#include "train/peft/peft_import.h"

namespace lmzoo::cli {

namespace {

// HF_DIR holds PEFT files: onto --lora-base, as a LoRA checkpoint.
int import_adapter(const cxxopts::ParseResult& r, bool is_adapter) {
  const std::string dir = r["hf-dir"].as<std::string>();
  if (!is_adapter) throw UsageError("--lora-base: " + dir + " has no adapter_config.json (not a PEFT adapter)");
  if (!r.count("lora-base")) {
    throw UsageError(dir + " is a PEFT adapter: name the checkpoint of its base model with --lora-base");
  }
  PeftImportResult result;
  try {
    result = import_peft_adapter(dir, r["lora-base"].as<std::string>(), r["out"].as<std::string>());
  } catch (const HfConfigError& e) {
    throw UsageError(e.what());  // a PEFT setting lmzoo does not implement: exit 2, like a bad flag
  }
  std::cout << "imported the PEFT adapter " << dir << " (" << enum_name(result.architecture) << ", rank "
            << result.rank << ", lora_alpha " << result.alpha << ", " << result.modules << " modules) onto "
            << r["lora-base"].as<std::string>() << " -> " << r["out"].as<std::string>() << std::endl;
  return 0;
}

// MODEL.gguf: validated whole, then imported through the Hugging Face tables.
int import_gguf(const cxxopts::ParseResult& r) {
  const std::string path = r["hf-dir"].as<std::string>();
  if (!r["tokenizer"].as<std::string>().empty() || r.count("lora-base")) {
    throw UsageError("--tokenizer and --lora-base do not apply to a GGUF file (it holds its tokenizer)");
  }
  const GgufImportResult result = import_gguf_model(path, r["out"].as<std::string>());
  std::cout << "imported " << path << " (GGUF " << enum_name(result.architecture) << ", " << result.tensors
            << " tensors) -> " << r["out"].as<std::string>() << "\n  " << result.config.n_layer << " layers, d_model "
            << result.config.d_model << ", vocabulary " << result.config.vocab_size << std::endl;
  return 0;
}

}  // namespace

int run_import(int argc, char** argv) {
  cxxopts::Options options("lmzoo import",
                           "Turn a Hugging Face model directory (config.json, model.safetensors or a sharded "
                           "model.safetensors.index.json, tokenizer files), or a GGUF file (MODEL.gguf: llama.cpp's " +
                               enum_choices<GgufArch>(", ") + "; f32, f16, bf16, q8_0 dequantized), into an lmzoo "
                           "checkpoint that train --init, eval, generate and export accept. A damaged GGUF file: "
                           "exit 1, nothing written. Architectures: " + enum_choices<HfArchitecture>(", ") + ".");
  options.custom_help("HF_DIR --out CHECKPOINT_DIR [--tokenizer DIR]").positional_help("");
  options.add_options()
      ("hf-dir", "the Hugging Face model directory (positional)", cxxopts::value<std::string>())
      ("out", "checkpoint directory to write (new, empty, or an lmzoo checkpoint to replace)",
       cxxopts::value<std::string>())
      ("tokenizer", "directory holding the tokenizer files, when HF_DIR has none: tokenizer.model / spiece.model, "
                    "vocab.json + merges.txt, or vocab.txt", cxxopts::value<std::string>()->default_value(""));
  options.add_options("PEFT adapters")
      ("lora-base", "HF_DIR is a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors): the lmzoo "
                    "checkpoint of its base model (e.g. lmzoo import of that model); writes a LoRA checkpoint",
       cxxopts::value<std::string>());
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r, "hf-dir")) return 0;
  if (!r.count("hf-dir")) throw UsageError("name the Hugging Face model directory, e.g. lmzoo import gpt2/ --out ckpt");
  require_option(r, "out");
  if (std::filesystem::path(r["hf-dir"].as<std::string>()).extension() == ".gguf" &&
      !std::filesystem::is_directory(r["hf-dir"].as<std::string>())) {
    return import_gguf(r);
  }
  const bool is_adapter = std::filesystem::exists(std::filesystem::path(r["hf-dir"].as<std::string>()) / "adapter_config.json");
  if (is_adapter || r.count("lora-base")) return import_adapter(r, is_adapter);
  HfImportResult result;
  try {
    result = import_hf_model(r["hf-dir"].as<std::string>(), r["out"].as<std::string>(),
                             r["tokenizer"].as<std::string>());
  } catch (const HfConfigError& e) {
    throw UsageError(e.what());  // a config.json field lmzoo does not implement: exit 2, like a bad flag
  }
  std::cout << "imported " << r["hf-dir"].as<std::string>() << " (" << enum_name(result.architecture) << ") -> "
            << result.checkpoint_dir << "\n";
  std::cout << "  " << result.config.n_layer << " layers, d_model " << result.config.d_model << ", vocabulary "
            << result.config.vocab_size;
  if (result.config.padded_vocab() != result.config.vocab_size) {
    std::cout << " (embedding rows " << result.config.padded_vocab() << ")";
  }
  std::cout << "\n";
  for (const auto& note : result.notes) std::cout << "  note: " << note << "\n";
  if (!result.report.kept_initial.empty()) {
    std::cout << "  not in the checkpoint, initialised: ";
    for (size_t i = 0; i < result.report.kept_initial.size(); ++i) {
      std::cout << (i ? ", " : "") << result.report.kept_initial[i];
    }
    std::cout << "\n";
  }
  if (!result.report.ignored.empty()) {
    std::cout << "  ignored (buffers, tied copies, heads lmzoo lacks): " << result.report.ignored.size()
              << " tensors\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace lmzoo::cli
