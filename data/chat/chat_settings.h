// What a checkpoint knows about chatting: its chat template (Jinja source) and the ids that end its turn
// (generation_config.json's eos_token_id, all of them), read from and written to a model directory as transformers
// saves them. Leaves out: rendering (chat_template.h).
#pragma once
#include <string>
#include <vector>

namespace lmzoo {

struct ChatSettings {
  std::string chat_template;  // Jinja source; empty: none
  std::vector<int> stop_ids;  // generation_config.json's eos ids; empty: none given (the tokenizer's eos applies)
};

// From DIR: chat_template.jinja or tokenizer_config.json's chat_template (read_chat_template), and
// generation_config.json's eos_token_id (an id or a list). Absent files give empty fields; a generation_config.json
// that is not JSON, or whose eos_token_id is not ids, throws std::runtime_error naming the file.
ChatSettings read_chat_settings(const std::string& dir);

// Writes DIR/chat_template.jinja and DIR/generation_config.json ({"eos_token_id": [...]}) for the non-empty fields,
// each durably; throws "cannot write PATH: cause".
void write_chat_settings(const std::string& dir, const ChatSettings& settings);

// The names write_chat_settings writes (for copying a checkpoint's files).
std::vector<std::string> chat_settings_file_names();

}  // namespace lmzoo
