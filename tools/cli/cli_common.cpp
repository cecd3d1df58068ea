// Helpers shared by the subcommands.
#include "tools/cli/cli_common.h"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <torch/torch.h>

#include "data/unicode/utf8.h"
#include "tools/cli/cli_error.h"
#include "train/device/device.h"
#include "train/device/device_peak.h"

namespace lmzoo::cli {

namespace {

// Whether ARGS (a flag as argv gave it: "--flag=value", or "--flag" "value") fails to parse on its own.
bool fails_alone(cxxopts::Options& options, std::vector<std::string> args) {
  args.insert(args.begin(), "lmzoo");
  std::vector<const char*> pointers;
  for (const auto& a : args) pointers.push_back(a.c_str());
  try {
    options.parse(int(pointers.size()), pointers.data());
  } catch (const cxxopts::exceptions::incorrect_argument_type&) {
    return true;
  } catch (const cxxopts::exceptions::exception&) {
  }
  return false;
}

// "--flag: 'value' is not a valid value" for the flag whose value cxxopts could not parse. Its message names only
// the value ("Argument 'abc' failed to parse", typographic quotes before 3.2), which several flags may share
// (--steps 5 --tie-embeddings=5): the one that fails when parsed alone is the culprit. "" when none is found.
std::string unparsed_flag(cxxopts::Options& options, const std::string& message, int argc, char** argv) {
  std::string first;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const std::string value = eq == std::string::npos ? arg : arg.substr(eq + 1);
    const bool named = message.find("\xE2\x80\x98" + value + "\xE2\x80\x99") != std::string::npos ||
                       message.find("'" + value + "'") != std::string::npos;
    if (value.empty() || !named || (eq == std::string::npos && i == 1)) continue;
    const std::string flag = eq != std::string::npos ? arg.substr(0, eq) : argv[i - 1];
    const std::string line = flag + ": '" + value + "' is not a valid value";
    if (first.empty()) first = line;
    const auto alone = eq != std::string::npos ? std::vector<std::string>{arg} : std::vector<std::string>{flag, value};
    if (fails_alone(options, alone)) return line;
  }
  return first;
}

// A flag's default, shown in --help and taken when the flag is absent.
template <typename T>
std::shared_ptr<cxxopts::Value> value_with_default(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return cxxopts::value<std::string>()->default_value(default_text(value));
  } else {
    return cxxopts::value<T>()->default_value(default_text(value));
  }
}

// A training flag's value: kValue shows the field's default in --help; kOptional booleans take an implicit
// "true" (--tf32, --tf32=false); kSwitch takes no value.
template <typename T>
std::shared_ptr<cxxopts::Value> train_flag_value(TrainFlagKind kind, const T& default_value) {
  if (kind == TrainFlagKind::kSwitch) return cxxopts::value<bool>();
  if (kind == TrainFlagKind::kValue) return value_with_default(default_value);
  if constexpr (std::is_same_v<T, bool>) {
    return cxxopts::value<bool>()->implicit_value("true");
  } else if constexpr (std::is_enum_v<T>) {
    return cxxopts::value<std::string>();
  } else {
    return cxxopts::value<T>();
  }
}

}  // namespace

