// jinja2's filters and tests, sandboxed attribute and item access, Python's str/dict/list methods and json.dumps
// (jinja_filters.h), each with the semantics of jinja2 3.1 and Python 3. Leaves out: the filters and tests the
// parser refuses, str.format specs, the '%' string operator.
#include "data/chat/jinja_filters.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "data/chat/jinja_text.h"

namespace lmzoo::jinja {

[[noreturn]] void fail_undefined(const Value& undefined) {
  if (undefined.undefined) throw Error(undefined.undefined->error, undefined.undefined->message);
  throw Error(ErrorKind::Undefined, "value is undefined");
}

namespace {

[[noreturn]] void type_error(const std::string& message) { throw Error(ErrorKind::Type, message); }

// Binds a call's arguments to a Python signature: positional or by name, defaults, and errors for extras.
class Args {
 public:
  Args(CallArgs& call, std::string function, std::vector<std::string> names)
      : call_(call), function_(std::move(function)), names_(std::move(names)) {
    if (call_.positional.size() > names_.size())
      type_error(function_ + "() takes at most " + std::to_string(names_.size()) + " argument(s) (" +
                 std::to_string(call_.positional.size()) + " given)");
    for (const auto& [key, value] : call_.keyword) {
      const auto it = std::find(names_.begin(), names_.end(), key);
      if (it == names_.end()) type_error(function_ + "() got an unexpected keyword argument '" + key + "'");
      if (static_cast<size_t>(it - names_.begin()) < call_.positional.size())
        type_error(function_ + "() got multiple values for argument '" + key + "'");
    }
  }

  const Value* find(size_t index) const {
    if (index < call_.positional.size()) return &call_.positional[index];
    for (const auto& [key, value] : call_.keyword)
      if (key == names_[index]) return &value;
    return nullptr;
  }
  bool has(size_t index) const { return find(index) != nullptr; }
  Value get(size_t index, Value fallback = Value()) const {
    const Value* v = find(index);
    return v ? *v : fallback;
  }
  Value required(size_t index) const {
    const Value* v = find(index);
    if (!v) type_error(function_ + "() missing required argument '" + names_[index] + "'");
    return *v;
  }
  bool flag(size_t index, bool fallback) const {
    const Value* v = find(index);
    return v ? truthy(*v) : fallback;
  }

 private:
  CallArgs& call_;
  std::string function_;
  std::vector<std::string> names_;
};

int64_t to_int_arg(const Value& v, const std::string& what) {
  if (v.kind == Kind::Int) return v.i;
  if (v.kind == Kind::Bool) return v.b ? 1 : 0;
  if (v.is_undefined()) fail_undefined(v);
  type_error("'" + type_name(v) + "' object cannot be interpreted as an integer (" + what + ")");
}

std::string as_text(const Value& v) { return py_str(v); }

std::optional<std::string> optional_text(const Value& v) {
  if (v.is_none() || v.is_undefined()) return std::nullopt;
  if (!v.is_string()) type_error("expected a string or None, not " + type_name(v));
  return v.str();
}

Value string_list(const std::vector<std::string>& parts) {
  List items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::string(p));
  return Value::make_list(std::move(items));
}

// ---- json.dumps ----

void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  auto hex4 = [&](uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\\u%04x", v);
    out += buf;
  };
  if (!ensure_ascii) {
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20)
            hex4(c);
          else
            out += static_cast<char>(c);
      }
    }
  } else {
    for (char32_t cp : to_code_points(s)) {
      switch (cp) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (cp < 0x20 || cp > 0x7E) {
            if (cp >= 0x10000) {
              const uint32_t v = static_cast<uint32_t>(cp) - 0x10000;
              hex4(0xD800 + (v >> 10));
              hex4(0xDC00 + (v & 0x3FF));
            } else {
              hex4(static_cast<uint32_t>(cp));
            }
          } else {
            out += static_cast<char>(cp);
          }
      }
    }
  }
  out += '"';
}

std::string json_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return float_repr(f);
}

void json_value(const Value& v, const JsonOptions& o, int depth, std::string& out) {
  const std::string item_sep = o.has_separators ? o.item_separator : (o.has_indent ? "," : ", ");
  const std::string key_sep = o.has_separators ? o.key_separator : ": ";
  auto newline = [&](int level) {
    out += '\n';
    for (int k = 0; k < level; ++k) out += o.indent;
  };
  switch (v.kind) {
    case Kind::None: out += "null"; return;
    case Kind::Bool: out += v.b ? "true" : "false"; return;
    case Kind::Int: out += std::to_string(v.i); return;
    case Kind::Float: out += json_float(v.f); return;
    case Kind::String: json_string(*v.s, o.ensure_ascii, out); return;
    case Kind::List: {
      if (!v.is_plain_list()) type_error("Object of type " + type_name(v) + " is not JSON serializable");
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += item_sep;
        if (o.has_indent) newline(depth + 1);
        json_value((*v.list)[i], o, depth + 1, out);
      }
      if (o.has_indent) newline(depth);
      out += ']';
      return;
    }
    case Kind::Dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, val] : v.dict->items) {
        std::string key;
        switch (k.kind) {
          case Kind::String: key = *k.s; break;
          case Kind::Int: key = std::to_string(k.i); break;
          case Kind::Float: key = json_float(k.f); break;
          case Kind::Bool: key = k.b ? "true" : "false"; break;
          case Kind::None: key = "null"; break;
          default: type_error("keys must be str, int, float, bool or None, not " + type_name(k));
        }
        items.emplace_back(key, &val);
      }
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      bool first = true;
      for (const auto& [key, val] : items) {
        if (!first) out += item_sep;
        first = false;
        if (o.has_indent) newline(depth + 1);
        json_string(key, o.ensure_ascii, out);
        out += key_sep;
        json_value(*val, o, depth + 1, out);
      }
      if (o.has_indent) newline(depth);
      out += '}';
      return;
    }
    default: type_error("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

// ---- methods ----

const std::set<std::string>& string_methods() {
  static const std::set<std::string> names = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
      "title", "capitalize", "replace", "find", "rfind", "count", "join", "format", "isdigit", "isalpha", "isalnum",
      "isspace", "isupper", "islower", "removeprefix", "removesuffix", "index", "rindex", "center", "ljust", "rjust",
      "zfill", "swapcase", "casefold", "partition", "rpartition", "encode", "expandtabs", "isnumeric", "isdecimal",
      "isidentifier", "isprintable", "istitle", "isascii", "maketrans", "translate", "format_map"};
  return names;
}

