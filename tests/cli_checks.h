// Catch2 checks shared by the CLI tests: a user error is one clear stderr line with a non-zero exit;
// the last stdout line is a JSON object.
#pragma once
#include "tests/catch_compat.h"

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"

namespace lmzoo::test {

// One clear line on stderr naming expected_fragment, a non-zero exit, no crash.
inline void check_user_error(const CliResult& r, const std::string& expected_fragment) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find(expected_fragment) != std::string::npos);
  CHECK(r.err.find("terminate") == std::string::npos);
}

inline nlohmann::json last_json_line(const std::string& out) {
  auto end = out.find_last_not_of('\n');
  auto start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1, end - start));
}

}  // namespace lmzoo::test
