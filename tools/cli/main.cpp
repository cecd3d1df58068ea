// lmzoo: git-style dispatcher to the subcommands (tokenizer, prepare, train, eval, ...).
#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include <torch/version.h>

#include "base/interrupt.h"
#include "lmzoo_build_config.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "tools/cli/version.h"
#include "train/device/device.h"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

const Subcommand kSubcommands[] = {
    {"tokenizer", lmzoo::cli::run_tokenizer, "train a SentencePiece tokenizer; encode / decode stdin"},
    {"prepare", lmzoo::cli::run_prepare, "tokenize a corpus into train/val token shards"},
    {"train", lmzoo::cli::run_train, "train a model (or --resume a run)"},
    {"eval", lmzoo::cli::run_eval, "perplexity of a checkpoint on shards or a text file"},
    {"generate", lmzoo::cli::run_generate, "generate text from a prompt"},
    {"export", lmzoo::cli::run_export, "export a checkpoint as TorchScript or a Hugging Face directory"},
    {"import", lmzoo::cli::run_import, "turn a Hugging Face model directory into a checkpoint"},
    {"merge-lora", lmzoo::cli::run_merge_lora, "fold a LoRA run's adapters into its base as a new checkpoint"},
    {"presets", lmzoo::cli::run_presets, "list named model presets with parameter counts"},
    {"bench", lmzoo::cli::run_bench, "measure training speed (ms/iter, tokens/s, MFU)"},
    {"plot", lmzoo::cli::run_plot, "draw loss and learning-rate curves of runs as an SVG"},
};

void print_usage(std::ostream& out) {
  out << "lmzoo: train, evaluate, sample and export transformer language models\n\n"
      << "usage: lmzoo <command> [options]   (lmzoo <command> --help for its options; lmzoo --version)\n\ncommands:\n";
  for (const auto& c : kSubcommands) {
    out << "  " << c.name << std::string(12 - std::min<size_t>(11, std::strlen(c.name)), ' ') << c.summary << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  lmzoo::cli::set_host_memory_policy(lmzoo::cli::HostMemory::kKeep);  // train and bench: --host-memory
  lmzoo::configure_cpu_threads(0);  // OpenBLAS follows LibTorch's thread count (--threads changes both)
  if (argc < 2) {
    std::string names;
    for (const auto& c : kSubcommands) names += std::string(names.empty() ? "" : ", ") + c.name;
    std::cerr << "lmzoo: error: no command given; one of " << names << " (see lmzoo --help)\n";
    return 2;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(std::cout);
    return 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::cout << "lmzoo " << lmzoo::kVersion << " (LibTorch " << TORCH_VERSION << ", CUDA "
              << (LMZOO_WITH_CUDA ? "yes" : "no") << ")\n";
    return 0;
  }
  for (const auto& c : kSubcommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    lmzoo::install_interrupt_handlers(std::string("lmzoo ") + c.name);
    // Past a file-size limit (ulimit -f) a write fails with EFBIG, reported like a full disk, instead of the
    // process dying of SIGXFSZ with no message.
    std::signal(SIGXFSZ, SIG_IGN);
    return lmzoo::cli::guarded(c.name, c.run, argc - 1, argv + 1);
  }
  std::cerr << "lmzoo: error: unknown command '" << argv[1] << "' (see lmzoo --help)\n";
  return 2;
}
