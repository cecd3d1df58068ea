// GGUF export and import (gguf_interchange.h): a checkpoint's Hugging Face tensors renamed and laid out for
// llama.cpp, and back through a staged Hugging Face directory that import_hf_model reads. Leaves out: splitting files.
#include "train/interchange/gguf_interchange.h"

#include <filesystem>
#include <unistd.h>

#include "base/durable_io.h"
#include "data/gguf/gguf_import_tokenizer.h"
#include "data/gguf/gguf_writer.h"
#include "data/safetensors.h"
#include "train/interchange/hf_interchange.h"
#include "train/peft/lora_merge.h"

namespace fs = std::filesystem;

namespace lmzoo {

namespace {

HfArchitecture hf_twin(const ModelConfig& config) {
  switch (config.arch) {
    case Arch::kGpt: break;
    case Arch::kBert:
    case Arch::kT5:
      throw std::invalid_argument("a " + enum_name(config.arch) + " model has no GGUF form lmzoo writes (decoders only: " +
                                  enum_choices<GgufArch>(", ") + ")");
  }
  try {
    return hf_architecture_of(config);
  } catch (const HfFormatError& e) {  // "a gpt with position alibi has no Hugging Face twin: ..."
    throw std::invalid_argument(std::string(e.what()) + "; GGUF export takes the same shapes");
  }
}

// A directory removed with what it holds when it goes out of scope.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& near) {
    const fs::path parent = fs::absolute(near).parent_path();
    path = (parent / (".gguf-import-" + std::to_string(getpid()))).string();
    remove_tree_quietly(path);
    make_directory(path);
  }
  ~ScratchDir() { remove_tree_quietly(path); }
};

}  // namespace

GgufExportResult export_gguf_model(const CheckpointInfo& checkpoint, const std::string& out, GgufTensorType type) {
  GgufExportResult result;
  const HfArchitecture hf = hf_twin(checkpoint.model);
  result.architecture = gguf_arch_of(hf, checkpoint.model);
  const Tokenizer tokenizer = Tokenizer::from_serialized(checkpoint.tokenizer_model);

  GgufWriter writer;
  writer.add("general.architecture", GgufValue::string(enum_name(result.architecture)));
  writer.add("general.name", GgufValue::string(fs::path(checkpoint.dir).lexically_normal().filename().string()));
  writer.add("general.alignment", GgufValue::u32(static_cast<uint32_t>(kGgufAlignment)));
  writer.add("general.file_type", GgufValue::u32(gguf_file_type(type)));
  if (type == GgufTensorType::kQ8_0) writer.add("general.quantization_version", GgufValue::u32(2));
  add_gguf_hparams(writer, result.architecture, checkpoint.model);
  result.tokenizer = add_gguf_tokenizer(writer, tokenizer, checkpoint.model.padded_vocab(), checkpoint.chat.chat_template);

  AnyModel model = load_merged_model(checkpoint, torch::Device(torch::kCPU));  // a LoRA run's adapters folded in
  const auto hf_tensors = hf_tensors_from_model(*model.module(), hf, checkpoint.model);
  for (const auto& [name, t] : gguf_tensors_from_hf(result.architecture, checkpoint.model, hf_tensors)) {
    const GgufTensorType stored = gguf_storage_type(name, t, type);
    writer.add_tensor(name, t, stored);
    ++result.tensors;
    if (stored == type) ++result.quantized;
  }
  writer.write(out);
  return result;
}

GgufImportResult import_gguf_model(const std::string& path, const std::string& out_dir) {
  const GgufFile file = GgufFile::open(path);
  GgufImportResult result;
  result.architecture = gguf_arch_of_file(file);
  const nlohmann::json config = hf_config_from_gguf(file, result.architecture);
  const auto tensors = hf_tensors_from_gguf(file, result.architecture, config);
  const TokenizerFiles tokenizer = tokenizer_files_from_gguf(file);
  result.tensors = static_cast<int64_t>(tensors.size());

  ScratchDir scratch(out_dir);
  write_safetensors((fs::path(scratch.path) / "model.safetensors").string(), tensors, {{"format", "pt"}});
  write_file_durably((fs::path(scratch.path) / "config.json").string(), config.dump(2) + "\n");
  for (const auto& [name, bytes] : tokenizer) write_file_durably((fs::path(scratch.path) / name).string(), bytes);
  const HfImportResult imported = import_hf_model(scratch.path, out_dir);
  result.config = imported.config;
  return result;
}

}  // namespace lmzoo
