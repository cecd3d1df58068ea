// Parses chat-template tokens into a syntax tree (jinja_ast.h) with jinja2's grammar; refuses what it does not
// implement with an Error naming the construct and its line. Leaves out: extends/block/include/import/call/autoescape.
#pragma once
#include <string>

#include "data/chat/jinja_ast.h"

namespace lmzoo::jinja {

Template parse_template(const std::string& source);

}  // namespace lmzoo::jinja