const std::set<std::string>& dict_methods() {
  static const std::set<std::string> names = {"items", "keys", "values", "get", "copy", "pop", "popitem",
                                              "setdefault", "update", "clear", "fromkeys"};
  return names;
}

const std::set<std::string>& list_methods() {
  static const std::set<std::string> names = {"index", "count", "copy", "append", "extend", "insert", "pop",
                                              "remove", "clear", "sort", "reverse"};
  return names;
}

bool is_modifying(const Value& obj, const std::string& name) {
  static const std::set<std::string> dict_modifying = {"pop", "popitem", "setdefault", "update", "clear"};
  static const std::set<std::string> list_modifying = {"append", "extend", "insert", "pop", "remove", "clear",
                                                       "sort", "reverse"};
  if (obj.kind == Kind::Dict) return dict_modifying.count(name) > 0;
  if (obj.kind == Kind::List && !obj.is_tuple) return list_modifying.count(name) > 0;
  return false;
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::make_undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.",
                               ErrorKind::Security);
}

bool prefix_matches(const std::string& s, const Value& prefix, bool at_end) {
  auto one = [&](const Value& p) {
    if (!p.is_string()) type_error("startswith/endswith first arg must be str or a tuple of str, not " + type_name(p));
    const std::string& x = p.str();
    if (x.size() > s.size()) return false;
    return at_end ? s.compare(s.size() - x.size(), x.size(), x) == 0 : s.compare(0, x.size(), x) == 0;
  };
  if (prefix.kind == Kind::List && prefix.is_tuple) {
    for (const Value& p : *prefix.list)
      if (one(p)) return true;
    return false;
  }
  return one(prefix);
}

bool all_code_points(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (char32_t cp : to_code_points(s))
    if (!pred(cp)) return false;
  return true;
}

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }
bool is_alpha(char32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
bool is_decimal(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_ND; }
bool is_numeric_cp(char32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}
bool is_alnum(char32_t cp) { return is_alpha(cp) || is_numeric_cp(cp); }

// str.islower(): some cased character and no upper-case or title-case ones (and the reverse for isupper).
bool case_test(const std::string& s, bool lower) {
  bool cased = false;
  for (char32_t cp : to_code_points(s)) {
    const auto c = category(cp);
    if (c == UTF8PROC_CATEGORY_LT) return false;
    if (c == UTF8PROC_CATEGORY_LU) {
      if (lower) return false;
      cased = true;
    } else if (c == UTF8PROC_CATEGORY_LL) {
      if (!lower) return false;
      cased = true;
    }
  }
  return cased;
}

// Python's str.find/rfind/count on code point offsets.
int64_t byte_to_code_point_offset(const std::string& s, size_t byte) { return code_point_count(std::string_view(s).substr(0, byte)); }

// str.format with {} / {0} / {name} fields and no format specs.
std::string py_format(const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      const size_t close = fmt.find('}', i);
      if (close == std::string::npos) throw Error(ErrorKind::Type, "Single '{' encountered in format string");
      const std::string field = fmt.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos)
        throw Error(ErrorKind::Unsupported, "unsupported construct 'str.format field {" + field + "}'");
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_index >= args.positional.size()) throw Error(ErrorKind::Type, "Replacement index out of range");
        v = &args.positional[auto_index++];
      } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        const size_t index = std::stoul(field);
        if (index >= args.positional.size()) throw Error(ErrorKind::Type, "Replacement index out of range");
        v = &args.positional[index];
      } else {
        for (const auto& [k, val] : args.keyword)
          if (k == field) v = &val;
        if (!v) throw Error(ErrorKind::Type, "KeyError: '" + field + "'");
      }
      out += py_str(*v);
      i = close;
    } else if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      out += '}';
    } else {
      out += c;
    }
  }
  return out;
}

// str.find / rfind / index / rindex (code-point offsets) and str.count.
Value search_method(const std::string& s, const std::string& name, CallArgs& call) {
  Args a(call, name, {"sub"});
  const Value sub = a.required(0);
  if (!sub.is_string()) type_error("must be str, not " + type_name(sub));
  if (name == "count") {
    if (sub.str().empty()) return Value::integer(code_point_count(s) + 1);
    int64_t n = 0;
    for (size_t at = s.find(sub.str()); at != std::string::npos; at = s.find(sub.str(), at + sub.str().size())) ++n;
    return Value::integer(n);
  }
  const size_t at = (name == "find" || name == "index") ? s.find(sub.str()) : s.rfind(sub.str());
  if (at == std::string::npos) {
    if (name == "index" || name == "rindex") type_error("substring not found");
    return Value::integer(-1);
  }
  return Value::integer(byte_to_code_point_offset(s, at));
}

Value join_method(const std::string& s, CallArgs& call) {
  Args a(call, "join", {"iterable"});
  std::string out;
  bool first = true;
  for (const Value& item : iterate(a.required(0))) {
    if (!item.is_string()) type_error("sequence item: expected str instance, " + type_name(item) + " found");
    if (!first) out += s;
    first = false;
    out += item.str();
  }
  return Value::string(out);
}

