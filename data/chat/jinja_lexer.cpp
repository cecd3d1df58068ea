// jinja2's lexer for chat templates (jinja_lexer.h): newlines normalised to \n, one trailing newline dropped, text
// between tags with - / + and lstrip_blocks applied, trim_blocks' one newline after %} and #}, balanced brackets
// inside tags, Python string escapes. Leaves out: line statements, \N{name} escapes.
#include "data/chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "data/chat/jinja_text.h"
#include "data/chat/jinja_value.h"

namespace lmzoo::jinja {
namespace {

// Python's \s at a byte offset of UTF-8 text: returns the byte length of the whitespace code point there, or 0.
size_t space_at(const std::string& s, size_t pos) {
  if (pos >= s.size()) return 0;
  const unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) return is_space(c) ? 1 : 0;
  size_t len = (c >= 0xF0) ? 4 : (c >= 0xE0) ? 3 : 2;
  if (pos + len > s.size()) return 0;
  const std::u32string cp = to_code_points(std::string_view(s).substr(pos, len));
  return (cp.size() == 1 && is_space(cp[0])) ? len : 0;
}

size_t skip_spaces(const std::string& s, size_t pos) {
  while (size_t n = space_at(s, pos)) pos += n;
  return pos;
}

// The text with trailing whitespace removed (str.rstrip()).
std::string rstrip_text(const std::string& text) {
  return py_strip(text, std::nullopt, StripSide::Right);
}

bool all_space(const std::string& s, size_t from) {
  if (from >= s.size()) return false;
  return skip_spaces(s, from) == s.size();
}

int count_newlines(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to && i < s.size(); ++i)
    if (s[i] == '\n') ++n;
  return n;
}

