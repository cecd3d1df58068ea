// Helpers shared by the subcommands: flag parsing, help, and the flag-shaped checks (the library's checkpoint,
// data and memory checks come through train/run/run_inputs.h and train/run/session.h).
#pragma once
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "base/enum_table.h"
#include "data/tokenizers/tokenizer.h"
#include "models/memory_estimate.h"
#include "tools/cli/cli_error.h"
#include "train/checkpoint/checkpoint.h"
#include "train/run/run_inputs.h"  // open_checkpoint, check_same_tokenizer
#include "train/run/session.h"     // require_inference_fits
#include "train/train_config.h"

namespace lmzoo::cli {

// What glibc's malloc does with freed tensor memory: keep it in the heap for the next step (fast: no page faults,
// but fragments leave the peak resident memory up to 45% above the tensors' own peak), or release every block of
// 1 MB or more to the kernel at once (peak RSS = the tensors' peak plus the runtime; 15-35% slower on GPT-2 on a
// CPU); auto: release when the command line asks to save memory (--lora-rank, --activation-checkpointing), else
// keep. docs/benchmarks.md, "Memory: fine-tuning on one machine".
enum class HostMemory { kAuto, kKeep, kRelease };

}  // namespace lmzoo::cli

namespace lmzoo {
template <>
struct EnumTable<cli::HostMemory> {
  static constexpr const char* what = "host memory policy";
  static constexpr EnumEntry<cli::HostMemory> entries[] = {
      {cli::HostMemory::kAuto, "auto", "release under --lora-rank or --activation-checkpointing, else keep"},
      {cli::HostMemory::kKeep, "keep", "freed tensor memory stays in the heap: faster"},
      {cli::HostMemory::kRelease, "release", "freed tensor memory goes back to the kernel: lower peak RSS"},
  };
};
}  // namespace lmzoo

namespace lmzoo::cli {

// Sets malloc's policy for this process, keep or release (main: keep, before anything is allocated).
void set_host_memory_policy(HostMemory policy);
// --host-memory auto|keep|release (train and bench), in GROUP. apply_host_memory_option sets the policy it names
// (auto resolved against the command line's --lora-rank and --activation-checkpointing) and returns it.
void add_host_memory_option(cxxopts::Options& options, const std::string& group);
HostMemory apply_host_memory_option(const cxxopts::ParseResult& result);

// Parses argv; prints help and returns true when --help was given. With POSITIONAL (a vector option, e.g.
// "input"), arguments that follow no flag are values of that option: --input a.txt dir/ reads both.
bool parse_or_help(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result,
                   const char* positional = nullptr);
// Throws UsageError "--NAME is required" when the option is absent.
void require_option(const cxxopts::ParseResult& result, const std::string& name);
// The most threads a --threads flag may ask for: 4x this machine's cores (more only queue up and, with OpenBLAS's
// spinning pool, stall each other).
int max_threads();
// The value of --threads: a UsageError unless MIN <= N <= max_threads().
int thread_option(const cxxopts::ParseResult& result, int min);
// Applies --threads N (intra-op threads) when given; throws UsageError unless 1 <= N <= max_threads().
void apply_thread_option(const cxxopts::ParseResult& result);
// The value of an integer flag; a UsageError "--NAME must be between LO and HI, got V" outside [LO, HI].
int64_t option_between(const cxxopts::ParseResult& result, const std::string& name, int64_t lo, int64_t hi);
// Throws UsageError naming --NAME and the byte offset when the flag's value is not UTF-8.
void require_utf8_option(const cxxopts::ParseResult& result, const std::string& name);

// The value of an enum flag (given as its table name); a bad name is a UsageError listing the valid ones.
template <typename E>
E enum_option(const cxxopts::ParseResult& result, const std::string& name) {
  const std::string value = result[name].as<std::string>();
  if (auto parsed = find_enum<E>(value)) return *parsed;
  throw UsageError("--" + name + " " + value + " is not one of " + enum_choices<E>());
}

// field = the flag's value when the flag was given (enum flags through their tables).
template <typename T>
void override_from(const cxxopts::ParseResult& result, const std::string& name, T& field) {
  if (!result.count(name)) return;
  if constexpr (std::is_enum_v<T>) {
    field = enum_option<T>(result, name);
  } else {
    field = result[name].template as<T>();
  }
}

// Adds the flags of the TrainConfig fields of GROUP (train/train_fields.h), in the table's order, with the table's
// help and defaults: lmzoo train's training groups, and the "Fine-tuning and memory" group lmzoo bench shares.
void add_train_field_options(cxxopts::Options& options, const std::string& group);
// Adds the flags named in FLAGS (of any group), as the table declares them, under SHOWN_GROUP in --help: lmzoo
// bench's CUDA speed switches.
void add_train_field_options(cxxopts::Options& options, const std::vector<std::string>& flags,
                             const std::string& shown_group);
// Training flags override the config T: every field with a flag (absent ones: their defaults, as for a new run),
// or with ONLY_GIVEN just the flags given (on resume, or a command that has only some of the flags).
void apply_training_flags(const cxxopts::ParseResult& r, TrainConfig& t, bool only_given);

// A default value as --help shows it ("0.001", "cosine", "12").
template <typename T>
std::string default_text(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return enum_name(value);
  } else {
    std::ostringstream out;
    out << value;
    return out.str();
  }
}

}  // namespace lmzoo::cli