Value remove_affix_method(const std::string& s, const std::string& name, CallArgs& call) {
  Args a(call, name, {"affix"});
  const Value affix = a.required(0);
  if (!affix.is_string()) type_error("must be str, not " + type_name(affix));
  const std::string& x = affix.str();
  if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value::string(s.substr(x.size()));
  if (name == "removesuffix" && !x.empty() && x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
    return Value::string(s.substr(0, s.size() - x.size()));
  return Value::string(s);
}

Value call_string_method(const std::string& s, const std::string& name, CallArgs& call) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Args a(call, name, {"chars"});
    const StripSide side = name == "strip" ? StripSide::Both : name == "lstrip" ? StripSide::Left : StripSide::Right;
    return Value::string(py_strip(s, optional_text(a.get(0)), side));
  }
  if (name == "split" || name == "rsplit") {
    Args a(call, name, {"sep", "maxsplit"});
    const auto sep = optional_text(a.get(0));
    const int64_t maxsplit = a.has(1) ? to_int_arg(a.get(1), "maxsplit") : -1;
    if (sep && sep->empty()) throw Error(ErrorKind::Type, "empty separator");
    return string_list(name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    Args a(call, name, {"keepends"});
    if (a.flag(0, false)) throw Error(ErrorKind::Unsupported, "unsupported construct 'splitlines(keepends=True)'");
    return string_list(py_splitlines(s));
  }
  if (name == "startswith" || name == "endswith") {
    Args a(call, name, {"prefix"});
    return Value::boolean(prefix_matches(s, a.required(0), name == "endswith"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "casefold") {
    Args a(call, name, {});
    if (name == "upper") return Value::string(py_upper(s));
    if (name == "title") return Value::string(py_title(s));
    if (name == "capitalize") return Value::string(py_capitalize(s));
    return Value::string(py_lower(s));
  }
  if (name == "replace") {
    Args a(call, name, {"old", "new", "count"});
    const Value old = a.required(0), with = a.required(1);
    if (!old.is_string() || !with.is_string()) type_error("replace() arguments must be str");
    const int64_t count = a.has(2) ? to_int_arg(a.get(2), "count") : -1;
    return Value::string(py_replace(s, old.str(), with.str(), count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return search_method(s, name, call);
  }
  if (name == "join") return join_method(s, call);
  if (name == "format") return Value::string(py_format(s, call));
  if (name == "removeprefix" || name == "removesuffix") return remove_affix_method(s, name, call);
  if (name == "isdigit" || name == "isdecimal") return Value::boolean(all_code_points(s, is_decimal));
  if (name == "isnumeric") return Value::boolean(all_code_points(s, is_numeric_cp));
  if (name == "isalpha") return Value::boolean(all_code_points(s, is_alpha));
  if (name == "isalnum") return Value::boolean(all_code_points(s, is_alnum));
  if (name == "isspace") return Value::boolean(all_code_points(s, is_space));
  if (name == "isupper") return Value::boolean(case_test(s, false));
  if (name == "islower") return Value::boolean(case_test(s, true));
  throw Error(ErrorKind::Unsupported, "unsupported construct 'str." + name + "()'");
}

Value call_dict_method(const Value& d, const std::string& name, CallArgs& call) {
  if (name == "items" || name == "keys" || name == "values") {
    Args a(call, name, {});
    List out;
    for (const auto& [k, v] : d.dict->items) {
      if (name == "items")
        out.push_back(Value::make_list({k, v}, true));
      else
        out.push_back(name == "keys" ? k : v);
    }
    return Value::make_iterator(std::move(out), name == "items"  ? Flavor::DictItems
                                                : name == "keys" ? Flavor::DictKeys
                                                                 : Flavor::DictValues);
  }
  if (name == "get") {
    Args a(call, name, {"key", "default"});
    const Value* v = d.dict->find(a.required(0));
    return v ? *v : a.get(1, Value::none());
  }
  if (name == "copy") {
    Args a(call, name, {});
    Value copy = Value::make_dict();
    copy.dict->items = d.dict->items;
    return copy;
  }
  throw Error(ErrorKind::Unsupported, "unsupported construct 'dict." + name + "()'");
}

Value call_list_method(const Value& l, const std::string& name, CallArgs& call) {
  if (name == "index" || name == "count") {
    Args a(call, name, {"value"});
    const Value x = a.required(0);
    int64_t n = 0;
    for (size_t i = 0; i < l.list->size(); ++i) {
      if (py_equal((*l.list)[i], x)) {
        if (name == "index") return Value::integer(static_cast<int64_t>(i));
        ++n;
      }
    }
    if (name == "index") type_error(py_repr(x) + " is not in list");
    return Value::integer(n);
  }
  if (name == "copy") {
    Args a(call, name, {});
    return Value::make_list(*l.list);
  }
  throw Error(ErrorKind::Unsupported, "unsupported construct 'list." + name + "()'");
}

Value bound_method(const Value& obj, const std::string& name) {
  if (obj.kind == Kind::String)
    return Value::callable(name, [obj, name](CallArgs& a) { return call_string_method(obj.str(), name, a); });
  if (obj.kind == Kind::Dict)
    return Value::callable(name, [obj, name](CallArgs& a) { return call_dict_method(obj, name, a); });
  return Value::callable(name, [obj, name](CallArgs& a) { return call_list_method(obj, name, a); });
}

// The Python attribute NAME of OBJ if it has one (a method), else nullopt.
std::optional<Value> python_attribute(const Value& obj, const std::string& name) {
  if (obj.kind == Kind::String && string_methods().count(name)) return bound_method(obj, name);
  if (obj.kind == Kind::Dict && dict_methods().count(name)) {
    if (is_modifying(obj, name)) return unsafe(obj, name);
    return bound_method(obj, name);
  }
  if (obj.is_plain_list() && list_methods().count(name)) {
    if (obj.is_tuple && name != "index" && name != "count") return std::nullopt;
    if (is_modifying(obj, name)) return unsafe(obj, name);
    return bound_method(obj, name);
  }
  if (obj.kind == Kind::Namespace) {
    if (const Value* v = obj.dict->find(name)) return *v;
  }
  if (!name.empty() && name[0] == '_' && obj.kind != Kind::Dict && obj.kind != Kind::Namespace) {
    if (name.size() > 1 && name[1] == '_') return unsafe(obj, name);
  }
  return std::nullopt;
}

// OBJ[KEY] as Python gives it, nullopt where Python raises (missing key, index out of range, wrong type).
std::optional<Value> python_item(const Value& obj, const Value& key) {
  if (obj.kind == Kind::Dict) {
    if (const Value* v = obj.dict->find(key)) return *v;
    return std::nullopt;
  }
  if ((obj.is_plain_list() || obj.kind == Kind::String) && (key.kind == Kind::Int || key.kind == Kind::Bool)) {
    int64_t index = key.kind == Kind::Bool ? key.b : key.i;
    if (obj.kind == Kind::List) {
      const int64_t n = static_cast<int64_t>(obj.list->size());
      if (index < 0) index += n;
      if (index < 0 || index >= n) return std::nullopt;
      return (*obj.list)[static_cast<size_t>(index)];
    }
    const std::string& s = obj.str();
    if (is_ascii(s)) {
      const int64_t n = static_cast<int64_t>(s.size());
      if (index < 0) index += n;
      if (index < 0 || index >= n) return std::nullopt;
      return Value::string(std::string(1, s[static_cast<size_t>(index)]));
    }
    const std::u32string cps = to_code_points(s);
    const int64_t n = static_cast<int64_t>(cps.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return std::nullopt;
    return Value::string(to_utf8(std::u32string(1, cps[static_cast<size_t>(index)])));
  }
  return std::nullopt;
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (auto attr = python_attribute(obj, name)) return *attr;
  if (obj.kind == Kind::Dict)
    if (auto item = python_item(obj, Value::string(name))) return *item;
  return Value::make_undefined(missing_attribute_message(obj, name));
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (auto item = python_item(obj, key)) return *item;
  if (key.is_string())
    if (auto attr = python_attribute(obj, key.str())) return *attr;
  return Value::make_undefined(missing_element_message(obj, key));
}

Value get_slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto bound = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    return to_int_arg(v, "slice indices");
  };
  const int64_t step = bound(step_v).value_or(1);
  if (step == 0) throw Error(ErrorKind::Type, "slice step cannot be zero");
  std::u32string cps;
  int64_t n;
  if (obj.is_plain_list()) {
    n = static_cast<int64_t>(obj.list->size());
  } else if (obj.kind == Kind::String) {
    cps = to_code_points(obj.str());
    n = static_cast<int64_t>(cps.size());
  } else {
    return Value::make_undefined(object_type_repr(obj) + " has no element slice");
  }
  auto clamp = [&](std::optional<int64_t> v, int64_t def_pos, int64_t def_neg) {
    if (!v) return step > 0 ? def_pos : def_neg;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step > 0 ? 0 : -1;
    } else if (x >= n) {
      x = step > 0 ? n : n - 1;
    }
    return x;
  };
  const int64_t start = clamp(bound(start_v), 0, n - 1);
  const int64_t stop = clamp(bound(stop_v), n, -1);
  std::vector<int64_t> indices;
  if (step > 0)
    for (int64_t k = start; k < stop; k += step) indices.push_back(k);
  else
    for (int64_t k = start; k > stop; k += step) indices.push_back(k);
  if (obj.kind == Kind::List) {
    List out;
    for (int64_t k : indices) out.push_back((*obj.list)[static_cast<size_t>(k)]);
    return Value::make_list(std::move(out), obj.is_tuple);
  }
  std::u32string out;
  for (int64_t k : indices) out += cps[static_cast<size_t>(k)];
  return Value::string(to_utf8(out));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::String:
      if (!item.is_string()) {
        if (item.is_undefined()) fail_undefined(item);
        type_error("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::List:
      for (const Value& v : *container.list)
        if (py_equal(v, item)) return true;
      return false;
    case Kind::Dict: return container.dict->find(item) != nullptr;
    case Kind::Undefined: return false;
    default: type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

std::string to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  json_value(v, options, 0, out);
  return out;
}

// ---- filters ----

namespace {

using FilterFn = Value (*)(const Value&, CallArgs&);
using TestFn = bool (*)(const Value&, CallArgs&);

// A dotted attribute path ("a.b", or an integer for an index) as jinja2's make_attrgetter follows it.
Value attribute_path(const Value& item, const Value& path) {
  if (path.kind == Kind::Int) return get_item(item, path);
  Value v = item;
  const std::string p = py_str(path);
  size_t start = 0;
  while (true) {
    const size_t dot = p.find('.', start);
    const std::string part = p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = digits ? get_item(v, Value::integer(std::stoll(part))) : get_item(v, Value::string(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value lower_if_string(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.str()));
  return v;
}

Value f_tojson(const Value& v, CallArgs& call) {
  Args a(call, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions o;
  o.ensure_ascii = a.flag(0, false);
  const Value indent = a.get(1, Value::none());
  if (!indent.is_none()) {
    o.has_indent = true;
    if (indent.is_string())
      o.indent = indent.str();
    else
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, to_int_arg(indent, "indent"))), ' ');
  }
  const Value seps = a.get(2, Value::none());
  if (!seps.is_none()) {
    if (seps.kind != Kind::List || seps.list->size() != 2 || !(*seps.list)[0].is_string() || !(*seps.list)[1].is_string())
      type_error("separators must be a (item_separator, key_separator) pair of strings");
    o.has_separators = true;
    o.item_separator = (*seps.list)[0].str();
    o.key_separator = (*seps.list)[1].str();
  }
  o.sort_keys = a.flag(3, false);
  return Value::string(to_json(v, o));
}

Value f_trim(const Value& v, CallArgs& call) {
  Args a(call, "trim", {"chars"});
  return Value::string(py_strip(as_text(v), optional_text(a.get(0)), StripSide::Both));
}

Value f_length(const Value& v, CallArgs& call) {
  Args a(call, "length", {});
  return Value::integer(py_len(v));
}

Value f_upper(const Value& v, CallArgs& call) {
  Args a(call, "upper", {});
  return Value::string(py_upper(as_text(v)));
}

Value f_lower(const Value& v, CallArgs& call) {
  Args a(call, "lower", {});
  return Value::string(py_lower(as_text(v)));
}

Value f_capitalize(const Value& v, CallArgs& call) {
  Args a(call, "capitalize", {});
  return Value::string(py_capitalize(as_text(v)));
}

// jinja2's title filter: each piece after a run of [-\s({\[<] gets its first character upper-cased.
Value f_title(const Value& v, CallArgs& call) {
  Args a(call, "title", {});
  const std::u32string cps = to_code_points(as_text(v));
  auto is_separator = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_space(c); };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    const bool sep = is_separator(cps[i]);
    while (j < cps.size() && is_separator(cps[j]) == sep) ++j;
    const std::string piece = to_utf8(std::u32string_view(cps).substr(i, j - i));
    if (sep) {
      out += piece;
    } else {
      const std::string first = to_utf8(std::u32string_view(cps).substr(i, 1));
      out += py_upper(first) + py_lower(to_utf8(std::u32string_view(cps).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return Value::string(out);
}

Value f_replace(const Value& v, CallArgs& call) {
  Args a(call, "replace", {"old", "new", "count"});
  const Value count = a.get(2, Value::none());
  return Value::string(py_replace(as_text(v), as_text(a.required(0)), as_text(a.required(1)),
                                  count.is_none() ? -1 : to_int_arg(count, "count")));
}

Value f_items(const Value& v, CallArgs& call) {
  Args a(call, "items", {});
  if (v.is_undefined()) return Value::make_iterator({}, Flavor::Generator);
  if (v.kind != Kind::Dict) type_error("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, val] : v.dict->items) out.push_back(Value::make_list({k, val}, true));
  return Value::make_iterator(std::move(out), Flavor::Generator);
}

Value f_list(const Value& v, CallArgs& call) {
  Args a(call, "list", {});
  return Value::make_list(iterate(v));
}

Value f_string(const Value& v, CallArgs& call) {
  Args a(call, "string", {});
  return Value::string(as_text(v));
}

Value f_safe(const Value& v, CallArgs& call) {
  Args a(call, "safe", {});
  return Value::string(as_text(v));
}

Value f_escape(const Value& v, CallArgs& call) {
  Args a(call, "escape", {});
  std::string out;
  for (char c : as_text(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(out);
}

Value f_first(const Value& v, CallArgs& call) {
  Args a(call, "first", {});
  const List items = iterate(v);
  if (items.empty()) return Value::make_undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(const Value& v, CallArgs& call) {
  Args a(call, "last", {});
  if (v.is_iterator()) type_error("'" + type_name(v) + "' object is not reversible");
  const List items = iterate(v);
  if (items.empty()) return Value::make_undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_default(const Value& v, CallArgs& call) {
  Args a(call, "default", {"default_value", "boolean"});
  if (v.is_undefined() || (a.flag(1, false) && !truthy(v))) return a.get(0, Value::string(""));
  return v;
}

std::optional<double> parse_python_float(std::string text) {
  text = py_strip(text, std::nullopt, StripSide::Both);
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  if (text.empty()) return std::nullopt;
  const std::string lower = py_lower(text);
  const std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  const double sign = lower[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * HUGE_VAL;
  if (body == "nan") return std::nan("");
  for (char c : body)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == '+' || c == '-')) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return d;
}

Value f_int(const Value& v, CallArgs& call) {
  Args a(call, "int", {"default", "base"});
  const Value def = a.get(0, Value::integer(0));
  const int64_t base = a.has(1) ? to_int_arg(a.get(1), "base") : 10;
  switch (v.kind) {
    case Kind::Int: return v;
    case Kind::Bool: return Value::integer(v.b);
    case Kind::Float:
      if (std::isnan(v.f) || std::isinf(v.f)) return def;
      return Value::integer(static_cast<int64_t>(v.f));
    case Kind::String: {
      std::string text = py_strip(v.str(), std::nullopt, StripSide::Both);
      std::string digits = text;
      digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
      if (!digits.empty()) {
        char* end = nullptr;
        errno = 0;
        const long long n = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
        if (end == digits.c_str() + digits.size() && errno == 0 && digits.find(' ') == std::string::npos)
          return Value::integer(n);
      }
      if (auto d = parse_python_float(v.str())) {
        if (std::isnan(*d) || std::isinf(*d)) return def;
        return Value::integer(static_cast<int64_t>(*d));
      }
      return def;
    }
    case Kind::Undefined: fail_undefined(v);
    default: return def;
  }
}

Value f_float(const Value& v, CallArgs& call) {
  Args a(call, "float", {"default"});
  const Value def = a.get(0, Value::floating(0.0));
  switch (v.kind) {
    case Kind::Float: return v;
    case Kind::Int: return Value::floating(static_cast<double>(v.i));
    case Kind::Bool: return Value::floating(v.b ? 1.0 : 0.0);
    case Kind::String: {
      if (auto d = parse_python_float(v.str())) return Value::floating(*d);
      return def;
    }
    case Kind::Undefined: fail_undefined(v);
    default: return def;
  }
}

Value f_abs(const Value& v, CallArgs& call) {
  Args a(call, "abs", {});
  if (v.kind == Kind::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
  if (v.kind == Kind::Bool) return Value::integer(v.b);
  if (v.kind == Kind::Float) return Value::floating(std::fabs(v.f));
  if (v.is_undefined()) fail_undefined(v);
  type_error("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_round(const Value& v, CallArgs& call) {
  Args a(call, "round", {"precision", "method"});
  const int64_t precision = a.has(0) ? to_int_arg(a.get(0), "precision") : 0;
  const std::string method = a.has(1) ? as_text(a.get(1)) : "common";
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) type_error("type " + type_name(v) + " doesn't define __round__ method");
  if (method != "common" && method != "ceil" && method != "floor")
    throw Error(ErrorKind::Type, "method must be common, ceil or floor");
  if (v.kind != Kind::Float && method == "common") {
    const int64_t x = v.kind == Kind::Bool ? v.b : v.i;
    if (precision >= 0) return Value::integer(x);
    if (precision < -18) return Value::integer(0);
    int64_t scale = 1;
    for (int64_t k = 0; k < -precision; ++k) scale *= 10;
    int64_t q = x / scale, r = x % scale;  // round half to even, as Python's round(int, -n)
    if (r < 0) {
      r += scale;
      --q;
    }
    if (2 * r > scale || (2 * r == scale && (q % 2 != 0))) ++q;
    return Value::integer(q * scale);
  }
  const double x = as_double(v);
  if (method == "common") {
    if (!std::isfinite(x)) return Value::floating(x);
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), x);
    double r = std::strtod(buf, nullptr);
    if (precision < 0) {
      const double scale = std::pow(10.0, static_cast<double>(-precision));
      r = std::nearbyint(x / scale) * scale;
    }
    return Value::floating(r);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double r = method == "ceil" ? std::ceil(x * scale) / scale : std::floor(x * scale) / scale;
  return Value::floating(r);
}

Value f_join(const Value& v, CallArgs& call) {
  Args a(call, "join", {"d", "attribute"});
  const std::string sep = as_text(a.get(0, Value::string("")));
  const Value attribute = a.get(1, Value::none());
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += as_text(attribute.is_none() ? item : attribute_path(item, attribute));
  }
  return Value::string(out);
}

Value f_map(const Value& v, CallArgs& call) {
  List out;
  const List items = iterate(v);
  Value attribute;
  bool by_attribute = false;
  Value def;
  for (const auto& [k, val] : call.keyword) {
    if (k == "attribute") {
      attribute = val;
      by_attribute = true;
    } else if (k == "default") {
      def = val;
    }
  }
  if (by_attribute) {
    for (const Value& item : items) {
      Value x = attribute_path(item, attribute);
      if (x.is_undefined() && !def.is_undefined()) x = def;
      out.push_back(x);
    }
    return Value::make_iterator(std::move(out), Flavor::Generator);
  }
  if (call.positional.empty()) type_error("map requires a filter argument");
  const std::string filter = as_text(call.positional[0]);
  if (!has_filter(filter)) throw Error(ErrorKind::Unsupported, "unsupported construct 'filter " + filter + "'");
  for (const Value& item : items) {
    CallArgs rest;
    rest.positional.assign(call.positional.begin() + 1, call.positional.end());
    rest.keyword = call.keyword;
    out.push_back(apply_filter(filter, item, rest));
  }
  return Value::make_iterator(std::move(out), Flavor::Generator);
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& v, CallArgs& call, bool with_attribute, bool keep) {
  List out;
  if (with_attribute && call.positional.empty()) type_error("Missing parameter for attribute name");
  const Value attribute = with_attribute ? call.positional[0] : Value();
  const size_t test_at = with_attribute ? 1 : 0;
  std::string test;
  CallArgs test_args;
  if (call.positional.size() > test_at) {
    test = as_text(call.positional[test_at]);
    if (!has_test(test)) throw Error(ErrorKind::Type, "No test named '" + test + "'.");
    test_args.positional.assign(call.positional.begin() + static_cast<std::ptrdiff_t>(test_at) + 1, call.positional.end());
    test_args.keyword = call.keyword;
  }
  for (const Value& item : iterate(v)) {
    const Value x = with_attribute ? attribute_path(item, attribute) : item;
    bool ok;
    if (test.empty()) {
      ok = truthy(x);
    } else {
      CallArgs args = test_args;
      ok = apply_test(test, x, args);
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::make_iterator(std::move(out), Flavor::Generator);
}

Value f_select(const Value& v, CallArgs& call) { return select_items(v, call, false, true); }
Value f_reject(const Value& v, CallArgs& call) { return select_items(v, call, false, false); }
Value f_selectattr(const Value& v, CallArgs& call) { return select_items(v, call, true, true); }
Value f_rejectattr(const Value& v, CallArgs& call) { return select_items(v, call, true, false); }

Value f_attr(const Value& v, CallArgs& call) {
  Args a(call, "attr", {"name"});  // a Python attribute only, never an item
  const std::string name = as_text(a.required(0));
  if (v.is_undefined()) fail_undefined(v);
  if (auto attr = python_attribute(v, name)) return *attr;
  return Value::make_undefined(missing_attribute_message(v, name));
}

Value f_reverse(const Value& v, CallArgs& call) {
  Args a(call, "reverse", {});
  if (v.is_string()) {
    std::u32string cps = to_code_points(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value::string(to_utf8(cps));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  // reversed() of a list, tuple or dict is an iterator; of a generator, jinja2 falls back to a reversed list.
  if (v.is_iterator()) return Value::make_list(std::move(items));
  return Value::make_iterator(std::move(items), Flavor::ReverseIterator);
}

Value f_sort(const Value& v, CallArgs& call) {
  Args a(call, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.flag(0, false), case_sensitive = a.flag(1, false);
  const Value attribute = a.get(2, Value::none());
  List items = iterate(v);
  auto key = [&](const Value& item) {
    return lower_if_string(attribute.is_none() ? item : attribute_path(item, attribute), case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? py_less(key(y), key(x)) : py_less(key(x), key(y));
  });
  return Value::make_list(std::move(items));
}

Value f_dictsort(const Value& v, CallArgs& call) {
  Args a(call, "dictsort", {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = a.flag(0, false), reverse = a.flag(2, false);
  const std::string by = a.has(1) ? as_text(a.get(1)) : "key";
  if (by != "key" && by != "value") throw Error(ErrorKind::Type, "You can only sort by either \"key\" or \"value\"");
  if (v.kind != Kind::Dict) type_error("dictsort needs a mapping");
  List items;
  for (const auto& [k, val] : v.dict->items) items.push_back(Value::make_list({k, val}, true));
  const size_t at = by == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = lower_if_string((*x.list)[at], case_sensitive), ky = lower_if_string((*y.list)[at], case_sensitive);
    return reverse ? py_less(ky, kx) : py_less(kx, ky);
  });
  return Value::make_list(std::move(items));
}

Value f_unique(const Value& v, CallArgs& call) {
  Args a(call, "unique", {"case_sensitive", "attribute"});
  const bool case_sensitive = a.flag(0, false);
  const Value attribute = a.get(1, Value::none());
  List out, seen;
  for (const Value& item : iterate(v)) {
    const Value key = lower_if_string(attribute.is_none() ? item : attribute_path(item, attribute), case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::make_iterator(std::move(out), Flavor::Generator);
}

Value min_max(const Value& v, CallArgs& call, bool max) {
  Args a(call, max ? "max" : "min", {"case_sensitive", "attribute"});
  const bool case_sensitive = a.flag(0, false);
  const Value attribute = a.get(1, Value::none());
  const List items = iterate(v);
  if (items.empty()) return Value::make_undefined(std::string("No aggregated item, sequence was empty."));
  auto key = [&](const Value& item) {
    return lower_if_string(attribute.is_none() ? item : attribute_path(item, attribute), case_sensitive);
  };
  size_t best = 0;
  for (size_t k = 1; k < items.size(); ++k) {
    if (max ? py_less(key(items[best]), key(items[k])) : py_less(key(items[k]), key(items[best]))) best = k;
  }
  return items[best];
}

Value f_min(const Value& v, CallArgs& call) { return min_max(v, call, false); }
Value f_max(const Value& v, CallArgs& call) { return min_max(v, call, true); }

Value f_sum(const Value& v, CallArgs& call) {
  Args a(call, "sum", {"attribute", "start"});
  const Value attribute = a.get(0, Value::none());
  Value total = a.get(1, Value::integer(0));
  for (const Value& item : iterate(v)) {
    const Value x = attribute.is_none() ? item : attribute_path(item, attribute);
    if (!x.is_number() || !total.is_number())
      type_error("unsupported operand type(s) for +: '" + type_name(total) + "' and '" + type_name(x) + "'");
    if (total.kind == Kind::Float || x.kind == Kind::Float)
      total = Value::floating(as_double(total) + as_double(x));
    else
      total = Value::integer((total.kind == Kind::Bool ? total.b : total.i) + (x.kind == Kind::Bool ? x.b : x.i));
  }
  return total;
}

Value f_indent(const Value& v, CallArgs& call) {
  Args a(call, "indent", {"width", "first", "blank"});
  const Value width = a.get(0, Value::integer(4));
  const std::string indention = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::max<int64_t>(0, to_int_arg(width, "width"))), ' ');
  const bool first = a.flag(1, false), blank = a.flag(2, false);
  const std::string s = as_text(v) + "\n";
  const std::vector<std::string> lines = py_splitlines(s);
  std::string rv;
  if (blank) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) rv += "\n" + indention;
      rv += lines[k];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t k = 1; k < lines.size(); ++k) rv += "\n" + (lines[k].empty() ? lines[k] : indention + lines[k]);
  }
  if (first) rv = indention + rv;
  return Value::string(rv);
}

Value f_wordcount(const Value& v, CallArgs& call) {
  Args a(call, "wordcount", {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t cp : to_code_points(as_text(v))) {
    const bool word_char = cp == '_' || is_alnum(cp);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"abs", f_abs},         {"attr", f_attr},           {"capitalize", f_capitalize}, {"count", f_length},
      {"d", f_default},       {"default", f_default},     {"dictsort", f_dictsort},     {"e", f_escape},
      {"escape", f_escape},   {"first", f_first},         {"float", f_float},           {"forceescape", f_escape},
      {"indent", f_indent},   {"int", f_int},             {"items", f_items},           {"join", f_join},
      {"last", f_last},       {"length", f_length},       {"list", f_list},             {"lower", f_lower},
      {"map", f_map},         {"max", f_max},             {"min", f_min},               {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},      {"round", f_round},
      {"safe", f_safe},       {"select", f_select},       {"selectattr", f_selectattr}, {"sort", f_sort},
      {"string", f_string},   {"sum", f_sum},             {"title", f_title},           {"tojson", f_tojson},
      {"trim", f_trim},       {"unique", f_unique},       {"upper", f_upper},           {"wordcount", f_wordcount},
  };
  return table;
}

// ---- tests ----

bool t_defined(const Value& v, CallArgs&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, CallArgs&) { return v.is_undefined(); }
bool t_none(const Value& v, CallArgs&) { return v.is_none(); }
bool t_boolean(const Value& v, CallArgs&) { return v.kind == Kind::Bool; }
bool t_true(const Value& v, CallArgs&) { return v.kind == Kind::Bool && v.b; }
bool t_false(const Value& v, CallArgs&) { return v.kind == Kind::Bool && !v.b; }
bool t_integer(const Value& v, CallArgs&) { return v.kind == Kind::Int; }
bool t_float(const Value& v, CallArgs&) { return v.kind == Kind::Float; }
bool t_number(const Value& v, CallArgs&) { return v.is_number(); }
bool t_string(const Value& v, CallArgs&) { return v.is_string(); }
bool t_mapping(const Value& v, CallArgs&) { return v.kind == Kind::Dict; }
bool t_iterable(const Value& v, CallArgs&) {
  return v.kind == Kind::String || v.kind == Kind::List || v.kind == Kind::Dict || v.kind == Kind::Undefined;
}
bool t_sequence(const Value& v, CallArgs&) {
  return v.kind == Kind::String || v.is_plain_list() || v.kind == Kind::Dict || v.kind == Kind::Undefined;
}
bool t_callable(const Value& v, CallArgs&) { return v.kind == Kind::Callable || v.kind == Kind::Undefined; }
bool t_escaped(const Value&, CallArgs&) { return false; }

int64_t integer_operand(const Value& v) {
  if (v.kind == Kind::Int) return v.i;
  if (v.kind == Kind::Bool) return v.b;
  if (v.is_undefined()) fail_undefined(v);
  return 0;
}

bool t_even(const Value& v, CallArgs&) {
  if (v.kind == Kind::Float) return std::fmod(v.f, 2.0) == 0.0;
  if (!v.is_number() && !v.is_undefined()) type_error("not all arguments converted during string formatting");
  return integer_operand(v) % 2 == 0;
}
bool t_odd(const Value& v, CallArgs& a) { return !t_even(v, a); }
bool t_divisibleby(const Value& v, CallArgs& call) {
  Args a(call, "divisibleby", {"num"});
  const Value n = a.required(0);
  if (v.kind == Kind::Float || n.kind == Kind::Float) return std::fmod(as_double(v), as_double(n)) == 0.0;
  const int64_t d = integer_operand(n);
  if (d == 0) throw Error(ErrorKind::Type, "integer division or modulo by zero");
  const int64_t x = integer_operand(v);
  return ((x % d) + d) % d == 0;
}
bool t_eq(const Value& v, CallArgs& call) { return py_equal(v, Args(call, "eq", {"other"}).required(0)); }
bool t_ne(const Value& v, CallArgs& call) { return !py_equal(v, Args(call, "ne", {"other"}).required(0)); }
bool t_lt(const Value& v, CallArgs& call) { return py_less(v, Args(call, "lt", {"other"}).required(0)); }
bool t_gt(const Value& v, CallArgs& call) { return py_less(Args(call, "gt", {"other"}).required(0), v); }
bool t_le(const Value& v, CallArgs& call) {
  const Value o = Args(call, "le", {"other"}).required(0);
  return py_less(v, o) || py_equal(v, o);
}
bool t_ge(const Value& v, CallArgs& call) {
  const Value o = Args(call, "ge", {"other"}).required(0);
  return py_less(o, v) || py_equal(v, o);
}
bool t_in(const Value& v, CallArgs& call) { return contains(Args(call, "in", {"seq"}).required(0), v); }
bool t_sameas(const Value& v, CallArgs& call) {
  const Value o = Args(call, "sameas", {"other"}).required(0);
  if (v.kind != o.kind) return false;
  switch (v.kind) {
    case Kind::List: return v.list == o.list;
    case Kind::Dict:
    case Kind::Namespace: return v.dict == o.dict;
    case Kind::Callable: return v.fn == o.fn;
    case Kind::String: return v.s == o.s || *v.s == *o.s;
    default: return py_equal(v, o);
  }
}
bool t_lower(const Value& v, CallArgs&) { return case_test(as_text(v), true); }
bool t_upper(const Value& v, CallArgs&) { return case_test(as_text(v), false); }
bool t_filter(const Value& v, CallArgs&) { return v.is_string() && has_filter(v.str()); }
bool t_test(const Value& v, CallArgs&) { return v.is_string() && has_test(v.str()); }

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined},   {"divisibleby", t_divisibleby},
      {"eq", t_eq},           {"equalto", t_eq},        {"==", t_eq},             {"escaped", t_escaped},
      {"even", t_even},       {"false", t_false},       {"filter", t_filter},     {"float", t_float},
      {"ge", t_ge},           {">=", t_ge},             {"gt", t_gt},             {">", t_gt},
      {"greaterthan", t_gt},  {"in", t_in},             {"integer", t_integer},   {"iterable", t_iterable},
      {"le", t_le},           {"<=", t_le},             {"lower", t_lower},       {"lt", t_lt},
      {"<", t_lt},            {"lessthan", t_lt},       {"mapping", t_mapping},   {"ne", t_ne},
      {"!=", t_ne},           {"none", t_none},         {"number", t_number},     {"odd", t_odd},
      {"sameas", t_sameas},   {"sequence", t_sequence}, {"string", t_string},     {"test", t_test},
      {"true", t_true},       {"undefined", t_undefined}, {"upper", t_upper},
  };
  return table;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) > 0; }
bool has_test(const std::string& name) { return tests().count(name) > 0; }

bool is_jinja_builtin_filter(const std::string& name) {
  static const std::set<std::string> names = {
      "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
      "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
      "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr", "replace",
      "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title",
      "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"};
  return names.count(name) > 0;
}

bool is_jinja_builtin_test(const std::string& name) { return has_test(name); }

Value apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) throw Error(ErrorKind::Unsupported, "unsupported construct 'filter " + name + "'");
  return it->second(input, args);
}

bool apply_test(const std::string& name, const Value& input, CallArgs& args) {
  const auto it = tests().find(name);
  if (it == tests().end()) throw Error(ErrorKind::Unsupported, "unsupported construct 'test " + name + "'");
  return it->second(input, args);
}

}  // namespace lmzoo::jinja
