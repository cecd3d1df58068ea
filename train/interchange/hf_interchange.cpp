// lmzoo import / export --format hf: HF directory <-> lmzoo checkpoint through the config and name tables.
#include "train/interchange/hf_interchange.h"

#include "train/peft/lora_merge.h"

#include <filesystem>

#include "base/durable_io.h"
#include "base/interrupt.h"
#include "data/safetensors.h"
#include "data/tokenizers/hf_json/tokenizer_json_writer.h"
#include "data/tokenizers/tokenizer.h"
#include "models/memory_estimate.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_hf_config(const fs::path& dir) {
  return read_hf_json_file((dir / "config.json").string(),
                           dir.string() + " is not a Hugging Face model directory (no config.json)");
}

// OUT may be new, empty, or an lmzoo checkpoint (replaced); anything else is left alone.
void check_import_target(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec)) throw std::runtime_error("--out " + out.string() + " exists and is not a directory");
  if (fs::is_empty(out, ec)) {
    fs::remove(out, ec);  // save_checkpoint swaps a fresh directory into place
    return;
  }
  if (!complete_checkpoint_step(out.string(), /*legacy_ok=*/true)) {
    throw std::runtime_error("--out " + out.string() +
                             " exists and is not an lmzoo checkpoint; name a new directory");
  }
}

TrainConfig import_train_config(const ModelConfig& config) {
  TrainConfig train = config.labels.empty() ? TrainConfig{} : classifier_defaults();
  if (config.labels.empty()) train.objective = default_objective(config.arch, false);
  return train;
}

HfTokenIds hf_token_ids(const Tokenizer& tokenizer) {
  const SpecialIds& special = tokenizer.special();
  HfTokenIds ids;
  ids.pad = special.pad;
  ids.bos = special.bos >= 0 ? special.bos : special.cls;
  ids.eos = special.eos >= 0 ? special.eos : special.sep;
  return ids;
}

// The tokenizer's files under the names transformers' tokenizers read: OpenAI's encoder.json / vocab.bpe are
// GPT-2's vocab.json / merges.txt in the same formats; tokenizer.json (data/tokenizers/hf_json/tokenizer_json_writer.h)
// beside them for every kind (SentencePiece models but word models and the like), so AutoTokenizer loads the fast
// tokenizer.
TokenizerFiles hf_tokenizer_files(const Tokenizer& tokenizer) {
  TokenizerFiles files;
  for (const auto& [name, bytes] : tokenizer.files()) {
    if (name == "encoder.json") {
      files["vocab.json"] = bytes;
    } else if (name == "vocab.bpe") {
      files["merges.txt"] = bytes;
    } else {
      files[name] = bytes;
    }
  }
  if (auto json = tokenizer_json_for(tokenizer)) files["tokenizer.json"] = std::move(*json);
  return files;
}

// tokenizer_config.json (where the tokenizer has one) also carries the chat template, where transformers 4.x reads
// it; 5.x reads chat_template.jinja, written beside it.
TokenizerFiles with_chat_template(TokenizerFiles files, const ChatSettings& chat) {
  const auto config = files.find("tokenizer_config.json");
  if (chat.chat_template.empty() || config == files.end()) return files;
  nlohmann::json j = nlohmann::json::parse(config->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return files;
  j["chat_template"] = chat.chat_template;
  config->second = j.dump(2) + "\n";
  return files;
}

}  // namespace

// A first SIGINT/SIGTERM stops the import at its next phase with nothing written; one during the final write lets it
// finish (the checkpoint is then complete). Leftovers of imports killed mid-write are removed first.
HfImportResult import_hf_model(const std::string& hf_dir, const std::string& out_dir, const std::string& tokenizer_dir) {
  InterruptChecks interrupt_checks;
  const nlohmann::json hf_config = read_hf_config(hf_dir);
  HfModelDescription description = model_config_from_hf(hf_config);
  // Before the tokenizer and tensors are read: the weights of the HF embedding rows must fit.
  const MemoryEstimate weights = estimate_weights(description.config);
  require_fits_in_host(weights, "importing " + std::to_string(weights.parameters) + " parameters");
  Tokenizer tokenizer = Tokenizer::load(tokenizer_dir.empty() ? hf_dir : tokenizer_dir);
  auto tensors = load_safetensors_dir(hf_dir);
  if (description.lm_head_from_shared && !tensors.count("lm_head.weight") && tensors.count("shared.weight")) {
    tensors["lm_head.weight"] = tensors.at("shared.weight");  // tied in the file, untied in lmzoo (hf_config.h)
  }
  check_import_target(out_dir);
  throw_if_interrupted("importing");

  HfImportResult result;
  result.checkpoint_dir = out_dir;
  result.architecture = description.architecture;
  result.notes = description.notes;
  result.tokenizer_size = tokenizer.vocab_size();
  ModelConfig& config = description.config;
  const int64_t rows = config.vocab_size;  // the HF embedding rows; the tokenizer may use fewer
  config.vocab_multiple = vocab_multiple_for(result.tokenizer_size, rows);
  config.vocab_size = result.tokenizer_size;
  result.config = config;

  torch::manual_seed(0);  // parameters the HF class lacks start the same on every import
  AnyModel model = build_model(config);
  result.report = load_hf_tensors(*model.module(), description.architecture, config, tensors);
  throw_if_interrupted("importing");
  remove_dead_processes_siblings(out_dir);

  CheckpointInfo info;
  info.model = config;
  info.train = import_train_config(config);
  info.tokenizer_model = tokenizer.serialized();
  info.chat = read_chat_settings(hf_dir);
  save_checkpoint(out_dir, model.module(), nullptr, info);
  return result;
}

HfExportResult export_hf_model(const CheckpointInfo& checkpoint, const std::string& out_dir) {
  HfExportResult result;
  result.architecture = hf_architecture_of(checkpoint.model);
  const Tokenizer tokenizer = Tokenizer::from_serialized(checkpoint.tokenizer_model);
  AnyModel model = load_merged_model(checkpoint, torch::Device(torch::kCPU));  // a LoRA run's adapters folded in
  const auto tensors = hf_tensors_from_model(*model.module(), result.architecture, checkpoint.model);
  const nlohmann::json config = hf_config_from_model(checkpoint.model, result.architecture, hf_token_ids(tokenizer));

  // Written whole or not at all: staged beside OUT_DIR, then moved into place.
  const TokenizerFiles tokenizer_files = with_chat_template(hf_tokenizer_files(tokenizer), checkpoint.chat);
  StagedDirectory staged(out_dir);
  staged.fill([&](const std::string& dir) {
    write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
    write_file_durably((fs::path(dir) / "config.json").string(), config.dump(2) + "\n");
    write_files_durably(dir, tokenizer_files);
    write_chat_settings(dir, checkpoint.chat);
  });
  staged.commit();
  result.files.push_back("model.safetensors");
  result.files.push_back("config.json");
  for (const auto& item : tokenizer_files) result.files.push_back(item.first);
  if (!checkpoint.chat.chat_template.empty()) result.files.push_back("chat_template.jinja");
  if (!checkpoint.chat.stop_ids.empty()) result.files.push_back("generation_config.json");
  return result;
}

}  // namespace lmzoo
