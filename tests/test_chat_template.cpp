// The chat-template renderer on hand-worked cases: whitespace control (trim_blocks, lstrip_blocks, - and +),
// loops and their variables, scoping, Undefined, macros, namespaces, filters, tests, Python's formatting, the
// errors a user sees, reading a checkpoint's template, and the real templates of the fixtures on one conversation.
// tests/test_chat_template_reference.cpp compares with Python's jinja2 on many generated conversations.
#include "tests/catch_compat.h"

#include <fstream>

#include "data/chat/chat_template.h"
#include "tests/cli_helpers.h"

using namespace lmzoo;
using nlohmann::ordered_json;

namespace {

std::string render(const std::string& source, const ordered_json& context = ordered_json::object()) {
  return render_chat_template(source, context);
}

ordered_json chat(bool add_generation_prompt = false) {
  return ordered_json{{"messages",
                       {{{"role", "system"}, {"content", "Be brief."}},
                        {{"role", "user"}, {"content", "Hi!"}},
                        {{"role", "assistant"}, {"content", "Hello."}},
                        {{"role", "user"}, {"content", "2+2?"}}}},
                      {"add_generation_prompt", add_generation_prompt},
                      {"bos_token", "<s>"},
                      {"eos_token", "</s>"}};
}

std::string error_of(const std::string& source, const ordered_json& context = ordered_json::object()) {
  try {
    render(source, context);
  } catch (const ChatTemplateError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(LMZOO_SOURCE_DIR) + "/tests/fixtures/chat_templates/" + name + ".jinja", std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::tm fixed_day() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 28;
  tm.tm_hour = 12;
  tm.tm_wday = 6;
  tm.tm_yday = 331;
  return tm;
}

}  // namespace

TEST_CASE("chat template: text, output and whitespace control as jinja2 with trim_blocks and lstrip_blocks",
          "[chat_template]") {
  CHECK(render("plain text") == "plain text");
  CHECK(render("one trailing newline is dropped\n") == "one trailing newline is dropped");
  CHECK(render("two\n\n") == "two\n");
  CHECK(render("a\r\nb\rc") == "a\nb\nc");
  CHECK(render("{{ 'x' }}\n{{ 'y' }}") == "x\ny");  // no trim after }}
  CHECK(render("{% if true %}\nyes\n{% endif %}\nend") == "yes\nend");  // trim_blocks: one newline after %}
  CHECK(render("    {% if true %}\n    yes\n    {% endif %}\n") == "    yes\n");  // lstrip_blocks before {%
  CHECK(render("a  {% if true %}b{% endif %}") == "a  b");  // not at the start of a line: kept
  CHECK(render("    {{ 'v' }}") == "    v");                  // lstrip_blocks leaves {{ alone
  CHECK(render("a   {%- if true %} b {% endif -%}   c") == "a b c");
  CHECK(render("a \n {{- 'b' -}} \n c") == "abc");
  CHECK(render("  {%+ if true %}x{% endif %}") == "  x");     // + keeps the spaces lstrip_blocks would take
  CHECK(render("{% if true +%}\nx{% endif %}") == "\nx");     // + keeps the newline trim_blocks would take
  CHECK(render("a\n  {# comment #}\nb") == "a\nb");
  CHECK(render("a {#- comment -#} b") == "ab");
  CHECK(render("{% raw %}{{ not }} {% evaluated %}{% endraw %}") == "{{ not }} {% evaluated %}");
  CHECK(render("{{ {'a': {'b': 1}} }}") == "{'a': {'b': 1}}");  // }} inside braces does not end the tag
}

TEST_CASE("chat template: Python's values printed, compared and combined", "[chat_template]") {
  CHECK(render("{{ 1 }} {{ 1.0 }} {{ 2.50 }} {{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} {{ 7 // 2 }} {{ -7 // 2 }}") ==
        "1 1.0 2.5 1e+20 1e-05 0.30000000000000004 2.5 3 -4");
  CHECK(render("{{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}") == "2 1.5 1024 0.5 64");
  CHECK(render("{{ true }} {{ none }} {{ None }} {{ [1, 'a', none, true, 1.5] }} {{ (1,) }} {{ {'k': \"it's\"} }}") ==
        "True None None [1, 'a', None, True, 1.5] (1,) {'k': \"it's\"}");
  CHECK(render("{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2] }}") == "a1NoneTrue ababab [1, 2]");
  CHECK(render("{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' < 'c' }} {{ [1, 2] < [1, 3] }} {{ 'b' in 'abc' }}") ==
        "True True True True True");
  CHECK(render("{{ 2 not in [1, 3] }} {{ 'k' in {'k': 1} }} {{ not 0 }} {{ '' or 'x' }} {{ 0 and 1 }}") ==
        "True True True x 0");
  CHECK(render("{{ 'yes' if 1 > 0 else 'no' }}|{{ 'yes' if 0 }}|{{ 'a\\tb\\n\\'\\\"\\u00e9\\x41' }}") ==
        "yes||a\tb\n'\"\u00e9A");
  CHECK(render("{{ -3 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ '42' | int + 1 }} {{ 'x' | int }} "
               "{{ '1.5' | float }}") == "3 2.0 3.14 43 0 1.5");
  CHECK(render("{{ 12350 | round(-2) }} {{ 2.675 | round(2) }} {{ {'role': 'user'} | attr('role') }}|") == "12400 2.67 |");
}

TEST_CASE("chat template: loops, their variables, filtering, else, break and continue", "[chat_template]") {
  const std::string loop_vars =
      "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
      "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }} "
      "{% endfor %}";
  CHECK(render(loop_vars) == "1032TrueFalse3-b 2121FalseFalse3ac 3210FalseTrue3b- ");
  CHECK(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.length }}{% endfor %}") == "2242");
  CHECK(render("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for x in missing %}x{% else %}undefined iterates as empty{% endfor %}") ==
        "undefined iterates as empty");
  CHECK(render("{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}") == "13");
  CHECK(render("{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "1");
  CHECK(render("{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}") == "b=1;a=2;");
  CHECK(render("{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}{% for c in 'hé' %}[{{ c }}]{% endfor %}") ==
        "ba[h][é]");
  CHECK(render("{% for x in [1, 2] %}{{ loop.cycle('odd', 'even') }} {% endfor %}") == "odd even ");
}

TEST_CASE("chat template: scoping, set, namespace, macros, filter and set blocks", "[chat_template]") {
  // A for body's assignments stay in the loop (and each iteration starts afresh); if does not scope.
  CHECK(render("{% set a = 1 %}{% for i in [1, 2] %}{{ a }}{% set a = i + 5 %}{% endfor %}{{ a }}") == "111");
  CHECK(render("{% if true %}{% set a = 'set in if' %}{% endif %}{{ a }}") == "set in if");
  CHECK(render("{% set ns = namespace(n=0, seen=[]) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}"
               "{% set ns.seen = ns.seen + [i] %}{% endfor %}{{ ns.n }} {{ ns.seen }}") == "6 [1, 2, 3]");
  CHECK(render("{% set a, b = 1, 2 %}{{ b }}{{ a }}") == "21");
  CHECK(render("{% set text %}  block {{ 1 + 1 }}  {% endset %}[{{ text }}]") == "[  block 2  ]");
  CHECK(render("{% set text | trim | upper %}  block  {% endset %}[{{ text }}]") == "[BLOCK]");
  CHECK(render("{% filter upper %}shout {{ 'this' }}{% endfilter %}") == "SHOUT THIS");
  CHECK(render("{% with x = 3 %}{{ x * 2 }}{% endwith %}{{ x is defined }}") == "6False");
  const std::string macro =
      "{% macro turn(role, text='(empty)', end='\\n') %}<{{ role }}>{{ text }}{{ end }}{% endmacro %}"
      "{{ turn('user', 'hi') }}{{ turn('bot') }}{{ turn('x', end='|') }}{{ turn(role='y', text='z') }}";
  CHECK(render(macro) == "<user>hi\n<bot>(empty)\n<x>(empty)|<y>z\n");
  CHECK(render("{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}") == "[]");  // a missing parameter is undefined
}

TEST_CASE("chat template: Undefined as jinja2's default Undefined", "[chat_template]") {
  const ordered_json ctx = {{"message", {{"role", "user"}}}};
  CHECK(render("[{{ nothing }}][{{ message.content }}][{{ message['content'] }}][{{ message.content | length }}]", ctx) ==
        "[][][][0]");
  CHECK(render("{{ nothing is defined }} {{ message.content is undefined }} {{ nothing | default('d') }} {{ nothing ~ 'x' }}", ctx) ==
        "False True d x");
  CHECK(render("{% if message.content %}yes{% else %}no{% endif %} {{ nothing == none }} {{ [1][5] is defined }}", ctx) ==
        "no False False");
  CHECK(error_of("{{ nothing.attribute }}") == "chat template line 1: 'nothing' is undefined");
  CHECK(error_of("line one\n{{ message.content.strip() }}", ctx) ==
        "chat template line 2: 'dict object' has no attribute 'content'");
  CHECK(error_of("{{ nothing + 'x' }}") == "chat template line 1: 'nothing' is undefined");
}

TEST_CASE("chat template: filters and string methods", "[chat_template]") {
  CHECK(render("{{ '  pad  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ ' a b '.strip() }}|{{ 'ab  '.rstrip() }}|"
               "{{ '--a'.lstrip('-') }}") == "pad|hi|a b|ab|a");
  CHECK(render("{{ 'hello world' | title }} {{ 'hELLO' | capitalize }} {{ 'ǅ straße' | upper }} {{ 'ÀB' | lower }}") ==
        "Hello World Hello Ǆ STRASSE àb");
  CHECK(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a-b'.replace('-', '+') }}") ==
        "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] a+b");
  CHECK(render("{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'héllo'[1:3] }} {{ 'abc'[::-1] }} "
               "{{ 'abc'[-1] }} {{ 'héllo' | length }}") == "True True él cba c 5");
  CHECK(render("{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'a'] | unique | list }} {{ [1, 2] | first }} {{ [1, 2] | last }} "
               "{{ [1, 2, 3] | join('-') }} {{ [1, 2] | reverse | list }}") == "[1, 2, 3] ['b', 'A'] 1 2 1-2-3 [2, 1]");
  const ordered_json ctx = {{"m",
                             {{{"role", "system"}, {"content", "s"}},
                              {{"role", "user"}, {"content", "u"}},
                              {{"role", "assistant"}}}}};
  CHECK(render("{{ m | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} "
               "{{ m | rejectattr('role', 'eq', 'system') | list | length }} {{ m | selectattr('content', 'defined') | list | length }} "
               "{{ m | map(attribute='role') | join(',') }} {{ m[0] | items | list }} {{ {'b': 1, 'A': 2} | dictsort }}",
               ctx) == "['u'] 2 2 system,user,assistant [('role', 'system'), ('content', 's')] [('A', 2), ('b', 1)]");
  // Like jinja2's, select/map/unique/items give iterators: always true, no length, no subscript.
  CHECK(error_of("{{ m | selectattr('role') | length }}", ctx) == "chat template line 1: object of type 'generator' has no len()");
  CHECK(render("{{ 'true' if m | selectattr('role', 'equalto', 'nobody') }} {{ (m | map(attribute='role'))[0] is defined }}", ctx) ==
        "true False");
  CHECK(render("{{ 'a\\nb' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'one two  three' | wordcount }}") ==
        "a\n  b|  a\n  b|3");
  CHECK(render("{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b') }} {{ {'a': 1}.get('b', 2) }} {{ {'a': 1}.keys() | list }} "
               "{{ {'a': 1}.values() | list }}") == "1 None 2 ['a'] [1]");
}

TEST_CASE("chat template: tojson as transformers defines it (json.dumps, ensure_ascii=False)", "[chat_template]") {
  const ordered_json ctx = {{"tool", {{"name", "f"}, {"args", {{"z", 1}, {"a", {1.5, true, nullptr, "é\"\n"}}}}}}};
  CHECK(render("{{ tool | tojson }}", ctx) == "{\"name\": \"f\", \"args\": {\"z\": 1, \"a\": [1.5, true, null, \"é\\\"\\n\"]}}");
  CHECK(render("{{ tool | tojson(indent=2) }}", ctx) ==
        "{\n  \"name\": \"f\",\n  \"args\": {\n    \"z\": 1,\n    \"a\": [\n      1.5,\n      true,\n      null,\n"
        "      \"é\\\"\\n\"\n    ]\n  }\n}");
  CHECK(render("{{ tool.args | tojson(sort_keys=true, separators=(',', ':')) }}", ctx) ==
        "{\"a\":[1.5,true,null,\"é\\\"\\n\"],\"z\":1}");
  CHECK(render("{{ 'é😀' | tojson(ensure_ascii=true) }} {{ [] | tojson(indent=4) }} {{ 'x<y' | tojson }}") ==
        "\"\\u00e9\\ud83d\\ude00\" [] \"x<y\"");
  CHECK(error_of("{{ nothing | tojson }}") == "chat template line 1: Object of type Undefined is not JSON serializable");
}

TEST_CASE("chat template: tests", "[chat_template]") {
  CHECK(render("{{ 'a' is string }}{{ 1 is number }}{{ 1 is integer }}{{ 1.0 is float }}{{ true is boolean }}"
               "{{ none is none }}{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}{{ 3 is odd }}"
               "{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 2 is in [1, 2] }}"
               "{{ true is true }}{{ 0 is false }}{{ 'x' is not defined }}{{ 'abc' is lower }}") ==
        "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueFalseFalseTrue");
}

TEST_CASE("chat template: errors are one clear line", "[chat_template]") {
  CHECK(error_of("{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}") ==
        "chat template raised: Conversation roles must alternate user/assistant/user/assistant/...");
  CHECK(error_of("ok\n{% call foo() %}x{% endcall %}") == "chat template line 2: unsupported construct 'call block'");
  CHECK(error_of("{% extends 'base.html' %}") == "chat template line 1: unsupported construct 'extends'");
  CHECK(error_of("{{ x | truncate(3) }}") == "chat template line 1: unsupported construct 'filter 'truncate''");
  CHECK(error_of("{{ x | no_such_filter }}") == "chat template line 1: No filter named 'no_such_filter'.");
  CHECK(error_of("{% for x in y %}") == "chat template line 1: unexpected end of template, expected 'else' or 'endfor'");
  CHECK(error_of("{% frobnicate %}") == "chat template line 1: Encountered unknown tag 'frobnicate'.");
  CHECK(error_of("{{ 1 +* 2 }}") == "chat template line 1: unexpected '*'");
  CHECK(error_of("{{ 'a' + 1 }}") == "chat template line 1: can only concatenate str (not \"int\") to str");
  CHECK(error_of("{% set ns = namespace(items=[]) %}{{ ns.items.append(1) }}") ==
        "chat template line 1: access to attribute 'append' of 'list' object is unsafe.");
  CHECK(error_of("{% set x = 1 %}{% set x.a = 2 %}") ==
        "chat template line 1: cannot assign attribute on non-namespace object");
  try {
    render("\n\n{{ raise_exception('no system role') }}");
    FAIL("no error");
  } catch (const ChatTemplateError& e) {
    CHECK(e.kind() == ChatTemplateError::Kind::Raised);
    CHECK(e.line() == 3);
    CHECK(e.detail() == "no system role");
  }
}

TEST_CASE("chat template: transformers' globals, generation spans, the ChatML default", "[chat_template]") {
  ChatTemplateOptions options;
  options.now = fixed_day;
  CHECK(render_chat_template("{{ strftime_now('%d %b %Y') }} {{ strftime_now('%A') }}", ordered_json::object(), options) ==
        "28 Nov 2026 Saturday");
  CHECK(render("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ dict(a=1) }} {{ namespace(a=1).a }}") ==
        "[0, 1, 2] [1, 3, 5] {'a': 1} 1");
  const ChatTemplate tpl(
      "{% for m in messages %}{{ m.role }}: {% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}"
      "{% else %}{{ m.content }}{% endif %}\n{% endfor %}");
  const ChatRender r = tpl.render(chat());
  CHECK(r.text == "system: Be brief.user: Hi!assistant: Hello.user: 2+2?");  // trim_blocks ate each "\n"
  REQUIRE(r.generation_spans.size() == 1);
  CHECK(r.text.substr(r.generation_spans[0].first, r.generation_spans[0].second - r.generation_spans[0].first) == "Hello.");
  CHECK(render(kChatMlTemplate, chat(true)) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  // nlohmann::json (sorted keys) renders the same messages.
  CHECK(render_chat_template(kChatMlTemplate, nlohmann::json::parse(chat(false).dump())) ==
        render(kChatMlTemplate, chat(false)));
}

TEST_CASE("chat template: the published templates on one conversation", "[chat_template]") {
  ChatTemplateOptions options;
  options.now = fixed_day;
  CHECK(render_chat_template(fixture("smollm2-instruct"), chat(true), options) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render_chat_template(fixture("llama-3.2-instruct"), chat(true), options) ==
        "<s><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 28 Nov 2026\n\n"
        "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant"
        "<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render_chat_template(fixture("mistral-7b-instruct-v0.3"), chat(false), options) ==
        "<s>[INST] Be brief.\n\nHi![/INST] Hello.</s>[INST] 2+2?[/INST]");
  CHECK(render_chat_template(fixture("qwen2.5-instruct"), chat(false), options) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\n2+2?<|im_end|>\n");
  CHECK(render_chat_template(fixture("phi-4"), chat(true), options) ==
        "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hi!<|im_end|><|im_start|>assistant"
        "<|im_sep|>Hello.<|im_end|><|im_start|>user<|im_sep|>2+2?<|im_end|><|im_start|>assistant<|im_sep|>");
  CHECK(render_chat_template(fixture("gemma-3-it"), chat(true), options) ==
        "<s><start_of_turn>user\nBe brief.\n\nHi!<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
        "<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n");
  CHECK(error_of(fixture("gemma-2-it"), chat()) == "chat template raised: System role not supported");
}

TEST_CASE("chat template: read from a checkpoint as transformers 5 does", "[chat_template]") {
  lmzoo::test::TempDir dir;
  CHECK_FALSE(read_chat_template(dir.path).has_value());
  {
    std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                                                          {"name": "default", "template": "D"}]})";
  }
  CHECK(read_chat_template(dir.path) == std::optional<std::string>("D"));
  { std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": "from config"})"; }
  CHECK(read_chat_template(dir.path) == std::optional<std::string>("from config"));
  { std::ofstream(dir / "chat_template.jinja") << "from the jinja file\n"; }
  CHECK(read_chat_template(dir.path) == std::optional<std::string>("from the jinja file\n"));
  std::filesystem::remove(dir.path / "chat_template.jinja");
  { std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": [{"name": "tool_use", "template": "T"}]})"; }
  CHECK_THROWS_WITH(read_chat_template(dir.path), Catch::Contains("none is named \"default\""));
  { std::ofstream(dir / "tokenizer_config.json") << "{not json"; }
  CHECK_THROWS_WITH(read_chat_template(dir.path), Catch::Contains("not valid JSON"));
}
