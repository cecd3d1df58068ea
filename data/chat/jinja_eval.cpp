// The chat-template renderer (jinja_eval.h): statements with jinja2's scopes and loop object, expressions with
// Python's operators, and transformers' globals. Leaves out: caller(), macro varargs/kwargs, recursive loops,
// the '%' string formatting operator.
#include "data/chat/jinja_eval.h"

#include <cmath>
#include <unordered_map>

#include "data/chat/jinja_filters.h"
#include "data/chat/jinja_text.h"

namespace lmzoo::jinja {
namespace {

enum class Flow { Normal, Break, Continue };

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr child_of(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

[[noreturn]] void type_error(const std::string& message) { throw Error(ErrorKind::Type, message); }

int64_t int_of(const Value& v) { return v.kind == Kind::Bool ? (v.b ? 1 : 0) : v.i; }

void require_defined(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
}

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  type_error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value add(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == Kind::Float || b.kind == Kind::Float) return Value::floating(as_double(a) + as_double(b));
    return Value::integer(int_of(a) + int_of(b));
  }
  if (a.is_string() && b.is_string()) return Value::string(a.str() + b.str());
  if (a.is_plain_list() && b.is_plain_list() && a.is_tuple == b.is_tuple) {
    List items = *a.list;
    items.insert(items.end(), b.list->begin(), b.list->end());
    return Value::make_list(std::move(items), a.is_tuple);
  }
  if (a.is_string()) type_error("can only concatenate str (not \"" + type_name(b) + "\") to str");
  if (a.kind == Kind::List)
    type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
  bad_operands("+", a, b);
}

// Numbers multiplied, or a string or list repeated by an int (either side).
Value multiply(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == Kind::Float || b.kind == Kind::Float) return Value::floating(as_double(a) * as_double(b));
    return Value::integer(int_of(a) * int_of(b));
  }
  const Value* seq = (a.is_string() || a.is_plain_list()) ? &a : (b.is_string() || b.is_plain_list()) ? &b : nullptr;
  const Value* count = seq == &a ? &b : &a;
  if (seq && (count->kind == Kind::Int || count->kind == Kind::Bool)) {
    const int64_t n = std::max<int64_t>(0, int_of(*count));
    if (seq->is_string()) {
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += seq->str();
      return Value::string(out);
    }
    List items;
    for (int64_t k = 0; k < n; ++k) items.insert(items.end(), seq->list->begin(), seq->list->end());
    return Value::make_list(std::move(items), seq->is_tuple);
  }
  if (seq) type_error("can't multiply sequence by non-int of type '" + type_name(*count) + "'");
  bad_operands("*", a, b);
}

// Python's float divmod for // and %: fmod, then the sign of the divisor, then floor with its rounding correction.
Value float_floor_div_or_mod(const std::string& op, double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  if (op == "%") return Value::floating(mod);
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, x / y);
  }
  return Value::floating(floordiv);
}

// // and % on numbers, with Python's signs and messages.
Value floor_div_or_mod(const std::string& op, const Value& a, const Value& b) {
  if (!(a.is_number() && b.is_number())) {
    if (op == "%" && a.is_string())
      throw Error(ErrorKind::Unsupported, "unsupported construct 'printf-style string formatting (%)'");
    bad_operands(op, a, b);
  }
  const bool any_float = a.kind == Kind::Float || b.kind == Kind::Float;
  if (as_double(b) == 0.0)
    throw Error(ErrorKind::Type, op == "//" ? (any_float ? "float floor division by zero" : "integer division or modulo by zero")
                                             : (any_float ? "float modulo" : "integer division or modulo by zero"));
  if (any_float) return float_floor_div_or_mod(op, as_double(a), as_double(b));
  const int64_t q = floor_div(int_of(a), int_of(b));
  return op == "//" ? Value::integer(q) : Value::integer(int_of(a) - q * int_of(b));
}

