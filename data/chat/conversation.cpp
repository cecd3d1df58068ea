// Reading chat JSONL (messages lists and prompt/completion pairs) into conversations.
#include "data/chat/conversation.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "data/unicode/utf8.h"

namespace lmzoo {

namespace {

ChatMessage message_from_json(const nlohmann::json& m, const std::string& where) {
  if (!m.is_object()) throw std::invalid_argument(where + "a message must be an object {\"role\", \"content\"}");
  if (!m.contains("role") || !m["role"].is_string()) throw std::invalid_argument(where + "a message has no string \"role\"");
  const std::string role = m["role"].get<std::string>();
  const auto parsed = find_enum<ChatRole>(role);
  if (!parsed) throw std::invalid_argument(where + "unknown role '" + role + "' (roles: " + enum_choices<ChatRole>(", ") + ")");
  if (!m.contains("content") || !m["content"].is_string()) {
    throw std::invalid_argument(where + "a " + role + " message has no string \"content\"");
  }
  return {*parsed, m["content"].get<std::string>()};
}

Conversation messages_from_json(const nlohmann::json& list, const char* key, const std::string& where) {
  if (!list.is_array()) throw std::invalid_argument(where + "\"" + key + "\" must be a list of messages");
  Conversation out;
  for (const auto& m : list) out.push_back(message_from_json(m, where));
  return out;
}

// A prompt or completion: a string is one turn of ROLE, a list is messages.
Conversation side_from_json(const nlohmann::json& value, const char* key, ChatRole role, const std::string& where) {
  if (value.is_string()) return {{role, value.get<std::string>()}};
  if (value.is_array()) return messages_from_json(value, key, where);
  throw std::invalid_argument(where + "\"" + key + "\" must be a string or a list of messages");
}

}  // namespace

nlohmann::ordered_json messages_json(const Conversation& conversation) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& m : conversation) out.push_back({{"role", enum_name(m.role)}, {"content", m.content}});
  return out;
}

Conversation conversation_from_json(const nlohmann::json& value, const std::string& where) {
  if (!value.is_object()) throw std::invalid_argument(where + "expected an object with \"messages\" or \"prompt\" and \"completion\"");
  Conversation conversation;
  if (value.contains("messages")) {
    conversation = messages_from_json(value["messages"], "messages", where);
  } else if (value.contains("prompt") && value.contains("completion")) {
    conversation = side_from_json(value["prompt"], "prompt", ChatRole::kUser, where);
    const Conversation completion = side_from_json(value["completion"], "completion", ChatRole::kAssistant, where);
    conversation.insert(conversation.end(), completion.begin(), completion.end());
  } else {
    throw std::invalid_argument(where + "expected \"messages\", or \"prompt\" and \"completion\"");
  }
  return conversation;
}

std::vector<SourcedConversation> read_conversations(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read chat file " + path);
  std::vector<SourcedConversation> out;
  for_each_utf8_line(in, path, [&](const std::string& line, int64_t number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw std::invalid_argument(where + "invalid JSON");
    }
    Conversation conversation = conversation_from_json(value, where);
    const bool answered = std::any_of(conversation.begin(), conversation.end(),
                                      [](const ChatMessage& m) { return m.role == ChatRole::kAssistant; });
    if (!answered) throw std::invalid_argument(where + "the conversation has no assistant turn (nothing to learn)");
    out.push_back({std::move(conversation), where});
  });
  if (out.empty()) throw std::invalid_argument(path + " holds no conversations");
  return out;
}

}  // namespace lmzoo
