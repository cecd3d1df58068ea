// Python semantics of the interpreter's values (jinja_value.h): str(), repr(), float repr, ==, <, truth, len,
// iteration. Leaves out: set and bytes types, integers past 64 bits.
#include "data/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "data/chat/jinja_text.h"

namespace lmzoo::jinja {

Value Value::make_undefined(std::string message, ErrorKind error) {
  Value v;
  v.undefined = std::make_shared<UndefinedInfo>(UndefinedInfo{std::move(message), error});
  return v;
}

Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.b = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.i = i;
  return v;
}

Value Value::floating(double f) {
  Value v;
  v.kind = Kind::Float;
  v.f = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind = Kind::String;
  v.s = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::make_list(List items, bool tuple) {
  Value v;
  v.kind = Kind::List;
  v.is_tuple = tuple;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::make_iterator(List items, Flavor flavor) {
  Value v = make_list(std::move(items));
  v.flavor = flavor;
  return v;
}

Value Value::make_dict() {
  Value v;
  v.kind = Kind::Dict;
  v.dict = std::make_shared<Dict>();
  return v;
}

Value Value::make_namespace() {
  Value v;
  v.kind = Kind::Namespace;
  v.dict = std::make_shared<Dict>();
  return v;
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
  Value v;
  v.kind = Kind::Callable;
  v.fn = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (py_equal(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k.kind == Kind::String && *k.s == key) return &v;
  return nullptr;
}

void Dict::set(const Value& key, Value value) {
  for (auto& [k, v] : items)
    if (py_equal(k, key)) {
      v = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

void Dict::set(const std::string& key, Value value) { set(Value::string(key), std::move(value)); }

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List:
      switch (v.flavor) {
        case Flavor::Generator: return "generator";
        case Flavor::ReverseIterator: return "list_reverseiterator";
        case Flavor::DictItems: return "dict_items";
        case Flavor::DictKeys: return "dict_keys";
        case Flavor::DictValues: return "dict_values";
        case Flavor::Plain: break;
      }
      return v.is_tuple ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.kind == Kind::None) return "None";
  if (v.kind == Kind::Namespace) return "jinja2.utils.Namespace object";
  return type_name(v) + " object";
}

std::string missing_attribute_message(const Value& obj, const std::string& name) {
  return py_repr(Value::string(object_type_repr(obj))) + " has no attribute " + py_repr(Value::string(name));
}

std::string missing_element_message(const Value& obj, const Value& key) {
  if (key.kind == Kind::String) return missing_attribute_message(obj, key.str());
  return object_type_repr(obj) + " has no element " + py_repr(key);
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return v.b;
    case Kind::Int: return v.i != 0;
    case Kind::Float: return v.f != 0.0;
    case Kind::String: return !v.s->empty();
    case Kind::List: return v.is_iterator() || !v.list->empty();
    case Kind::Dict: return !v.dict->items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for exponents -4..15, else d.ddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  const size_t epos = sci.find('e');
  std::string digits = sci.substr(0, epos);
  const int exponent = std::stoi(sci.substr(epos + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof(e), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += e;
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out = digits + std::string(int_digits - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
    }
  }
  return negative ? "-" + out : out;
}

namespace {

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : to_code_points(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x80 ? (cp < 0x20 || cp == 0x7F) : !is_printable(cp)) {
      char buf[16];
      if (cp < 0x100)
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000)
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      else
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      append_code_point(cp, out);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string py_repr(const Value& v) {
  switch (v.kind) {
    case Kind::String: return string_repr(*v.s);
    case Kind::List: {
      if (v.is_iterator())
        throw Error(ErrorKind::Unsupported,
                    "unsupported construct 'printing a " + type_name(v) + "' (Python prints its address; add |list)");
      if (v.flavor != Flavor::Plain) {
        Value plain = Value::make_list(*v.list);
        return type_name(v) + "(" + py_repr(plain) + ")";
      }
      std::string out = v.is_tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        out += py_repr((*v.list)[i]);
      }
      if (v.is_tuple && v.list->size() == 1) out += ",";
      out += v.is_tuple ? ")" : "]";
      return out;
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(k) + ": " + py_repr(val);
      }
      return out + "}";
    }
    case Kind::Undefined: return "Undefined";
    default: return py_str(v);
  }
}

std::string py_str(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return v.b ? "True" : "False";
    case Kind::Int: return std::to_string(v.i);
    case Kind::Float: return float_repr(v.f);
    case Kind::String: return *v.s;
    case Kind::List:
    case Kind::Dict: return py_repr(v);
    case Kind::Namespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, val] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(k) + ": " + py_repr(val);
      }
      return out + "}>";
    }
    case Kind::Callable: return "<function " + v.fn->name + ">";
  }
  return "";
}

double as_double(const Value& v) {
  if (v.kind == Kind::Float) return v.f;
  if (v.kind == Kind::Int) return static_cast<double>(v.i);
  if (v.kind == Kind::Bool) return v.b ? 1.0 : 0.0;
  return 0.0;
}

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::Float && b.kind != Kind::Float) {
      const int64_t x = a.kind == Kind::Bool ? a.b : a.i;
      const int64_t y = b.kind == Kind::Bool ? b.b : b.i;
      return x == y;
    }
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  if (a.kind == Kind::List && a.flavor != b.flavor) return false;
  if (a.is_iterator()) return a.list == b.list;
  switch (a.kind) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return *a.s == *b.s;
    case Kind::List: {
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!py_equal((*a.list)[i], (*b.list)[i])) return false;
      return true;
    }
    case Kind::Dict: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    case Kind::Namespace: return a.dict == b.dict;
    case Kind::Callable: return a.fn == b.fn;
    default: return false;
  }
}

bool py_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::Float && b.kind != Kind::Float) {
      const int64_t x = a.kind == Kind::Bool ? a.b : a.i;
      const int64_t y = b.kind == Kind::Bool ? b.b : b.i;
      return x < y;
    }
    return as_double(a) < as_double(b);
  }
  if (a.kind == Kind::String && b.kind == Kind::String) return *a.s < *b.s;  // UTF-8 bytes order as code points
  if (a.is_plain_list() && b.is_plain_list() && a.is_tuple == b.is_tuple) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t i = 0; i < n; ++i) {
      const Value& x = (*a.list)[i];
      const Value& y = (*b.list)[i];
      if (!py_equal(x, y)) return py_less(x, y);
    }
    return a.list->size() < b.list->size();
  }
  throw Error(ErrorKind::Type,
              "'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return {};
    case Kind::List: return *v.list;
    case Kind::Dict: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::String: {
      List chars;
      std::string one;
      for (char32_t cp : to_code_points(*v.s)) {
        one.clear();
        append_code_point(cp, one);
        chars.push_back(Value::string(one));
      }
      return chars;
    }
    default: throw Error(ErrorKind::Type, "'" + type_name(v) + "' object is not iterable");
  }
}

int64_t py_len(const Value& v) {
  switch (v.kind) {
    case Kind::Undefined: return 0;
    case Kind::String: return code_point_count(*v.s);
    case Kind::List:
      if (v.is_iterator()) break;
      return static_cast<int64_t>(v.list->size());
    case Kind::Dict: return static_cast<int64_t>(v.dict->items.size());
    default: break;
  }
  {
    throw Error(ErrorKind::Type, "object of type '" + type_name(v) + "' has no len()");
  }
}

}  // namespace lmzoo::jinja