Value power(const Value& a, const Value& b) {
  if (!(a.is_number() && b.is_number())) bad_operands("** or pow()", a, b);
  if (a.kind != Kind::Float && b.kind != Kind::Float && int_of(b) >= 0) {
    int64_t result = 1, base = int_of(a);
    for (int64_t e = int_of(b); e > 0; e >>= 1) {
      if (e & 1) result *= base;
      base *= base;
    }
    return Value::integer(result);
  }
  if (as_double(a) == 0.0 && as_double(b) < 0) throw Error(ErrorKind::Type, "0.0 cannot be raised to a negative power");
  return Value::floating(std::pow(as_double(a), as_double(b)));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::string(py_str(a) + py_str(b));
  require_defined(a);
  require_defined(b);
  const bool numbers = a.is_number() && b.is_number();
  const bool any_float = a.kind == Kind::Float || b.kind == Kind::Float;
  if (op == "+") return add(a, b);
  if (op == "-") {
    if (!numbers) bad_operands("-", a, b);
    return any_float ? Value::floating(as_double(a) - as_double(b)) : Value::integer(int_of(a) - int_of(b));
  }
  if (op == "*") return multiply(a, b);
  if (op == "/") {
    if (!numbers) bad_operands("/", a, b);
    if (as_double(b) == 0.0) throw Error(ErrorKind::Type, any_float ? "float division by zero" : "division by zero");
    return Value::floating(as_double(a) / as_double(b));
  }
  if (op == "//" || op == "%") return floor_div_or_mod(op, a, b);
  if (op == "**") return power(a, b);
  throw Error(ErrorKind::Unsupported, "unsupported construct 'operator " + op + "'");
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  require_defined(a);
  require_defined(b);
  if (op == "<") return py_less(a, b);
  if (op == ">") return py_less(b, a);
  if (op == "<=") return py_less(a, b) || py_equal(a, b);
  if (op == ">=") return py_less(b, a) || py_equal(a, b);
  throw Error(ErrorKind::Unsupported, "unsupported construct 'operator " + op + "'");
}

class Renderer {
 public:
  Renderer(const RenderOptions& options, std::string& out) : options_(options), out_(&out), top_(&out) {
    install_globals();
  }

  std::vector<std::pair<size_t, size_t>> spans;

