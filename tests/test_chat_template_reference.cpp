// The chat-template renderer against Python's jinja2 (Debian's python3-jinja2, set up as transformers sets it up:
// tests/chat_template_reference.py) on generated conversations for each template of tests/fixtures/chat_templates:
// byte-for-byte equal renderings, and the same raise_exception message where a template refuses a conversation.
// Skips, saying so, where /usr/bin/python3 or its jinja2 is absent.
#include "tests/catch_compat.h"

#include <cstdio>
#include <fstream>
#include <map>

#include "data/chat/chat_template.h"
#include "tests/cli_helpers.h"

using namespace lmzoo;

namespace {

// The clock tests/chat_template_reference.py fixes for strftime_now: 2026-11-28 12:00:00, a Saturday.
std::tm reference_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 28;
  tm.tm_hour = 12;
  tm.tm_wday = 6;
  tm.tm_yday = 331;
  return tm;
}

struct Tally {
  int renderings = 0, raised = 0, other_errors = 0, mismatches = 0;
};

}  // namespace

TEST_CASE("chat templates render as Python's jinja2 renders them for transformers", "[chat_template][python]") {
  if (std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") != 0) {
    WARN("skipped: /usr/bin/python3 has no jinja2 (apt-get install python3-jinja2)");
    return;
  }
  const std::string root = LMZOO_SOURCE_DIR;
  const std::string fixtures = root + "/tests/fixtures/chat_templates";
  lmzoo::test::TempDir dir;
  const std::string cases_file = dir / "cases.jsonl";
  const std::string cmd = "/usr/bin/python3 " + root + "/tests/chat_template_reference.py --seed 41 --count 120 " +
                          fixtures + "/*.jinja > " + cases_file;
  REQUIRE(std::system(cmd.c_str()) == 0);

  ChatTemplateOptions options;
  options.now = reference_now;
  std::map<std::string, Tally> tallies;
  std::map<std::string, std::shared_ptr<ChatTemplate>> parsed;
  std::ifstream in(cases_file, std::ios::binary);
  std::string line;
  int shown = 0;
  while (std::getline(in, line)) {
    const auto record = nlohmann::ordered_json::parse(line);
    const std::string name = record["name"];
    Tally& tally = tallies[name];
    auto& tpl = parsed[name];
    if (!tpl) tpl = std::make_shared<ChatTemplate>(record["template"].get<std::string>());
    std::string got, error;
    ChatTemplateError::Kind kind = ChatTemplateError::Kind::Runtime;
    try {
      got = tpl->render(record["context"], options).text;
    } catch (const ChatTemplateError& e) {
      error = e.detail();
      kind = e.kind();
    }
    bool same;
    if (record.contains("expected")) {
      ++tally.renderings;
      same = error.empty() && got == record["expected"].get<std::string>();
    } else if (record["error_kind"] == "raised") {
      ++tally.raised;
      same = kind == ChatTemplateError::Kind::Raised && error == record["error"].get<std::string>();
    } else {
      ++tally.other_errors;
      same = !error.empty() && kind != ChatTemplateError::Kind::Raised;
    }
    if (!same) {
      ++tally.mismatches;
      if (shown++ < 3) {
        INFO("template " << name << ", context " << record["context"].dump());
        INFO("jinja2: " << (record.contains("expected") ? record["expected"].get<std::string>()
                                                                 : "error " + record["error"].get<std::string>()));
        INFO("lmzoo:  " << (error.empty() ? got : "error " + error));
        CHECK(same);
      }
    }
  }
  REQUIRE(tallies.size() >= 8);
  int total = 0;
  for (const auto& [name, t] : tallies) {
    std::printf("chat template %-26s %3d renderings, %2d raised, %d other errors compared with jinja2: %d differ\n",
                name.c_str(), t.renderings, t.raised, t.other_errors, t.mismatches);
    total += t.renderings + t.raised + t.other_errors;
    CHECK(t.renderings + t.raised + t.other_errors >= 100);
    CHECK(t.mismatches == 0);
  }
  std::printf("chat templates: %d cases compared with Python's jinja2\n", total);
  std::fflush(stdout);
}
