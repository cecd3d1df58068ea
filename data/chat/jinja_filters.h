// jinja2's filters, tests, attribute/item access (as its immutable sandbox allows) and Python's str/dict/list methods
// for the chat-template interpreter, plus transformers' tojson (json.dumps with ensure_ascii=False).
// Leaves out: filters real chat templates do not use (batch, center, format, groupby, truncate, urlize, ...),
// which the parser refuses by name.
#pragma once
#include <string>

#include "data/chat/jinja_value.h"

namespace lmzoo::jinja {

bool has_filter(const std::string& name);
bool has_test(const std::string& name);
bool is_jinja_builtin_filter(const std::string& name);
bool is_jinja_builtin_test(const std::string& name);

Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
bool apply_test(const std::string& name, const Value& input, CallArgs& args);

// jinja2's sandboxed getattr (OBJ.NAME: a Python attribute such as a method first, then an item) and getitem
// (OBJ[KEY]: an item first, then an attribute); missing gives Undefined with jinja2's message.
Value get_attribute(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// OBJ[start:stop:step] on a list, tuple or string.
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// `a in b` as Python evaluates it.
bool contains(const Value& container, const Value& item);

struct JsonOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;
  bool has_separators = false;
  std::string item_separator, key_separator;
  bool sort_keys = false;
};
// json.dumps(v, ...) as Python writes it; a TypeError for what JSON cannot hold.
std::string to_json(const Value& v, const JsonOptions& options);

// Raises the error an Undefined carries (jinja2's _fail_with_undefined_error).
[[noreturn]] void fail_undefined(const Value& undefined);

}  // namespace lmzoo::jinja
