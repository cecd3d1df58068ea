// The Hugging Face tokenizers library (Rust, through npm; tools/hf_tokenizers) as a test reference: where it is
// installed, running its node scripts, and comparing JSONL outputs line by line. Leaves out installing it.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lmzoo_build_paths.h"
#include "tests/cli_helpers.h"

namespace lmzoo::test {

// tools/fetch_hf_tokenizers.sh's folder: LMZOO_HF_TOKENIZERS, else ${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}/hf_tokenizers.
inline std::string hf_tokenizers_dir() {
  if (const char* env = std::getenv("LMZOO_HF_TOKENIZERS"); env && *env) return env;
  const char* cache = std::getenv("LMZOO_NPM_CACHE");
  if (cache && *cache) return std::string(cache) + "/hf_tokenizers";
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.cache/lmzoo/npm/hf_tokenizers" : "";
}

inline std::string hf_script(const std::string& name) {
  return std::string(LMZOO_SOURCE_DIR) + "/tools/hf_tokenizers/" + name;
}

// Why the reference cannot run here ("" when it can): node missing, or the packages not installed or not loading.
inline std::string hf_reference_missing() {
  const std::string dir = hf_tokenizers_dir();
  if (dir.empty() || !std::filesystem::exists(dir + "/.installed")) {
    return "the tokenizers reference is not installed (tools/fetch_hf_tokenizers.sh)";
  }
  const std::string probe = "LMZOO_HF_TOKENIZERS='" + dir + "' node -e 'require(process.argv[1]).tokenizers()' '" +
                            hf_script("reference.js") + "' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) return "node cannot load the tokenizers reference in " + dir;
  return "";
}

// Runs `node tools/hf_tokenizers/SCRIPT ARGS` (ARGS already quoted) with stdout to OUT; "" on success, else stderr.
inline std::string run_hf_script(const std::string& script, const std::string& args, const std::string& out) {
  TempDir tmp;
  const std::string cmd = "LMZOO_HF_TOKENIZERS='" + hf_tokenizers_dir() + "' node '" + hf_script(script) + "' " + args +
                          " >'" + out + "' 2>'" + (tmp / "err") + "' </dev/null";
  if (std::system(cmd.c_str()) == 0) return "";
  const std::string err = read_text(tmp.path / "err");
  return err.empty() ? "node " + script + " failed" : err;
}

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Line-by-line comparison of two JSONL outputs for the inputs INPUTS (each line parsed, so JSON spelling differences
// do not count).
struct LineComparison {
  size_t total = 0;         // input lines
  size_t equal = 0;         // lines whose values are equal
  long first_diff = -1;     // 0-based index of the first differing line, -1 when none
  std::string report;       // the first difference, for INFO
};

inline std::string clip(const std::string& s, size_t n = 300) {
  return s.size() <= n ? s : s.substr(0, n) + "... (" + std::to_string(s.size()) + " bytes)";
}

inline LineComparison compare_jsonl(const std::vector<std::string>& inputs, const std::string& expected,
                                    const std::string& actual) {
  const std::vector<std::string> want = split_lines(expected), got = split_lines(actual);
  LineComparison c;
  c.total = inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto parse = [](const std::vector<std::string>& lines, size_t i) {
      return i < lines.size() ? nlohmann::json::parse(lines[i], nullptr, false) : nlohmann::json();
    };
    const nlohmann::json w = parse(want, i), g = parse(got, i);
    if (!w.is_discarded() && !w.is_null() && w == g) {
      ++c.equal;
      continue;
    }
    if (c.first_diff < 0) {
      c.first_diff = static_cast<long>(i);
      c.report = "line " + std::to_string(i + 1) + ": input " + clip(inputs[i]) + "\n  reference " +
                 clip(i < want.size() ? want[i] : "(missing)") + "\n  lmzoo     " +
                 clip(i < got.size() ? got[i] : "(missing)");
    }
  }
  return c;
}

}  // namespace lmzoo::test