bool parse_or_help(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result,
                   const char* positional) {
  options.add_options()("h,help", "show this help");
  if (positional) options.parse_positional({positional});
  try {
    result = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    const std::string line = unparsed_flag(options, e.what(), argc, argv);
    if (line.empty()) throw;
    throw UsageError(line + " (see --help)");
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

int max_threads() { return 4 * int(std::max(1u, std::thread::hardware_concurrency())); }

int thread_option(const cxxopts::ParseResult& result, int min) {
  const int threads = result["threads"].as<int>();
  if (threads < min) throw UsageError("--threads must be at least " + std::to_string(min) + ", got " + std::to_string(threads));
  if (threads > max_threads()) {
    throw UsageError("--threads " + std::to_string(threads) + " is too many: at most " + std::to_string(max_threads()) +
                     " (4x this machine's " + std::to_string(max_threads() / 4) + " cores)");
  }
  return threads;
}

void set_host_memory_policy(HostMemory policy) {
  if (policy != HostMemory::kRelease) {
    // Without this glibc unmaps every large activation after each step and the next step page-faults it back in,
    // zeroed (measured: ~15% of a gpt-nano training step on this machine).
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  } else {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);  // a fixed threshold: blocks of 1 MB or more are unmapped when freed
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
    malloc_trim(0);
  }
}

void add_host_memory_option(cxxopts::Options& options, const std::string& group) {
  options.add_options(group)("host-memory",
                             "what malloc does with freed tensor memory on the CPU: keep (in the heap: faster), "
                             "release (to the kernel: a lower peak RSS, the one --dry-run predicts), or auto "
                             "(release under --lora-rank or --activation-checkpointing, else keep) " +
                                 enum_choices<HostMemory>(),
                             cxxopts::value<std::string>()->default_value("auto"));
}

HostMemory apply_host_memory_option(const cxxopts::ParseResult& result) {
  HostMemory policy = enum_option<HostMemory>(result, "host-memory");
  if (policy == HostMemory::kAuto) {
    const bool lora = result.count("lora-rank") && result["lora-rank"].as<int64_t>() > 0;
    const bool checkpointing =
        result.count("activation-checkpointing") && result["activation-checkpointing"].as<std::string>() != "none";
    policy = lora || checkpointing ? HostMemory::kRelease : HostMemory::kKeep;
  }
  set_host_memory_policy(policy);
  return policy;
}

void apply_thread_option(const cxxopts::ParseResult& result) {
  configure_cpu_threads(result.count("threads") ? thread_option(result, 1) : 0);  // 0: LibTorch's default
}

int64_t option_between(const cxxopts::ParseResult& result, const std::string& name, int64_t lo, int64_t hi) {
  const int64_t value = result[name].as<int64_t>();
  if (value < lo || value > hi) {
    throw UsageError("--" + name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                     std::to_string(value));
  }
  return value;
}

void require_utf8_option(const cxxopts::ParseResult& result, const std::string& name) {
  if (!result.count(name)) return;
  const std::string value = result[name].as<std::string>();
  const size_t at = find_invalid_utf8(value);
  if (at != std::string::npos) throw UsageError(utf8_error(value, at, "--" + name));
}

namespace {

// Adds, under SHOWN_GROUP in --help, the flag of every TrainConfig field for which WANTED(flag, field's group) holds,
// in the table's order, with its help and default.
template <typename Wanted>
void add_train_fields_where(cxxopts::Options& options, const std::string& shown_group, Wanted wanted) {
  const TrainConfig defaults;
  auto add = options.add_options(shown_group);
#define LMZOO_TRAIN_FIELD_OPTION(type, name, default_value, flag, flag_kind, field_group, resumable, help) \
  if (TrainFlagKind::flag_kind != TrainFlagKind::kNone && wanted(flag, field_group)) {                    \
    if (TrainFlagKind::flag_kind == TrainFlagKind::kSwitch) {                                             \
      add(flag, help);                                                                                     \
    } else {                                                                                               \
      add(flag, help, train_flag_value(TrainFlagKind::flag_kind, defaults.name));                         \
    }                                                                                                      \
  }
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_TRAIN_FIELD_OPTION)
#undef LMZOO_TRAIN_FIELD_OPTION
}

}  // namespace

void add_train_field_options(cxxopts::Options& options, const std::string& group) {
  add_train_fields_where(options, group,
                         [&](const std::string&, const std::string& field_group) { return field_group == group; });
}

void add_train_field_options(cxxopts::Options& options, const std::vector<std::string>& flags,
                             const std::string& shown_group) {
  add_train_fields_where(options, shown_group, [&](const std::string& flag, const std::string&) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  });
}

void apply_training_flags(const cxxopts::ParseResult& r, TrainConfig& t, bool only_given) {
  auto set = [&](const char* flag, TrainFlagKind kind, auto& field) {
    using Field = std::decay_t<decltype(field)>;
    if (kind == TrainFlagKind::kNone) return;  // set from --objective, --data, ... by the caller
    const bool given = r.count(flag) > 0;
    if (!given && (only_given || kind == TrainFlagKind::kOptional)) return;
    if constexpr (std::is_same_v<Field, bool>) {
      field = kind == TrainFlagKind::kSwitch ? given : r[flag].as<bool>();
    } else if constexpr (std::is_enum_v<Field>) {
      field = enum_option<Field>(r, flag);
    } else {
      field = r[flag].as<Field>();
    }
  };
#define LMZOO_APPLY_TRAIN_FLAG(type, name, default_value, flag, flag_kind, group, resumable, help) \
  set(flag, TrainFlagKind::flag_kind, t.name);
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_APPLY_TRAIN_FLAG)
#undef LMZOO_APPLY_TRAIN_FLAG
}

}  // namespace lmzoo::cli
