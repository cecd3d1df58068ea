// Chat templates rendered as transformers' apply_chat_template renders them (jinja2's sandbox with trim_blocks,
// lstrip_blocks, loop controls, its tojson / raise_exception / strftime_now, {% generation %}), read from a
// checkpoint's chat_template.jinja or tokenizer_config.json, and lmzoo's default (ChatML) for tokenizers with none.
// Leaves out: the parts of Jinja real chat templates do not use (docs/chat_templates.md lists the subset).
#pragma once
#include <cstddef>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmzoo {

namespace jinja {
struct Template;
}

// One line: "chat template line 12: unsupported construct 'call block'", "chat template raised: <message>", ...
class ChatTemplateError : public std::runtime_error {
 public:
  enum class Kind {
    Syntax,       // the template does not parse
    Unsupported,  // valid Jinja this renderer does not implement
    Raised,       // the template called raise_exception(message)
    Runtime,      // an error while rendering (undefined value, wrong type, what the sandbox refuses)
  };
  ChatTemplateError(Kind kind, int line, const std::string& detail);
  Kind kind() const { return kind_; }
  int line() const { return line_; }              // 1-based template line, 0 where unknown
  const std::string& detail() const { return detail_; }  // raise_exception's message, or the error without the prefix

 private:
  Kind kind_;
  int line_;
  std::string detail_;
};

struct ChatTemplateOptions {
  // The local time strftime_now("%d %b %Y") formats; the system clock (as transformers' datetime.now()) when empty.
  std::function<std::tm()> now;
};

struct ChatRender {
  std::string text;
  // Byte ranges [begin, end) of TEXT rendered inside {% generation %} ... {% endgeneration %} (transformers'
  // return_assistant_tokens_mask), in order; empty for templates without the tag. A block inside a macro or a set
  // block, whose text is placed later, gives no span.
  std::vector<std::pair<size_t, size_t>> generation_spans;
};

// A template parsed once and rendered many times (thread-safe: render is const and shares nothing mutable).
class ChatTemplate {
 public:
  explicit ChatTemplate(std::string source);  // throws ChatTemplateError (Syntax / Unsupported)
  ChatRender render(const nlohmann::ordered_json& context, const ChatTemplateOptions& options = {}) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::Template> template_;
};

// CONTEXT holds the template's variables as apply_chat_template passes them: messages (a list of {role, content,
// ...}), add_generation_prompt, bos_token, eos_token, tools, any extra keys. An object's keys keep their order with
// ordered_json (what tojson prints); nlohmann::json sorts them.
std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context,
                                 const ChatTemplateOptions& options = {});
std::string render_chat_template(const std::string& source, const nlohmann::json& context,
                                 const ChatTemplateOptions& options = {});

// The chat template of a checkpoint or tokenizer directory, as transformers 5 loads it: chat_template.jinja when
// present, else tokenizer_config.json's "chat_template" (a string, or a list of {"name", "template"} whose "default"
// is used), else chat_template.json's (what processors save); nullopt when there is none. Throws
// std::runtime_error for an unreadable file, malformed JSON, or a list of templates without a "default".
std::optional<std::string> read_chat_template(const std::filesystem::path& checkpoint_or_tokenizer_dir);

// lmzoo's default template for tokenizers without one (ChatML): "<|im_start|>role\ncontent<|im_end|>\n" per
// message, and "<|im_start|>assistant\n" with add_generation_prompt.
extern const char* const kChatMlTemplate;

}  // namespace lmzoo
