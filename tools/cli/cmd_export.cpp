// lmzoo export: write a checkpoint as a TorchScript module runnable from Python and C++, as a Hugging Face
// model directory (config.json + model.safetensors + tokenizer files), a LoRA run's adapters as PEFT files, or one
// GGUF file for llama.cpp (decoders).
#include <filesystem>
#include <iostream>
#include <unistd.h>

#include <torch/csrc/jit/serialization/export.h>

#include "base/durable_io.h"
#include "models/torchscript_export.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/interchange/gguf_interchange.h"
#include "train/interchange/hf_interchange.h"
#include "train/peft/lora_merge.h"
#include "train/peft/lora_setup.h"
#include "train/peft/peft_export.h"

namespace lmzoo {

enum class ExportFormat { kTorchScript, kHf, kPeft, kGguf };

template <>
struct EnumTable<ExportFormat> {
  static constexpr const char* what = "format";
  static constexpr EnumEntry<ExportFormat> entries[] = {
      {ExportFormat::kTorchScript, "torchscript", "one TorchScript file (--out model.pt)"},
      {ExportFormat::kHf, "hf", "a Hugging Face model directory (--out DIR)"},
      {ExportFormat::kPeft, "peft", "a LoRA run's adapters as Hugging Face PEFT files (--out DIR)"},
      {ExportFormat::kGguf, "gguf", "one GGUF file for llama.cpp (--out model.gguf; GPT-2, Llama, Qwen2, Mistral, GPT-NeoX)"},
  };
};

}  // namespace lmzoo

namespace lmzoo::cli {

namespace {

// Throws, before any work, when --out names a directory or a file in a directory that does not exist.
void check_writable_file(const std::string& out) {
  const std::filesystem::path path(out);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec) || path.filename().empty() || path.filename() == "." ||
      path.filename() == "..") {
    throw std::runtime_error("--out " + out + " is a directory; name the file to write, e.g. " +
                             (path / "model.pt").lexically_normal().string());
  }
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  if (!std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error("cannot write " + out + ": directory " + dir.string() + " does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) throw std::runtime_error("cannot write " + out + ": " + dir.string() + " is not writable");
}

// Writes the TorchScript module of INFO to OUT: serialized straight into a hidden sibling of OUT, which is fsynced
// and renamed over it (base/durable_io.h); a full disk leaves OUT as it was.
void export_torchscript(const CheckpointInfo& info, const std::string& out) {
  ExportedModel exported = export_model(load_merged_model(info, torch::Device(torch::kCPU)), info.tokenizer_model);
  replace_file_durably(out, [&exported](DurableFile& file) {
    torch::jit::ExportModule(exported.module, [&file](const void* data, size_t n) { return file.write(data, n); });
  });
  std::cout << "exported " << info.dir << " (" << (info.model.labels.empty() ? enum_name(info.model.arch) : "bert classifier")
            << ") -> " << out << "\n";
  for (const auto& method : exported.methods) std::cout << "  " << method << "\n";
  std::cout << std::flush;
}

void export_peft(const CheckpointInfo& info, const std::string& out) {
  const PeftExportResult result = export_peft_adapter(info, out);
  std::cout << "exported the adapters of " << info.dir << " (" << enum_name(result.architecture) << ", rank "
            << info.train.lora_rank << ") -> " << out << "/\n";
  for (const auto& file : result.files) std::cout << "  " << file << "\n";
  std::cout << std::flush;
}

// A LoRA checkpoint exports as PEFT files, or merged into whole weights only when --merge-lora says so.
void check_merge_flag(const CheckpointInfo& info, ExportFormat format, bool merge) {
  const bool lora = is_lora_run(info.train);
  if (format == ExportFormat::kPeft) {
    if (!lora) throw UsageError("--format peft writes a LoRA run's adapters; " + info.dir + " has none");
    if (merge) throw UsageError("--merge-lora and --format peft exclude each other (PEFT files hold the adapters)");
    return;
  }
  if (lora && !merge) {
    throw UsageError("checkpoint " + info.dir + " holds LoRA adapters: add --merge-lora to fold them into the " +
                     "weights, or write them with --format peft");
  }
  if (!lora && merge) throw UsageError("--merge-lora: checkpoint " + info.dir + " has no LoRA adapters");
}

void export_hf(const CheckpointInfo& info, const std::string& out) {
  const HfExportResult result = export_hf_model(info, out);
  std::cout << "exported " << info.dir << " (" << enum_name(result.architecture) << ") -> " << out << "/\n";
  for (const auto& file : result.files) std::cout << "  " << file << "\n";
  std::cout << std::flush;
}

void export_gguf(const CheckpointInfo& info, const std::string& out, GgufTensorType type) {
  const GgufExportResult result = export_gguf_model(info, out, type);
  std::cout << "exported " << info.dir << " (" << enum_name(result.architecture) << ", " << enum_name(type) << ", "
            << result.tensors << " tensors, tokenizer " << result.tokenizer.model
            << (result.tokenizer.pre.empty() ? "" : "/" + result.tokenizer.pre)
            << (result.tokenizer.chat_template ? ", chat template" : "") << ") -> " << out << std::endl;
}

}  // namespace

int run_export(int argc, char** argv) {
  cxxopts::Options options("lmzoo export",
                           "Export a checkpoint. torchscript (GPT, BERT, BERT classifier, T5): scripted forward and, "
                           "per family, encode / decode; attributes config_json and tokenizer_model (the serialized tokenizer: a "
                           "SentencePiece model, or JSON holding an HF tokenizer's files). hf: "
                           "config.json, model.safetensors and the tokenizer's files, which transformers' "
                           "from_pretrained loads (" + enum_choices<HfArchitecture>(", ") + " shapes).");
  options.add_options()
      ("checkpoint", "run directory or checkpoint directory", cxxopts::value<std::string>())
      ("out", "output: a file for torchscript (e.g. model.pt), a directory for hf", cxxopts::value<std::string>())
      ("format", enum_help<ExportFormat>(), cxxopts::value<std::string>()->default_value("torchscript"))
      ("merge-lora", "a LoRA run's checkpoint: fold its adapters into the base weights it names, then export")
      ("type", "gguf: " + enum_help<GgufTensorType>(), cxxopts::value<std::string>()->default_value("f32"));
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  require_option(r, "checkpoint");
  require_option(r, "out");
  const auto format = enum_option<ExportFormat>(r, "format");
  const std::string out = r["out"].as<std::string>();
  if (r.count("type") && format != ExportFormat::kGguf) throw UsageError("--type applies to --format gguf only");
  const auto type = enum_option<GgufTensorType>(r, "type");
  if (format == ExportFormat::kTorchScript || format == ExportFormat::kGguf) check_writable_file(out);  // before the model is built and scripted
  const CheckpointInfo info = open_checkpoint(r["checkpoint"].as<std::string>());
  check_merge_flag(info, format, r.count("merge-lora") > 0);
  switch (format) {
    case ExportFormat::kTorchScript: export_torchscript(info, out); break;
    case ExportFormat::kHf: export_hf(info, out); break;
    case ExportFormat::kPeft: export_peft(info, out); break;
    case ExportFormat::kGguf: export_gguf(info, out, type); break;
  }
  return 0;
}

}  // namespace lmzoo::cli
