// Values of the chat-template interpreter: the Python types jinja2 templates see (Undefined, None, bool, int, float,
// str, list/tuple, dict with insertion order, namespace, callable) with Python's str(), repr(), ==, < and truth.
// Leaves out: sets, bytes, big integers (int is 64-bit), Markup (transformers renders without autoescape).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lmzoo::jinja {

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

// What Python type a List stands for: a list or tuple, an iterator that filters such as map and selectattr return
// (always true, no len(), no subscript), or a dict view (len() but no subscript).
enum class Flavor { Plain, Generator, ReverseIterator, DictItems, DictKeys, DictValues };

// What went wrong while parsing or rendering; chat_template.cpp turns it into a ChatTemplateError.
enum class ErrorKind {
  Syntax,       // the template does not parse (jinja2's TemplateSyntaxError)
  Unsupported,  // valid Jinja that this interpreter does not implement
  Raised,       // raise_exception(message) (jinja2's TemplateError)
  Undefined,    // an operation on an undefined value (jinja2's UndefinedError)
  Security,     // what the immutable sandbox refuses (jinja2's SecurityError)
  Type,         // a Python TypeError / ValueError while evaluating
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, int line = 0)
      : std::runtime_error(message), kind(kind), line(line) {}
  ErrorKind kind;
  int line;  // 1-based template line, 0 while not yet known
};

struct Value;
struct Dict;
using List = std::vector<Value>;

// Arguments of a call: positional, then name=value pairs in the order written.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

// Why a value is undefined: jinja2's message for using it, and the error a use raises.
struct UndefinedInfo {
  std::string message;
  ErrorKind error = ErrorKind::Undefined;
};

struct Value {
  Kind kind = Kind::Undefined;
  bool is_tuple = false;  // a List that Python would hold as a tuple (printed with parentheses)
  Flavor flavor = Flavor::Plain;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::shared_ptr<const std::string> s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // a Dict's items, or a Namespace's attributes
  std::shared_ptr<Callable> fn;
  std::shared_ptr<const UndefinedInfo> undefined;

  Value() = default;
  static Value make_undefined(std::string message, ErrorKind error = ErrorKind::Undefined);
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value string(std::string v);
  static Value make_list(List items = {}, bool tuple = false);
  static Value make_iterator(List items, Flavor flavor);
  static Value make_dict();
  static Value make_namespace();
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_mapping() const { return kind == Kind::Dict; }
  bool is_plain_list() const { return kind == Kind::List && flavor == Flavor::Plain; }
  bool is_iterator() const {
    return kind == Kind::List && (flavor == Flavor::Generator || flavor == Flavor::ReverseIterator);
  }
  const std::string& str() const { return *s; }
};

struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(const Value& key, Value value);
  void set(const std::string& key, Value value);
};

// The message jinja2's Undefined gives for OBJ.NAME / OBJ[KEY] that is missing.
std::string missing_attribute_message(const Value& obj, const std::string& name);
std::string missing_element_message(const Value& obj, const Value& key);

// Python's type name ("str", "int", "dict", "NoneType", ...) and jinja2's "dict object" form.
std::string type_name(const Value& v);
std::string object_type_repr(const Value& v);

bool truthy(const Value& v);
std::string py_str(const Value& v);   // str(v); Undefined gives ""
std::string py_repr(const Value& v);  // repr(v)
std::string float_repr(double v);     // repr(float): shortest round trip, Python's exponent rules
bool py_equal(const Value& a, const Value& b);
// a < b as Python orders numbers, strings and lists; a TypeError otherwise.
bool py_less(const Value& a, const Value& b);
// The items iterating V gives: a list's items, a dict's keys, a string's characters, nothing for Undefined.
List iterate(const Value& v);
// len(v); Undefined has length 0.
int64_t py_len(const Value& v);
double as_double(const Value& v);

}  // namespace lmzoo::jinja