std::string normalise(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

// Python's unicode-escape decoding of a string literal's body.
std::string decode_string(const std::string& body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    const char e = body[++i];
    auto hex = [&](size_t digits) {
      uint32_t v = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= body.size()) throw Error(ErrorKind::Syntax, "truncated escape in a string", line);
        const char h = body[i + k];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
        else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
        else throw Error(ErrorKind::Syntax, "bad \\" + std::string(1, e) + " escape in a string", line);
      }
      i += digits;
      if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        throw Error(ErrorKind::Unsupported, "unsupported construct 'surrogate or out-of-range escape'", line);
      append_code_point(static_cast<char32_t>(v), out);
    };
    switch (e) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      case 'N': throw Error(ErrorKind::Unsupported, "unsupported construct '\\N{...} escape'", line);
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + static_cast<uint32_t>(body[++i] - '0');
          append_code_point(static_cast<char32_t>(v), out);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(",
                                  ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalise(source)) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      size_t tag = src_.find('{', pos);
      while (tag != std::string::npos &&
             !(tag + 1 < src_.size() && (src_[tag + 1] == '{' || src_[tag + 1] == '%' || src_[tag + 1] == '#')))
        tag = src_.find('{', tag + 1);
      if (tag == std::string::npos) {
        emit_text(src_.substr(pos), line_);
        break;
      }
      const char type = src_[tag + 1];
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      std::string text = src_.substr(pos, tag - pos);
      const int text_newlines = count_newlines(text, 0, text.size());
      const size_t after_open = tag + 2 + (sign ? 1 : 0);
      const bool raw = type == '%' && is_raw_begin(after_open);
      if (sign == '-') {
        text = rstrip_text(text);
      } else if (sign != '+' && type != '{') {  // lstrip_blocks: blocks, comments and raw, not {{ }}
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && all_space(text, l_pos)) text.erase(l_pos);
      }
      emit_text(text, line_);
      line_ += text_newlines;
      if (raw) {
        pos = lex_raw(after_open, line_starting);
      } else if (type == '#') {
        pos = lex_comment(after_open, line_starting);
      } else {
        pos = lex_tag(type == '{', after_open, line_starting);
      }
    }
    tokens_.push_back(Token{TokenKind::End, "", 0, 0.0, line_});
    return std::move(tokens_);
  }

 private:
  void emit_text(const std::string& text, int line) {
    if (!text.empty()) tokens_.push_back(Token{TokenKind::Text, text, 0, 0.0, line});
  }

  bool starts(size_t pos, const char* s) const { return src_.compare(pos, std::strlen(s), s) == 0; }

  bool is_raw_begin(size_t pos) const {
    pos = skip_spaces(src_, pos);
    if (!starts(pos, "raw")) return false;
    const size_t after = pos + 3;
    if (after < src_.size() && is_name_char(src_[after])) return false;
    const size_t end = skip_spaces(src_, after);
    return starts(end, "-%}") || starts(end, "%}");
  }

  // The end of a block or comment at POS ("+%}", "-%}" and the whitespace after, "%}" and one newline).
  // Returns the position after it and sets LINE_STARTING as jinja2 does (the match ended in a newline).
  size_t block_end(size_t pos, bool& line_starting) {
    size_t end;
    if (src_[pos] == '+') {
      end = pos + 3;
    } else if (src_[pos] == '-') {
      end = skip_spaces(src_, pos + 3);
    } else {
      end = pos + 2;
      if (end < src_.size() && src_[end] == '\n') ++end;
    }
    line_starting = end > 0 && src_[end - 1] == '\n';
    line_ += count_newlines(src_, pos, end);
    return end;
  }

  size_t lex_comment(size_t pos, bool& line_starting) {
    for (size_t p = pos; p + 1 < src_.size(); ++p) {
      if ((src_[p] == '+' || src_[p] == '-') && starts(p + 1, "#}")) {
        line_ += count_newlines(src_, pos, p);
        return block_end(p, line_starting);
      }
      if (starts(p, "#}")) {
        line_ += count_newlines(src_, pos, p);
        return block_end(p, line_starting);
      }
    }
    throw Error(ErrorKind::Syntax, "missing end of comment tag", line_);
  }

  size_t lex_raw(size_t pos, bool& line_starting) {
    // {% raw %} or {% raw -%}: no trim_blocks after the opening tag.
    pos = skip_spaces(src_, pos) + 3;
    pos = skip_spaces(src_, pos);
    if (src_[pos] == '-') {
      pos = skip_spaces(src_, pos + 3);
    } else {
      pos += 2;
    }
    for (size_t p = pos; p + 1 < src_.size(); ++p) {
      if (!starts(p, "{%")) continue;
      size_t q = p + 2;
      const char sign = (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ? src_[q] : 0;
      if (sign) ++q;
      q = skip_spaces(src_, q);
      if (!starts(q, "endraw")) continue;
      q = skip_spaces(src_, q + 6);
      if (!(starts(q, "+%}") || starts(q, "-%}") || starts(q, "%}"))) continue;
      std::string text = src_.substr(pos, p - pos);
      const int newlines = count_newlines(text, 0, text.size());
      if (sign == '-') {
        text = rstrip_text(text);
      } else if (sign != '+') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && all_space(text, l_pos)) text.erase(l_pos);
      }
      emit_text(text, line_);
      line_ += newlines;
      line_ += count_newlines(src_, p, q);
      return block_end(q, line_starting);
    }
    throw Error(ErrorKind::Syntax, "missing end of raw directive", line_);
  }

  size_t lex_tag(bool variable, size_t pos, bool& line_starting) {
    tokens_.push_back(Token{variable ? TokenKind::VariableBegin : TokenKind::BlockBegin, "", 0, 0.0, line_});
    std::vector<char> balance;
    while (true) {
      // whitespace
      const size_t ws = skip_spaces(src_, pos);
      line_ += count_newlines(src_, pos, ws);
      pos = ws;
      if (pos >= src_.size()) throw Error(ErrorKind::Syntax, variable ? "unexpected end of template, expected end of print statement" : "unexpected end of template, expected end of block statement", line_);
      if (balance.empty()) {
        if (variable) {
          if (starts(pos, "-}}")) {
            const size_t end = skip_spaces(src_, pos + 3);
            line_starting = src_[end - 1] == '\n';
            tokens_.push_back(Token{TokenKind::VariableEnd, "", 0, 0.0, line_});
            line_ += count_newlines(src_, pos, end);
            return end;
          }
          if (starts(pos, "}}")) {
            line_starting = false;
            tokens_.push_back(Token{TokenKind::VariableEnd, "", 0, 0.0, line_});
            return pos + 2;
          }
        } else if (starts(pos, "+%}") || starts(pos, "-%}") || starts(pos, "%}")) {
          tokens_.push_back(Token{TokenKind::BlockEnd, "", 0, 0.0, line_});
          return block_end(pos, line_starting);
        }
      }
      const char c = src_[pos];
      if (is_digit(c)) {
        pos = lex_number(pos);
      } else if (is_name_start(c)) {
        size_t end = pos;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        tokens_.push_back(Token{TokenKind::Name, src_.substr(pos, end - pos), 0, 0.0, line_});
        pos = end;
      } else if (c == '\'' || c == '"') {
        size_t p = pos + 1;
        while (p < src_.size() && src_[p] != c) {
          if (src_[p] == '\\') ++p;
          ++p;
        }
        if (p >= src_.size()) throw Error(ErrorKind::Syntax, "unexpected char '" + std::string(1, c) + "'", line_);
        const std::string body = src_.substr(pos + 1, p - pos - 1);
        tokens_.push_back(Token{TokenKind::String, decode_string(body, line_), 0, 0.0, line_});
        line_ += count_newlines(body, 0, body.size());
        pos = p + 1;
      } else {
        const char* op = nullptr;
        for (const char* candidate : kOperators)
          if (starts(pos, candidate)) {
            op = candidate;
            break;
          }
        if (!op) throw Error(ErrorKind::Syntax, "unexpected char '" + std::string(1, c) + "'", line_);
        const std::string o(op);
        if (o == "(" || o == "[" || o == "{") {
          balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
        } else if (o == ")" || o == "]" || o == "}") {
          if (balance.empty()) throw Error(ErrorKind::Syntax, "unexpected '" + o + "'", line_);
          if (balance.back() != o[0])
            throw Error(ErrorKind::Syntax, "unexpected '" + o + "', expected '" + std::string(1, balance.back()) + "'", line_);
          balance.pop_back();
        }
        tokens_.push_back(Token{TokenKind::Operator, o, 0, 0.0, line_});
        pos += o.size();
      }
    }
  }

  size_t lex_number(size_t pos) {
    auto digits = [&](size_t p, bool (*ok)(char)) {
      while (p < src_.size() && (ok(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && ok(src_[p + 1])))) ++p;
      return p;
    };
    auto strip_underscores = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      return s;
    };
    if (src_[pos] == '0' && pos + 1 < src_.size() && std::strchr("bBoOxX", src_[pos + 1])) {
      const char base_char = static_cast<char>(std::tolower(src_[pos + 1]));
      const int base = base_char == 'b' ? 2 : base_char == 'o' ? 8 : 16;
      size_t p = pos + 2;
      while (p < src_.size() && (std::isxdigit(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) ++p;
      const std::string body = strip_underscores(src_.substr(pos + 2, p - pos - 2));
      tokens_.push_back(Token{TokenKind::Integer, "", static_cast<int64_t>(std::stoull(body, nullptr, base)), 0.0, line_});
      return p;
    }
    size_t p = digits(pos, is_digit);
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      is_float = true;
      p = digits(p + 1, is_digit);
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        is_float = true;
        p = digits(q, is_digit);
      }
    }
    const std::string text = strip_underscores(src_.substr(pos, p - pos));
    if (is_float)
      tokens_.push_back(Token{TokenKind::Float, text, 0, std::stod(text), line_});
    else
      tokens_.push_back(Token{TokenKind::Integer, text, static_cast<int64_t>(std::stoll(text)), 0.0, line_});
    return p;
  }

  std::string src_;
  std::vector<Token> tokens_;
  int line_ = 1;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace lmzoo::jinja
