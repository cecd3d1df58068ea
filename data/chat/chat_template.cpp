// The public chat-template API (chat_template.h): parse once, convert the JSON context to interpreter values in
// key order, render, and turn interpreter errors into one-line ChatTemplateErrors; reading a checkpoint's template.
// Leaves out: the messages' validation (roles, content types), which belongs to the data pipeline.
#include "data/chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "data/chat/jinja_eval.h"
#include "data/chat/jinja_parser.h"

namespace lmzoo {

const char* const kChatMlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

namespace {

std::string error_text(ChatTemplateError::Kind kind, int line, const std::string& detail) {
  if (kind == ChatTemplateError::Kind::Raised) return "chat template raised: " + detail;
  if (line > 0) return "chat template line " + std::to_string(line) + ": " + detail;
  return "chat template: " + detail;
}

ChatTemplateError convert(const jinja::Error& e) {
  ChatTemplateError::Kind kind = ChatTemplateError::Kind::Runtime;
  switch (e.kind) {
    case jinja::ErrorKind::Syntax: kind = ChatTemplateError::Kind::Syntax; break;
    case jinja::ErrorKind::Unsupported: kind = ChatTemplateError::Kind::Unsupported; break;
    case jinja::ErrorKind::Raised: kind = ChatTemplateError::Kind::Raised; break;
    default: kind = ChatTemplateError::Kind::Runtime;
  }
  return ChatTemplateError(kind, e.line, e.what());
}

template <typename Json>
jinja::Value to_value(const Json& j) {
  using jinja::Value;
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case Json::value_t::number_unsigned: return Value::integer(static_cast<int64_t>(j.template get<uint64_t>()));
    case Json::value_t::number_float: return Value::floating(j.template get<double>());
    case Json::value_t::string: return Value::string(j.template get<std::string>());
    case Json::value_t::array: {
      jinja::List items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(to_value(item));
      return Value::make_list(std::move(items));
    }
    case Json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it) d.dict->items.emplace_back(Value::string(it.key()), to_value(it.value()));
      return d;
    }
    default: throw ChatTemplateError(ChatTemplateError::Kind::Runtime, 0, "the context holds a value JSON cannot");
  }
}

template <typename Json>
std::vector<std::pair<std::string, jinja::Value>> to_context(const Json& context) {
  if (!context.is_object())
    throw ChatTemplateError(ChatTemplateError::Kind::Runtime, 0, "the context must be a JSON object");
  std::vector<std::pair<std::string, jinja::Value>> vars;
  for (auto it = context.begin(); it != context.end(); ++it) vars.emplace_back(it.key(), to_value(it.value()));
  return vars;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A "chat_template" value of tokenizer_config.json / chat_template.json.
std::optional<std::string> template_of(const nlohmann::json& value, const std::filesystem::path& file) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const auto& entry : value)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        return entry["template"].get<std::string>();
    throw std::runtime_error(file.string() + ": chat_template lists several templates and none is named \"default\"");
  }
  throw std::runtime_error(file.string() + ": chat_template is neither a string nor a list of {name, template}");
}

}  // namespace

ChatTemplateError::ChatTemplateError(Kind kind, int line, const std::string& detail)
    : std::runtime_error(error_text(kind, line, detail)), kind_(kind), line_(line), detail_(detail) {}

ChatTemplate::ChatTemplate(std::string source) : source_(std::move(source)) {
  try {
    template_ = std::make_shared<const jinja::Template>(jinja::parse_template(source_));
  } catch (const jinja::Error& e) {
    throw convert(e);
  } catch (const std::invalid_argument& e) {  // malformed UTF-8 in the template
    throw ChatTemplateError(ChatTemplateError::Kind::Syntax, 0, e.what());
  }
}

ChatRender ChatTemplate::render(const nlohmann::ordered_json& context, const ChatTemplateOptions& options) const {
  jinja::RenderOptions render_options;
  render_options.now = options.now;
  try {
    jinja::RenderOutput out = jinja::render(*template_, to_context(context), render_options);
    return ChatRender{std::move(out.text), std::move(out.generation_spans)};
  } catch (const jinja::Error& e) {
    throw convert(e);
  } catch (const ChatTemplateError&) {
    throw;
  } catch (const std::invalid_argument& e) {  // malformed UTF-8 in the context
    throw ChatTemplateError(ChatTemplateError::Kind::Runtime, 0, e.what());
  }
}

namespace {

// The template most recently parsed on this thread: callers rendering many conversations with one template parse
// it once.
const ChatTemplate& parsed(const std::string& source) {
  thread_local std::unique_ptr<ChatTemplate> last;
  if (!last || last->source() != source) {
    auto fresh = std::make_unique<ChatTemplate>(source);
    last = std::move(fresh);
  }
  return *last;
}

}  // namespace

std::string render_chat_template(const std::string& source, const nlohmann::ordered_json& context,
                                 const ChatTemplateOptions& options) {
  return parsed(source).render(context, options).text;
}

std::string render_chat_template(const std::string& source, const nlohmann::json& context,
                                 const ChatTemplateOptions& options) {
  return parsed(source).render(nlohmann::ordered_json::parse(context.dump()), options).text;
}

std::optional<std::string> read_chat_template(const std::filesystem::path& dir) {
  const auto jinja_file = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_file)) return read_file(jinja_file);
  for (const char* name : {"tokenizer_config.json", "chat_template.json"}) {
    const auto file = dir / name;
    if (!std::filesystem::exists(file)) continue;
    nlohmann::json config;
    try {
      config = nlohmann::json::parse(read_file(file));
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(file.string() + ": not valid JSON (" + e.what() + ")");
    }
    if (config.is_object() && config.contains("chat_template"))
      if (auto t = template_of(config["chat_template"], file)) return t;
  }
  return std::nullopt;
}

}  // namespace lmzoo
