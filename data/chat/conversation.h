// Chat examples as people store them: JSONL of conversations {"messages": [{"role", "content"}, ...]} or of
// prompt/completion pairs {"prompt", "completion"} (TRL's two dataset formats), read into one Conversation type.
// Leaves out: rendering (chat_template.h) and tokens (chat_encoding.h).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_table.h"

namespace lmzoo {

enum class ChatRole { kSystem, kUser, kAssistant };

template <>
struct EnumTable<ChatRole> {
  static constexpr const char* what = "role";
  static constexpr EnumEntry<ChatRole> entries[] = {
      {ChatRole::kSystem, "system", "instructions before the conversation"},
      {ChatRole::kUser, "user", "what the model is asked"},
      {ChatRole::kAssistant, "assistant", "what the model answers: the scored tokens"},
  };
};

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;
};

using Conversation = std::vector<ChatMessage>;

// The messages list a chat template reads: [{"role": ..., "content": ...}, ...], keys in that order.
nlohmann::ordered_json messages_json(const Conversation& conversation);

// One conversation from a JSON value: {"messages": [...]} or {"prompt": ..., "completion": ...} (each a string, a
// user and an assistant turn, or a messages list, TRL's conversational prompt/completion). Throws
// std::invalid_argument (prefixed with WHERE) on anything else: a missing or non-string content, an unknown role.
Conversation conversation_from_json(const nlohmann::json& value, const std::string& where);

struct SourcedConversation {
  Conversation messages;
  std::string where;  // "FILE:LINE: ", for messages about it
};

// Every conversation of a JSONL file (blank lines skipped). Throws std::invalid_argument naming the file and line on a
// malformed line, an unknown role, a conversation without an assistant turn, and on a file without conversations.
std::vector<SourcedConversation> read_conversations(const std::string& path);

}  // namespace lmzoo
