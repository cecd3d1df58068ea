// The syntax tree of a parsed chat template: expressions and statements as jinja2's parser builds them (its
// precedence: filters and tests bind tighter than arithmetic, ** is left-associative).
// Leaves out: template inheritance, includes, imports, call blocks (the parser refuses them by name).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/chat/jinja_value.h"

namespace lmzoo::jinja {

enum class ExprKind {
  Constant,   // value
  Name,       // name
  List,       // children
  Tuple,      // children
  Dict,       // children: key, value, key, value, ...
  GetAttr,    // children[0].name
  GetItem,    // children[0][children[1]]
  Slice,      // children: start, stop, step (null where absent)
  Call,       // children[0](children[1..], keywords)
  Filter,     // children[0] | name(children[1..], keywords)
  Test,       // children[0] is [not] name(children[1..], keywords); negated
  Unary,      // op ("-", "+", "not") children[0]
  Binary,     // children[0] op children[1]: + - * / // % ** ~
  And,
  Or,
  Compare,    // children[0] ops[0] children[1] ops[1] children[2] ...: == != < <= > >= in notin
  Conditional,  // children: value, condition, else (null where absent)
};

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;  // Name, GetAttr, Filter, Test; the operator of Unary and Binary
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star_args, star_kwargs;  // *args and **kwargs of a Call, Filter or Test
  std::vector<std::string> ops;    // Compare's operators
  bool negated = false;            // Test: `is not`
};

enum class StmtKind {
  Text,        // text
  Print,       // {{ expr }}
  If,          // expr, body, else_body (elif chains nest an If in else_body)
  For,         // targets in expr [if condition] body [else else_body]
  Set,         // targets (or attribute target) = expr
  SetBlock,    // {% set name %}body{% endset %}, optional filter chain in expr
  Macro,       // name(params = defaults) body
  Break,
  Continue,
  FilterBlock,  // {% filter f %}body{% endfilter %}: expr is the filter chain applied to a Name "__body__"
  With,         // {% with a = 1 %}body{% endwith %}
  Generation,   // transformers' {% generation %}body{% endgeneration %}
};

struct Stmt;
using StmtPtr = std::shared_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr, condition;
  std::vector<std::string> targets;     // For / Set / SetBlock names; With's names
  bool target_tuple = false;            // unpack into targets
  std::string attribute_owner;          // Set of ns.attr: the namespace's name (targets[0] is attr)
  std::vector<ExprPtr> values;          // With's values
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro parameters, default or null
  Body body, else_body;
};

struct Template {
  Body body;
};

}  // namespace lmzoo::jinja
