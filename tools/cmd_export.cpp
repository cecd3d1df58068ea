// lmzoo export: write a checkpoint as a TorchScript module runnable from Python and C++.
#include <filesystem>
#include <iostream>
#include <unistd.h>

#include "models/torchscript_export.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"

namespace lmzoo::cli {

int run_export(int argc, char** argv) {
  cxxopts::Options options("lmzoo export",
                           "Export TorchScript (GPT, BERT, BERT classifier, T5): scripted forward and, per "
                           "family, encode / decode; attributes config_json and tokenizer_model (uint8 tensor of "
                           "the SentencePiece model).");
  options.add_options()
      ("checkpoint", "run directory or checkpoint directory", cxxopts::value<std::string>())
      ("out", "output file, e.g. model.pt", cxxopts::value<std::string>());
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  require_option(r, "checkpoint");
  require_option(r, "out");
  const CheckpointInfo info = read_checkpoint(r["checkpoint"].as<std::string>());
  ExportedModel exported = export_model(load_model(info, torch::Device(torch::kCPU)), info.tokenizer_model);
  const std::string out = r["out"].as<std::string>();
  const std::string tmp = out + ".tmp-" + std::to_string(getpid());
  try {
    exported.module.save(tmp);
  } catch (const c10::Error&) {
    std::filesystem::remove(tmp);
    throw std::runtime_error("cannot write " + out);
  }
  std::filesystem::rename(tmp, out);
  std::cout << "exported " << info.dir << " (" << (info.model.labels.empty() ? info.model.arch : "bert classifier")
            << ") -> " << out << "\n";
  for (const auto& method : exported.methods) std::cout << "  " << method << "\n";
  std::cout << std::flush;
  return 0;
}

}  // namespace lmzoo::cli