  Flow exec_body(const Body& body, const ScopePtr& scope) {
    for (const StmtPtr& s : body) {
      const Flow f = exec(*s, scope);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

 private:
  Flow exec(const Stmt& s, const ScopePtr& scope) {
    try {
      return exec_unchecked(s, scope);
    } catch (Error& e) {
      if (e.line == 0) e.line = s.line;
      throw;
    }
  }

  std::string render_to_string(const Body& body, const ScopePtr& scope) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    try {
      exec_body(body, scope);
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    return buffer;
  }

  Flow exec_unchecked(const Stmt& s, const ScopePtr& scope) {
    switch (s.kind) {
      case StmtKind::Text: *out_ += s.text; return Flow::Normal;
      case StmtKind::Print: *out_ += py_str(eval(*s.expr, scope)); return Flow::Normal;
      case StmtKind::If:
        return truthy(eval(*s.expr, scope)) ? exec_body(s.body, scope) : exec_body(s.else_body, scope);
      case StmtKind::For: return exec_for(s, scope);
      case StmtKind::Set: {
        Value v = eval(*s.expr, scope);
        if (!s.attribute_owner.empty()) {
          const Value owner = lookup(s.attribute_owner, scope);
          if (owner.kind != Kind::Namespace)
            throw Error(ErrorKind::Type, "cannot assign attribute on non-namespace object");
          owner.dict->set(s.targets[0], std::move(v));
        } else {
          assign(s, v, *scope);
        }
        return Flow::Normal;
      }
      case StmtKind::SetBlock: {
        Value v = Value::string(render_to_string(s.body, child_of(scope)));
        if (s.expr) {
          auto filter_scope = child_of(scope);
          filter_scope->vars["__body__"] = v;
          v = eval(*s.expr, filter_scope);
        }
        scope->vars[s.targets[0]] = v;
        return Flow::Normal;
      }
      case StmtKind::Macro: scope->vars[s.targets[0]] = make_macro(s, scope); return Flow::Normal;
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
      case StmtKind::FilterBlock: {
        auto filter_scope = child_of(scope);
        filter_scope->vars["__body__"] = Value::string(render_to_string(s.body, scope));
        *out_ += py_str(eval(*s.expr, filter_scope));
        return Flow::Normal;
      }
      case StmtKind::With: {
        auto inner = child_of(scope);
        for (size_t k = 0; k < s.targets.size(); ++k) inner->vars[s.targets[k]] = eval(*s.values[k], scope);
        return exec_body(s.body, inner);
      }
      case StmtKind::Generation: {
        const std::string text = render_to_string(s.body, child_of(scope));
        const size_t begin = out_->size();
        *out_ += text;
        // Spans are offsets into the final text: only a block rendered straight into it (not inside a macro,
        // a set block or a filter block, whose text lands elsewhere) has one.
        if (out_ == top_) spans.emplace_back(begin, out_->size());
        return Flow::Normal;
      }
    }
    return Flow::Normal;
  }

  void assign(const Stmt& s, const Value& v, Scope& scope) {
    if (!s.target_tuple) {
      scope.vars[s.targets[0]] = v;
      return;
    }
    const List items = iterate(v);
    if (items.size() < s.targets.size())
      type_error("not enough values to unpack (expected " + std::to_string(s.targets.size()) + ", got " +
                 std::to_string(items.size()) + ")");
    if (items.size() > s.targets.size())
      type_error("too many values to unpack (expected " + std::to_string(s.targets.size()) + ")");
    for (size_t k = 0; k < items.size(); ++k) scope.vars[s.targets[k]] = items[k];
  }

  // jinja2's for: the body's assignments live in a scope made afresh for each iteration (a name read before it is
  // set reads the outer value every time); the else body runs when no iteration reached the end of the body
  // (break and continue both skip jinja2's "iterated" marker).
  Flow exec_for(const Stmt& s, const ScopePtr& scope) {
    const Value iterable = eval(*s.expr, scope);
    if (iterable.kind != Kind::List && iterable.kind != Kind::Dict && iterable.kind != Kind::String &&
        iterable.kind != Kind::Undefined)
      type_error("'" + type_name(iterable) + "' object is not iterable");
    List items = iterate(iterable);
    if (s.condition) {
      List kept;
      for (const Value& item : items) {
        auto filter_scope = child_of(scope);
        assign(s, item, *filter_scope);
        if (truthy(eval(*s.condition, filter_scope))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    bool completed = false;
    for (int64_t k = 0; k < n; ++k) {
      auto loop_scope = child_of(scope);
      const Value& item = items[static_cast<size_t>(k)];
      assign(s, item, *loop_scope);
      Value loop = Value::make_dict();
      Dict& d = *loop.dict;
      d.set("index", Value::integer(k + 1));
      d.set("index0", Value::integer(k));
      d.set("revindex", Value::integer(n - k));
      d.set("revindex0", Value::integer(n - k - 1));
      d.set("first", Value::boolean(k == 0));
      d.set("last", Value::boolean(k == n - 1));
      d.set("length", Value::integer(n));
      d.set("depth", Value::integer(1));
      d.set("depth0", Value::integer(0));
      if (k > 0) d.set("previtem", items[static_cast<size_t>(k - 1)]);
      if (k + 1 < n) d.set("nextitem", items[static_cast<size_t>(k + 1)]);
      d.set("cycle", Value::callable("cycle", [k](CallArgs& a) {
              if (a.positional.empty()) type_error("no items for cycling given");
              return a.positional[static_cast<size_t>(k) % a.positional.size()];
            }));
      loop_scope->vars["loop"] = loop;
      const Flow f = exec_body(s.body, loop_scope);
      if (f == Flow::Normal) completed = true;
      if (f == Flow::Break) break;
    }
    if (!completed) return exec_body(s.else_body, child_of(scope));
    return Flow::Normal;
  }

  Value make_macro(const Stmt& s, const ScopePtr& scope) {
    const Stmt* macro = &s;
    return Value::callable(s.targets[0], [this, macro, scope](CallArgs& args) {
      if (++depth_ > 500) {
        --depth_;
        throw Error(ErrorKind::Type, "maximum recursion depth exceeded in macro '" + macro->targets[0] + "'");
      }
      auto inner = child_of(scope);
      const auto& params = macro->params;
      if (args.positional.size() > params.size())
        type_error("macro '" + macro->targets[0] + "' takes not more than " + std::to_string(params.size()) +
                   " argument(s)");
      for (const auto& [key, value] : args.keyword) {
        bool known = false;
        for (const auto& p : params) known = known || p.first == key;
        if (!known) type_error("macro '" + macro->targets[0] + "' takes no keyword argument '" + key + "'");
      }
      for (size_t k = 0; k < params.size(); ++k) {
        const std::string& name = params[k].first;
        if (k < args.positional.size()) {
          inner->vars[name] = args.positional[k];
          continue;
        }
        const Value* given = nullptr;
        for (const auto& [key, value] : args.keyword)
          if (key == name) given = &value;
        if (given)
          inner->vars[name] = *given;
        else if (params[k].second)
          inner->vars[name] = eval(*params[k].second, inner);
        else
          inner->vars[name] = Value::make_undefined("parameter '" + name + "' was not provided");
      }
      std::string text;
      try {
        text = render_to_string(macro->body, inner);
      } catch (...) {
        --depth_;
        throw;
      }
      --depth_;
      return Value::string(text);
    });
  }

  Value lookup(const std::string& name, const ScopePtr& scope) const {
    for (const Scope* s = scope.get(); s; s = s->parent.get()) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    const auto g = globals_.find(name);
    if (g != globals_.end()) return g->second;
    return Value::make_undefined("'" + name + "' is undefined");
  }

  CallArgs eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
    CallArgs args;
    for (size_t k = first; k < e.children.size(); ++k) args.positional.push_back(eval(*e.children[k], scope));
    if (e.star_args)
      for (const Value& v : iterate(eval(*e.star_args, scope))) args.positional.push_back(v);
    for (const auto& [key, expr] : e.keywords) args.keyword.emplace_back(key, eval(*expr, scope));
    if (e.star_kwargs) {
      const Value kw = eval(*e.star_kwargs, scope);
      if (kw.kind != Kind::Dict) type_error("argument after ** must be a mapping, not " + type_name(kw));
      for (const auto& [k, v] : kw.dict->items) args.keyword.emplace_back(py_str(k), v);
    }
    return args;
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    try {
      return eval_unchecked(e, scope);
    } catch (Error& err) {
      if (err.line == 0) err.line = e.line;
      throw;
    }
  }

  Value eval_unchecked(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case ExprKind::Constant: return e.value;
      case ExprKind::Name: return lookup(e.name, scope);
      case ExprKind::List:
      case ExprKind::Tuple: {
        List items;
        items.reserve(e.children.size());
        for (const ExprPtr& c : e.children) items.push_back(eval(*c, scope));
        return Value::make_list(std::move(items), e.kind == ExprKind::Tuple);
      }
      case ExprKind::Dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.children.size(); k += 2) {
          const Value key = eval(*e.children[k], scope);
          if (key.kind == Kind::List && !key.is_tuple) type_error("unhashable type: 'list'");
          if (key.kind == Kind::Dict) type_error("unhashable type: 'dict'");
          d.dict->set(key, eval(*e.children[k + 1], scope));
        }
        return d;
      }
      case ExprKind::GetAttr: return get_attribute(eval(*e.children[0], scope), e.name);
      case ExprKind::GetItem: {
        const Value obj = eval(*e.children[0], scope);
        const Expr& index = *e.children[1];
        if (index.kind == ExprKind::Slice) {
          auto part = [&](const ExprPtr& p) { return p ? eval(*p, scope) : Value::none(); };
          return get_slice(obj, part(index.children[0]), part(index.children[1]), part(index.children[2]));
        }
        return get_item(obj, eval(index, scope));
      }
      case ExprKind::Slice: throw Error(ErrorKind::Syntax, "a slice outside a subscript");
      case ExprKind::Call: {
        const Value callee = eval(*e.children[0], scope);
        if (callee.is_undefined()) fail_undefined(callee);
        if (callee.kind != Kind::Callable) type_error("'" + type_name(callee) + "' object is not callable");
        CallArgs args = eval_args(e, 1, scope);
        return callee.fn->fn(args);
      }
      case ExprKind::Filter: {
        const Value input = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, 1, scope);
        return apply_filter(e.name, input, args);
      }
      case ExprKind::Test: {
        const Value input = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, 1, scope);
        const bool result = apply_test(e.name, input, args);
        return Value::boolean(e.negated ? !result : result);
      }
      case ExprKind::Unary: {
        const Value v = eval(*e.children[0], scope);
        if (e.name == "not") return Value::boolean(!truthy(v));
        require_defined(v);
        if (!v.is_number()) type_error("bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
        if (e.name == "-") return v.kind == Kind::Float ? Value::floating(-v.f) : Value::integer(-int_of(v));
        return v.kind == Kind::Float ? v : Value::integer(int_of(v));
      }
      case ExprKind::Binary: return binary_op(e.name, eval(*e.children[0], scope), eval(*e.children[1], scope));
      case ExprKind::And: {
        Value left = eval(*e.children[0], scope);
        return truthy(left) ? eval(*e.children[1], scope) : left;
      }
      case ExprKind::Or: {
        Value left = eval(*e.children[0], scope);
        return truthy(left) ? left : eval(*e.children[1], scope);
      }
      case ExprKind::Compare: {
        Value left = eval(*e.children[0], scope);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.children[k + 1], scope);
          if (!compare(e.ops[k], left, right)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case ExprKind::Conditional: {
        if (truthy(eval(*e.children[1], scope))) return eval(*e.children[0], scope);
        if (e.children[2]) return eval(*e.children[2], scope);
        return Value::make_undefined("the inline if-expression on line " + std::to_string(e.line) +
                                     " evaluated to false and no else section was defined.");
      }
    }
    throw Error(ErrorKind::Unsupported, "unsupported construct 'expression'");
  }

  void install_globals() {
    globals_["range"] = Value::callable("range", [](CallArgs& a) {
      if (!a.keyword.empty()) type_error("range() takes no keyword arguments");
      if (a.positional.empty() || a.positional.size() > 3)
        type_error("range expected at most 3 arguments, got " + std::to_string(a.positional.size()));
      for (const Value& v : a.positional) {
        require_defined(v);
        if (v.kind != Kind::Int && v.kind != Kind::Bool)
          type_error("'" + type_name(v) + "' object cannot be interpreted as an integer");
      }
      int64_t start = 0, stop, step = 1;
      if (a.positional.size() == 1) {
        stop = int_of(a.positional[0]);
      } else {
        start = int_of(a.positional[0]);
        stop = int_of(a.positional[1]);
        if (a.positional.size() == 3) step = int_of(a.positional[2]);
      }
      if (step == 0) type_error("range() arg 3 must not be zero");
      List items;
      for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
        if (items.size() >= 100000)
          throw Error(ErrorKind::Security,
                      "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        items.push_back(Value::integer(k));
      }
      return Value::make_list(std::move(items));
    });
    globals_["dict"] = Value::callable("dict", [](CallArgs& a) {
      Value d = Value::make_dict();
      for (const Value& p : a.positional) {
        if (p.kind == Kind::Dict) {
          for (const auto& [k, v] : p.dict->items) d.dict->set(k, v);
        } else {
          for (const Value& pair : iterate(p)) {
            const List kv = iterate(pair);
            if (kv.size() != 2) type_error("dictionary update sequence element has wrong length");
            d.dict->set(kv[0], kv[1]);
          }
        }
      }
      for (const auto& [k, v] : a.keyword) d.dict->set(k, v);
      return d;
    });
    globals_["namespace"] = Value::callable("namespace", [](CallArgs& a) {
      Value ns = Value::make_namespace();
      if (a.positional.size() > 1) type_error("namespace expected at most 1 positional argument");
      for (const Value& p : a.positional) {
        if (p.kind == Kind::Dict) {
          for (const auto& [k, v] : p.dict->items) ns.dict->set(k, v);
        } else {
          for (const Value& pair : iterate(p)) {
            const List kv = iterate(pair);
            if (kv.size() != 2) type_error("dictionary update sequence element has wrong length");
            ns.dict->set(kv[0], kv[1]);
          }
        }
      }
      for (const auto& [k, v] : a.keyword) ns.dict->set(k, v);
      return ns;
    });
    globals_["raise_exception"] = Value::callable("raise_exception", [](CallArgs& a) -> Value {
      std::string message;
      if (!a.positional.empty()) message = py_str(a.positional[0]);
      for (const auto& [k, v] : a.keyword)
        if (k == "message") message = py_str(v);
      throw Error(ErrorKind::Raised, message);
    });
    globals_["strftime_now"] = Value::callable("strftime_now", [this](CallArgs& a) {
      if (a.positional.size() != 1 || !a.positional[0].is_string())
        type_error("strftime_now() takes one format string");
      std::tm tm{};
      if (options_.now) {
        tm = options_.now();
      } else {
        const std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
      }
      const std::string& format = a.positional[0].str();
      if (format.empty()) return Value::string("");
      std::vector<char> buf(format.size() * 8 + 256);
      const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
      return Value::string(std::string(buf.data(), n));
    });
    for (const char* name : {"cycler", "joiner", "lipsum"}) {
      const std::string n = name;
      globals_[n] = Value::callable(n, [n](CallArgs&) -> Value {
        throw Error(ErrorKind::Unsupported, "unsupported construct '" + n + "()'");
      });
    }
  }

  const RenderOptions& options_;
  std::string* out_;
  const std::string* top_;  // the final text
  std::unordered_map<std::string, Value> globals_;
  int depth_ = 0;
};

}  // namespace

RenderOutput render(const Template& tpl, const std::vector<std::pair<std::string, Value>>& context,
                    const RenderOptions& options) {
  RenderOutput result;
  Renderer renderer(options, result.text);
  auto root = std::make_shared<Scope>();
  for (const auto& [name, value] : context) root->vars[name] = value;
  renderer.exec_body(tpl.body, root);
  result.generation_spans = std::move(renderer.spans);
  return result;
}

}  // namespace lmzoo::jinja
