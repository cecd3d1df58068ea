// Splits a chat template into tokens as jinja2's lexer does with trim_blocks and lstrip_blocks on: text, comments
// dropped, {{ }} / {% %} delimiters with - and + whitespace control, raw blocks, and the expression tokens inside.
// Leaves out: line statements and line comments (off in transformers), custom delimiters.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmzoo::jinja {

enum class TokenKind { Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
  TokenKind kind;
  std::string text;  // Text's text, a name, an operator, a string literal's decoded value
  int64_t integer = 0;
  double floating = 0.0;
  int line = 1;
};

std::vector<Token> tokenize(const std::string& source);

}  // namespace lmzoo::jinja
