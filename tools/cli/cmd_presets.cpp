// lmzoo presets: list named model presets with shapes and parameter counts, or --show one as JSON.
#include <cstdio>
#include <iostream>

#include "models/presets.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/commands.h"

namespace lmzoo::cli {

int run_presets(int argc, char** argv) {
  cxxopts::Options options("lmzoo presets", "List model presets; --show NAME prints its config JSON.");
  options.add_options()("show", "print the full config of one preset", cxxopts::value<std::string>());
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  if (r.count("show")) {
    std::cout << nlohmann::json(find_preset(r["show"].as<std::string>()).config).dump(2) << std::endl;
    return 0;
  }
  std::printf("%-15s %-6s %6s %6s %7s %6s %7s %14s  %-52s %s\n", "name", "family", "layers", "heads", "d_model",
              "ctx", "vocab", "parameters", "hf twin (lmzoo import)", "description");
  for (const auto& p : all_presets()) {
    const ModelConfig& c = p.config;
    const bool vocab_from_tokenizer = c.vocab_size == 0;
    ModelConfig counted = c;
    if (vocab_from_tokenizer) counted.vocab_size = 65;  // nanoGPT's Shakespeare character vocabulary
    const std::string vocab = vocab_from_tokenizer ? "65*" : std::to_string(c.vocab_size);
    const int64_t count = published_parameter_count(counted);
    std::printf("%-15s %-6s %6ld %6ld %7ld %6ld %7s %14ld  %-52s %s\n", p.name.c_str(), enum_name(c.arch).c_str(),
                long(c.n_layer), long(c.n_head), long(c.d_model), long(c.max_seq_len), vocab.c_str(), long(count),
                p.hf_twin.empty() ? "-" : p.hf_twin.c_str(), p.description.c_str());
  }
  std::printf("* vocabulary taken from the tokenizer at training time; counted here with 65 characters\n");
  std::printf("BERT counts are the encoder with its pooler, as published; the MLM head adds vocab + d^2 + 3d\n");
  std::printf("RoBERTa and DistilBERT counts are their masked-LM classes' (MLM head, no pooler; lmzoo keeps a pooler "
              "for classifiers: d^2 + d more)\n");
  return 0;
}

}  // namespace lmzoo::cli
