// The installed package as a user's project meets it: `cmake --install` of this build into a fresh prefix, then
// examples/ configured with find_package(lmzoo), built and run; their output compared with the lmzoo CLI's on the
// checkpoint the training example wrote.
#include "tests/catch_compat.h"

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"
#include "lmzoo_build_paths.h"
#include "lmzoo_package_test_paths.h"

namespace fs = std::filesystem;
using namespace lmzoo::test;

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The last non-empty line of TEXT.
std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t at = t.rfind('\n');
  return at == std::string::npos ? t : t.substr(at + 1);
}

// `env CMD` (CMD may start with VAR=VALUE), failing the test with its output when it exits non-zero.
CliResult run_ok(const std::string& cmd) {
  CliResult r = run_binary("env", cmd);
  INFO(cmd << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("the installed package builds and runs the examples as an outside project", "[package]") {
  TempDir tmp;
  const std::string prefix = tmp / "prefix", examples = tmp / "examples-build";
  const std::string build_dir = fs::path(LMZOO_BINARY).parent_path().string();
  run_ok("cmake --install " + quoted(build_dir) + " --prefix " + quoted(prefix));

  // Installed: the umbrella header, a public header, the library, the bridge, the package config; internal headers
  // (kernels, the tokenizer.json parts, the bridge's) are not.
  const fs::path include = fs::path(prefix) / "include" / "lmzoo";
  CHECK(fs::exists(include / "lmzoo.h"));
  CHECK(fs::exists(include / "train" / "run" / "session.h"));
  CHECK_FALSE(fs::exists(include / "models" / "kernels"));
  CHECK_FALSE(fs::exists(include / "data" / "tokenizers" / "hf_json"));
  CHECK_FALSE(fs::exists(include / "data" / "tokenizers" / "sentencepiece_bridge.h"));
  const fs::path libdir = fs::path(prefix) / LMZOO_INSTALL_LIBDIR;
  CHECK(fs::exists(libdir / "liblmzoo_spm.so"));
  CHECK(fs::exists(libdir / "cmake" / "lmzoo" / "lmzoo-config.cmake"));

  std::string configure = "cmake -S " + quoted(std::string(LMZOO_SOURCE_DIR) + "/examples") + " -B " +
                          quoted(examples) + " -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=" +
                          quoted(LMZOO_CXX_COMPILER) + " -DCMAKE_PREFIX_PATH=" +
                          quoted(prefix + ";" + LMZOO_PREFIX_PATH);
  if (!std::string(LMZOO_COMPILER_LAUNCHER).empty()) {
    configure += " -DCMAKE_CXX_COMPILER_LAUNCHER=" + quoted(LMZOO_COMPILER_LAUNCHER);
  }
  const CliResult configured = run_ok(configure);
  CHECK(configured.err.empty());  // no warning from lmzoo's package (or LibTorch's, which it quiets)
  run_ok("cmake --build " + quoted(examples) + " -j2");

  // The program's own loop on lmzoo's objective: the loss falls; the bridge comes from the installed prefix.
  const std::string corpus = std::string(LMZOO_SOURCE_DIR) + "/README.md", run = tmp / "run";
  const CliResult trained =
      run_ok("LD_DEBUG=files " + quoted(examples + "/custom_training_loop") + " " + quoted(corpus) + " " +
             quoted(run) + " 150");
  const auto summary = nlohmann::json::parse(last_line(trained.out));
  CHECK(summary["last_loss"].get<double>() < summary["first_loss"].get<double>() - 1.5);
  CHECK(trained.err.find("file=" + (libdir / "liblmzoo_spm.so").string()) != std::string::npos);

  // The CLI reads the program's checkpoint, and the library's Session gives what the CLI prints.
  const std::string checkpoint = run + "/model", prompt = "lmzoo trains";
  const CliResult example =
      run_ok(quoted(examples + "/load_and_generate") + " " + quoted(checkpoint) + " " + quoted(corpus) + " " +
             quoted(prompt) + " 20");
  const CliResult eval = run_cli("eval --checkpoint " + quoted(checkpoint) + " --text " + quoted(corpus));
  REQUIRE(eval.exit_code == 0);
  const CliResult generated = run_cli("generate --checkpoint " + quoted(checkpoint) + " --prompt " + quoted(prompt) +
                                      " --temperature 0 --max-new-tokens 20");
  REQUIRE(generated.exit_code == 0);
  const size_t first_newline = example.out.find('\n');
  CHECK(example.out.substr(0, first_newline) == last_line(eval.out));
  CHECK(example.out.substr(first_newline + 1) == generated.out);
  CHECK(generated.out.rfind(prompt, 0) == 0);
}
