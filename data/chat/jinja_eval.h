// Renders a parsed chat template (jinja_ast.h) against a context of values: jinja2's scoping (for, macro and with
// bodies get their own scope, if does not), loop variables, namespaces, macros, break/continue, and the globals
// transformers' environment has (range, dict, namespace, raise_exception, strftime_now).
// Leaves out: template inheritance, caller(), varargs/kwargs in macros, the loop's recursive call.
#pragma once
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/chat/jinja_ast.h"

namespace lmzoo::jinja {

struct RenderOptions {
  // The local time strftime_now formats (transformers: datetime.now()); the clock when empty.
  std::function<std::tm()> now;
};

struct RenderOutput {
  std::string text;
  // Byte ranges [begin, end) of text rendered inside {% generation %} blocks, in order.
  std::vector<std::pair<size_t, size_t>> generation_spans;
};

RenderOutput render(const Template& tpl, const std::vector<std::pair<std::string, Value>>& context,
                    const RenderOptions& options);

}  // namespace lmzoo::jinja
