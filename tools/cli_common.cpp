// Helpers shared by the subcommands.
#include "tools/cli_common.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <torch/torch.h>

#include "data/shards.h"
#include "data/utf8.h"
#include "tools/cli_error.h"
#include "train/device.h"

namespace lmzoo::cli {

bool parse_or_help(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result,
                   const char* positional) {
  options.add_options()("h,help", "show this help");
  if (positional) options.parse_positional({positional});
  try {
    result = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    // cxxopts names only the bad value ("Argument 'abc' failed to parse", typographic quotes before 3.2): find its
    // flag in argv.
    const std::string message = e.what();
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto eq = arg.find('=');
      const std::string value = eq == std::string::npos ? arg : arg.substr(eq + 1);
      const bool named = message.find("\xE2\x80\x98" + value + "\xE2\x80\x99") != std::string::npos ||
                         message.find("'" + value + "'") != std::string::npos;
      if (!value.empty() && named &&
          (eq != std::string::npos || i > 1)) {
        const std::string flag = eq != std::string::npos ? arg.substr(0, eq) : argv[i - 1];
        throw UsageError(flag + ": '" + value + "' is not a valid value (see --help)");
      }
    }
    throw;
  }
  if (result.count("help")) {
    std::cout << options.help() << std::endl;
    return true;
  }
  if (!result.unmatched().empty()) throw UsageError("unexpected argument '" + result.unmatched().front() + "'");
  return false;
}

void require_option(const cxxopts::ParseResult& result, const std::string& name) {
  if (!result.count(name)) throw UsageError("--" + name + " is required");
}

void check_same_tokenizer(const std::string& data_dir, const Tokenizer& tokenizer, const std::string& checkpoint) {
  const auto manifest = read_manifest(data_dir);
  const std::string data_hash = manifest.value("tokenizer_hash", "");
  if (data_hash != tokenizer.hash()) {
    throw std::runtime_error("data in " + data_dir + " was prepared with a different tokenizer than " + checkpoint +
                             " (re-run lmzoo prepare with that checkpoint's tokenizer)");
  }
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path + " is a directory, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void apply_thread_option(const cxxopts::ParseResult& result) {
  const int threads = result.count("threads") ? result["threads"].as<int>() : 0;
  if (result.count("threads") && threads < 1) {
    throw UsageError("--threads must be at least 1, got " + std::to_string(threads));
  }
  configure_cpu_threads(threads);  // 0: LibTorch's default
}

CheckpointInfo open_checkpoint(const std::string& path) {
  try {
    return read_checkpoint(path);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("checkpoint " + path + " is corrupt: " + e.what());
  }
}

void require_utf8_option(const cxxopts::ParseResult& result, const std::string& name) {
  if (!result.count(name)) return;
  const std::string value = result[name].as<std::string>();
  const size_t at = find_invalid_utf8(value);
  if (at != std::string::npos) throw UsageError(utf8_error(value, at, "--" + name));
}

}  // namespace lmzoo::cli
