// jinja2's recursive-descent grammar over the chat-template tokens (jinja_parser.h): expressions with its
// precedence, and the statements for/if/set/macro/filter/with/break/continue/raw/generation. Filter and test names
// are checked here, as jinja2 checks them when it compiles. Leaves out: the statements it refuses by name.
#include "data/chat/jinja_parser.h"

#include <set>

#include "data/chat/jinja_filters.h"
#include "data/chat/jinja_lexer.h"

namespace lmzoo::jinja {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Template parse() {
    Template t;
    t.body = subparse({});
    if (cur().kind != TokenKind::End) fail("unexpected '" + describe(cur()) + "'");
    return t;
  }

 private:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  Token next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void fail(const std::string& message) const { throw Error(ErrorKind::Syntax, message, cur().line); }
  [[noreturn]] void unsupported(const std::string& what, int line) const {
    throw Error(ErrorKind::Unsupported, "unsupported construct '" + what + "'", line);
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::End: return "end of template";
      case TokenKind::BlockEnd: return "end of statement block";
      case TokenKind::VariableEnd: return "end of print statement";
      case TokenKind::BlockBegin: return "begin of statement block";
      case TokenKind::VariableBegin: return "begin of print statement";
      case TokenKind::Text: return "template data";
      case TokenKind::Integer:
      case TokenKind::Float: return "number";
      case TokenKind::String: return "string";
      default: return t.text;
    }
  }

  bool is_op(const char* op) const { return cur().kind == TokenKind::Operator && cur().text == op; }
  bool is_name(const char* name) const { return cur().kind == TokenKind::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) fail("expected token 'name', got '" + describe(cur()) + "'");
    return next().text;
  }
  void expect_block_end() {
    if (cur().kind != TokenKind::BlockEnd) fail("expected token 'end of statement block', got '" + describe(cur()) + "'");
    ++pos_;
  }

  static ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----

  // Statements until a block tag whose name is in END (left unconsumed, after its {%), or the end of the template.
  Body subparse(const std::set<std::string>& end) {
    Body body;
    while (cur().kind != TokenKind::End) {
      const Token& t = cur();
      if (t.kind == TokenKind::Text) {
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::Text;
        s->line = t.line;
        s->text = t.text;
        body.push_back(s);
        ++pos_;
      } else if (t.kind == TokenKind::VariableBegin) {
        ++pos_;
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::Print;
        s->line = t.line;
        s->expr = parse_tuple(true);
        if (cur().kind != TokenKind::VariableEnd) fail("expected token 'end of print statement', got '" + describe(cur()) + "'");
        ++pos_;
        body.push_back(s);
      } else if (t.kind == TokenKind::BlockBegin) {
        ++pos_;
        if (cur().kind == TokenKind::Name && end.count(cur().text)) return body;
        body.push_back(parse_statement());
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
    if (!end.empty()) {
      std::string names;
      for (const auto& n : end) names += (names.empty() ? "'" : " or '") + n + "'";
      fail("unexpected end of template, expected " + names);
    }
    return body;
  }

  StmtPtr parse_statement() {
    if (cur().kind != TokenKind::Name) fail("tag name expected");
    const Token tag = cur();
    const std::string& name = tag.text;
    auto s = std::make_shared<Stmt>();
    s->line = tag.line;
    if (name == "if") {
      ++pos_;
      return parse_if(tag.line);
    }
    if (name == "for") {
      ++pos_;
      return parse_for(tag.line);
    }
    if (name == "set") {
      ++pos_;
      return parse_set(tag.line);
    }
    if (name == "macro") {
      ++pos_;
      return parse_macro(tag.line);
    }
    if (name == "break" || name == "continue") {
      ++pos_;
      s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
      expect_block_end();
      return s;
    }
    if (name == "print") {
      ++pos_;
      s->kind = StmtKind::Print;
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (name == "filter") {
      ++pos_;
      s->kind = StmtKind::FilterBlock;
      auto body_name = make(ExprKind::Name, tag.line);
      body_name->name = "__body__";
      s->expr = parse_filter_chain(body_name, true);
      expect_block_end();
      s->body = subparse({"endfilter"});
      ++pos_;
      expect_block_end();
      return s;
    }
    if (name == "with") {
      ++pos_;
      s->kind = StmtKind::With;
      while (cur().kind != TokenKind::BlockEnd) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_name());
        expect_op("=");
        s->values.push_back(parse_expression(true));
      }
      expect_block_end();
      s->body = subparse({"endwith"});
      ++pos_;
      expect_block_end();
      return s;
    }
    if (name == "generation") {
      ++pos_;
      s->kind = StmtKind::Generation;
      expect_block_end();
      s->body = subparse({"endgeneration"});
      ++pos_;
      expect_block_end();
      return s;
    }
    static const std::set<std::string> refused = {"block", "extends", "include", "import", "from", "call", "autoescape"};
    if (refused.count(name)) unsupported(name == "call" ? "call block" : name, tag.line);
    fail("Encountered unknown tag '" + name + "'.");
  }

  StmtPtr parse_if(int line) {
    auto s = std::make_shared<Stmt>();
    s->kind = StmtKind::If;
    s->line = line;
    s->expr = parse_tuple(false);
    expect_block_end();
    s->body = subparse({"elif", "else", "endif"});
    const std::string tag = next().text;
    if (tag == "elif") {
      s->else_body.push_back(parse_if(tokens_[pos_ - 1].line));
      return s;  // the nested If consumed the endif
    }
    if (tag == "else") {
      expect_block_end();
      s->else_body = subparse({"endif"});
      ++pos_;
    }
    expect_block_end();
    return s;
  }

  // Assignment target names: `a` or `a, b` or `(a, b)`.
  void parse_targets(Stmt& s) {
    bool paren = skip_op("(");
    s.targets.push_back(expect_name());
    while (skip_op(",")) {
      s.target_tuple = true;
      if (paren && is_op(")")) break;
      if (cur().kind != TokenKind::Name) break;
      s.targets.push_back(expect_name());
    }
    if (paren) {
      s.target_tuple = true;
      expect_op(")");
    }
  }

  StmtPtr parse_for(int line) {
    auto s = std::make_shared<Stmt>();
    s->kind = StmtKind::For;
    s->line = line;
    parse_targets(*s);
    if (!skip_name("in")) fail("expected token 'in', got '" + describe(cur()) + "'");
    s->expr = parse_tuple(false);
    if (skip_name("if")) s->condition = parse_expression(true);
    if (is_name("recursive")) unsupported("recursive for loop", line);
    expect_block_end();
    s->body = subparse({"endfor", "else"});
    if (next().text == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"});
      ++pos_;
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(int line) {
    auto s = std::make_shared<Stmt>();
    s->line = line;
    if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "." &&
        peek(2).kind == TokenKind::Name) {
      s->kind = StmtKind::Set;
      s->attribute_owner = next().text;
      ++pos_;
      s->targets.push_back(next().text);
      expect_op("=");
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    parse_targets(*s);
    if (skip_op("=")) {
      s->kind = StmtKind::Set;
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (s->target_tuple) fail("expected token '=', got '" + describe(cur()) + "'");
    s->kind = StmtKind::SetBlock;
    if (is_op("|")) {
      auto body_name = make(ExprKind::Name, line);
      body_name->name = "__body__";
      s->expr = parse_filter_chain(body_name, false);
    }
    expect_block_end();
    s->body = subparse({"endset"});
    ++pos_;
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = std::make_shared<Stmt>();
    s->kind = StmtKind::Macro;
    s->line = line;
    s->targets.push_back(expect_name());
    expect_op("(");
    while (!skip_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (skip_op(")")) break;
      const std::string param = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expression(true);
      s->params.emplace_back(param, def);
    }
    expect_block_end();
    s->body = subparse({"endmacro"});
    ++pos_;
    if (cur().kind == TokenKind::Name && cur().text == s->targets[0]) ++pos_;
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  ExprPtr parse_tuple(bool with_condexpr) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        is_tuple = true;
      }
      if (at_tuple_end()) break;
      items.push_back(parse_expression(with_condexpr));
    }
    if (!is_tuple) {
      if (items.empty()) fail("Expected an expression, got '" + describe(cur()) + "'");
      return items[0];
    }
    auto e = make(ExprKind::Tuple, line);
    e->children = std::move(items);
    return e;
  }

  bool at_tuple_end() const {
    const Token& t = cur();
    if (t.kind == TokenKind::VariableEnd || t.kind == TokenKind::BlockEnd || t.kind == TokenKind::End) return true;
    if (t.kind == TokenKind::Operator && (t.text == ")" || t.text == "]" || t.text == "=")) return true;
    if (t.kind == TokenKind::Name && (t.text == "if" || t.text == "in" || t.text == "recursive")) return false;
    return false;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const int line = next().line;
      ExprPtr cond = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      auto e = make(ExprKind::Conditional, line);
      e->children = {expr, cond, otherwise};
      expr = e;
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      auto e = make(ExprKind::Or, line);
      e->children = {left, parse_and()};
      left = e;
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      auto e = make(ExprKind::And, line);
      e->children = {left, parse_not()};
      left = e;
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const int line = next().line;
      auto e = make(ExprKind::Unary, line);
      e->name = "not";
      e->children = {parse_not()};
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    auto e = make(ExprKind::Compare, line);
    e->children.push_back(first);
    static const std::set<std::string> ops = {"==", "!=", "<", "<=", ">", ">="};
    while (true) {
      if (cur().kind == TokenKind::Operator && ops.count(cur().text)) {
        e->ops.push_back(next().text);
      } else if (is_name("in")) {
        ++pos_;
        e->ops.push_back("in");
      } else if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
        pos_ += 2;
        e->ops.push_back("notin");
      } else {
        break;
      }
      e->children.push_back(parse_math1());
    }
    return e->ops.empty() ? first : e;
  }

  ExprPtr binary(const std::string& op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(ExprKind::Binary, line);
    e->name = op;
    e->children = {std::move(left), std::move(right)};
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token op = next();
      left = binary(op.text, left, parse_concat(), op.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const Token op = next();
      left = binary("~", left, parse_math2(), op.line);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token op = next();
      left = binary(op.text, left, parse_pow(), op.line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token op = next();
      left = binary("**", left, parse_unary(true), op.line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token op = next();
      node = make(ExprKind::Unary, op.line);
      node->name = op.text;
      node->children = {parse_unary(false)};
    } else {
      node = parse_primary();
    }
    node = parse_postfix(node);
    if (with_filter) node = parse_filter_expr(node);
    return node;
  }

  ExprPtr parse_primary() {
    const Token t = cur();
    if (t.kind == TokenKind::Name) {
      ++pos_;
      auto e = make(ExprKind::Constant, t.line);
      if (t.text == "true" || t.text == "True") {
        e->value = Value::boolean(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value::boolean(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value::none();
      } else {
        e->kind = ExprKind::Name;
        e->name = t.text;
      }
      return e;
    }
    if (t.kind == TokenKind::String) {
      std::string s;
      while (cur().kind == TokenKind::String) s += next().text;
      auto e = make(ExprKind::Constant, t.line);
      e->value = Value::string(s);
      return e;
    }
    if (t.kind == TokenKind::Integer || t.kind == TokenKind::Float) {
      ++pos_;
      auto e = make(ExprKind::Constant, t.line);
      e->value = t.kind == TokenKind::Integer ? Value::integer(t.integer) : Value::floating(t.floating);
      return e;
    }
    if (is_op("(")) {
      ++pos_;
      if (skip_op(")")) {
        auto e = make(ExprKind::Tuple, t.line);
        return e;
      }
      ExprPtr inner = parse_tuple(true);
      expect_op(")");
      return inner;
    }
    if (is_op("[")) {
      ++pos_;
      auto e = make(ExprKind::List, t.line);
      while (!skip_op("]")) {
        if (!e->children.empty()) expect_op(",");
        if (skip_op("]")) break;
        e->children.push_back(parse_expression(true));
      }
      return e;
    }
    if (is_op("{")) {
      ++pos_;
      auto e = make(ExprKind::Dict, t.line);
      while (!skip_op("}")) {
        if (!e->children.empty()) expect_op(",");
        if (skip_op("}")) break;
        e->children.push_back(parse_expression(true));
        expect_op(":");
        e->children.push_back(parse_expression(true));
      }
      return e;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(node);
      } else if (is_op("(")) {
        node = parse_call(node);
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter_chain(node, false);
      } else if (is_name("is")) {
        node = parse_test(node);
      } else if (is_op("(")) {
        node = parse_call(node);
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token t = next();
    if (t.text == ".") {
      if (cur().kind == TokenKind::Name) {
        auto e = make(ExprKind::GetAttr, t.line);
        e->name = next().text;
        e->children = {node};
        return e;
      }
      if (cur().kind == TokenKind::Integer) {
        auto e = make(ExprKind::GetItem, t.line);
        auto index = make(ExprKind::Constant, t.line);
        index->value = Value::integer(next().integer);
        e->children = {node, index};
        return e;
      }
      fail("expected name or number");
    }
    std::vector<ExprPtr> args;
    while (!skip_op("]")) {
      if (!args.empty()) {
        expect_op(",");
        if (skip_op("]")) break;
      }
      args.push_back(parse_subscribed());
    }
    auto e = make(ExprKind::GetItem, t.line);
    if (args.size() == 1) {
      e->children = {node, args[0]};
    } else {
      auto tuple = make(ExprKind::Tuple, t.line);
      tuple->children = args;
      e->children = {node, tuple};
    }
    return e;
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    ExprPtr start, stop, step;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    ++pos_;  // ':'
    if (!is_op("]") && !is_op(",") && !is_op(":")) stop = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) step = parse_expression(true);
    }
    auto e = make(ExprKind::Slice, line);
    e->children = {start, stop, step};
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!skip_op(")")) {
      if (!first) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      first = false;
      if (skip_op("*")) {
        e.star_args = parse_expression(true);
      } else if (skip_op("**")) {
        e.star_kwargs = parse_expression(true);
      } else if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
        const std::string key = next().text;
        ++pos_;
        e.keywords.emplace_back(key, parse_expression(true));
      } else {
        if (!e.keywords.empty() || e.star_args || e.star_kwargs) fail("invalid syntax for function call expression");
        e.children.push_back(parse_expression(true));
      }
    }
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::Call, cur().line);
    e->children.push_back(node);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter_chain(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) ++pos_;
      start_inline = false;
      const int line = cur().line;
      std::string name = expect_name();
      while (is_op(".")) {
        ++pos_;
        name += "." + expect_name();
      }
      check_filter(name, line);
      auto e = make(ExprKind::Filter, line);
      e->name = name;
      e->children.push_back(node);
      if (is_op("(")) parse_call_args(*e);
      node = e;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = next().line;  // 'is'
    bool negated = skip_name("not");
    std::string name = expect_name();
    while (is_op(".")) {
      ++pos_;
      name += "." + expect_name();
    }
    check_test(name, line);
    auto e = make(ExprKind::Test, line);
    e->name = name;
    e->negated = negated;
    e->children.push_back(node);
    if (is_op("(")) {
      parse_call_args(*e);
    } else {
      const Token& t = cur();
      const bool arg_start =
          (t.kind == TokenKind::Name && t.text != "else" && t.text != "or" && t.text != "and") ||
          t.kind == TokenKind::String || t.kind == TokenKind::Integer || t.kind == TokenKind::Float ||
          (t.kind == TokenKind::Operator && (t.text == "[" || t.text == "{"));
      if (arg_start) {
        if (t.kind == TokenKind::Name && t.text == "is") fail("You cannot chain multiple tests with is");
        e->children.push_back(parse_postfix(parse_primary()));
      }
    }
    return e;
  }

  void check_filter(const std::string& name, int line) const {
    if (has_filter(name)) return;
    if (is_jinja_builtin_filter(name)) unsupported("filter '" + name + "'", line);
    throw Error(ErrorKind::Syntax, "No filter named '" + name + "'.", line);
  }

  void check_test(const std::string& name, int line) const {
    if (has_test(name)) return;
    if (is_jinja_builtin_test(name)) unsupported("test '" + name + "'", line);
    throw Error(ErrorKind::Syntax, "No test named '" + name + "'.", line);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

Template parse_template(const std::string& source) { return Parser(tokenize(source)).parse(); }

}  // namespace lmzoo::jinja
