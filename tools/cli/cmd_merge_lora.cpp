// lmzoo merge-lora: a LoRA run's adapters folded into its base, written as a whole-model checkpoint.
#include <iostream>

#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/peft/lora_merge.h"

namespace lmzoo::cli {

int run_merge_lora(int argc, char** argv) {
  cxxopts::Options options("lmzoo merge-lora",
                           "Fold a LoRA run's adapters into the base weights they were trained on (W += alpha/r B A) "
                           "and write the result as a checkpoint that eval, generate, export and train --init accept.");
  options.custom_help("CHECKPOINT --out DIR [--base BASE]").positional_help("");
  options.add_options()
      ("checkpoint", "the LoRA run directory or checkpoint (positional)", cxxopts::value<std::string>())
      ("out", "the new checkpoint directory to write (must not exist)", cxxopts::value<std::string>())
      ("base", "the base checkpoint, when it has moved (default: the one the run names); its weights must be the "
               "ones the adapters were trained on", cxxopts::value<std::string>()->default_value(""));
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r, "checkpoint")) return 0;
  if (!r.count("checkpoint")) throw UsageError("name the LoRA run, e.g. lmzoo merge-lora runs/lora --out merged");
  require_option(r, "out");
  const CheckpointInfo info = open_checkpoint(r["checkpoint"].as<std::string>());
  const std::string out = r["out"].as<std::string>();
  write_merged_checkpoint(info, out, r["base"].as<std::string>());
  std::cout << "merged the rank-" << info.train.lora_rank << " adapters of " << info.dir << " into "
            << (r["base"].as<std::string>().empty() ? info.train.init_checkpoint : r["base"].as<std::string>())
            << " -> " << out << std::endl;
  return 0;
}

}  // namespace lmzoo::cli
