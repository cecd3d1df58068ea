// Reading and writing a model directory's chat template and generation_config.json end-of-turn ids.
#include "data/chat/chat_settings.h"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/durable_io.h"
#include "data/chat/chat_template.h"
#include "data/tokenizers/tokenizer_files.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTemplateFile = "chat_template.jinja";
constexpr const char* kGenerationFile = "generation_config.json";

std::vector<int> eos_ids(const nlohmann::json& value, const std::string& path) {
  std::vector<int> ids;
  auto add = [&](const nlohmann::json& id) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      throw std::runtime_error(path + ": eos_token_id must be a token id or a list of them");
    }
    ids.push_back(id.get<int>());
  };
  if (value.is_null()) return ids;
  if (value.is_array()) {
    for (const auto& id : value) add(id);
  } else {
    add(value);
  }
  return ids;
}

}  // namespace

ChatSettings read_chat_settings(const std::string& dir) {
  ChatSettings settings;
  if (auto source = read_chat_template(dir)) settings.chat_template = *source;
  const fs::path generation = fs::path(dir) / kGenerationFile;
  std::error_code ec;
  if (fs::is_regular_file(generation, ec)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file_bytes(generation.string()));
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(generation.string() + " is not valid JSON");
    }
    if (j.is_object() && j.contains("eos_token_id")) settings.stop_ids = eos_ids(j["eos_token_id"], generation.string());
  }
  return settings;
}

void write_chat_settings(const std::string& dir, const ChatSettings& settings) {
  if (!settings.chat_template.empty()) {
    write_file_durably((fs::path(dir) / kTemplateFile).string(), settings.chat_template);
  }
  if (!settings.stop_ids.empty()) {
    write_file_durably((fs::path(dir) / kGenerationFile).string(),
                       nlohmann::json{{"eos_token_id", settings.stop_ids}}.dump(2) + "\n");
  }
}

std::vector<std::string> chat_settings_file_names() { return {kTemplateFile, kGenerationFile}; }

}  // namespace lmzoo
