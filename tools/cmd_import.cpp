// lmzoo import: a Hugging Face model directory (GPT-2, BERT, T5, Llama, GPT-NeoX) as an lmzoo checkpoint.
#include <iostream>

#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/hf_interchange.h"

namespace lmzoo::cli {

int run_import(int argc, char** argv) {
  cxxopts::Options options("lmzoo import",
                           "Turn a Hugging Face model directory (config.json, model.safetensors or a sharded "
                           "model.safetensors.index.json, tokenizer files) into an lmzoo checkpoint that train "
                           "--init, eval, generate and export accept. Architectures: GPT2LMHeadModel, "
                           "BertForMaskedLM, BertModel, BertForSequenceClassification, T5ForConditionalGeneration "
                           "(v1.0, v1.1), LlamaForCausalLM.");
  options.custom_help("HF_DIR --out CHECKPOINT_DIR [--tokenizer DIR]").positional_help("");
  options.add_options()
      ("hf-dir", "the Hugging Face model directory (positional)", cxxopts::value<std::string>())
      ("out", "checkpoint directory to write (new, empty, or an lmzoo checkpoint to replace)",
       cxxopts::value<std::string>())
      ("tokenizer", "directory holding the tokenizer files, when HF_DIR has none: tokenizer.model / spiece.model, "
                    "vocab.json + merges.txt, or vocab.txt", cxxopts::value<std::string>()->default_value(""));
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r, "hf-dir")) return 0;
  if (!r.count("hf-dir")) throw UsageError("name the Hugging Face model directory, e.g. lmzoo import gpt2/ --out ckpt");
  require_option(r, "out");
  const auto result = import_hf_model(r["hf-dir"].as<std::string>(), r["out"].as<std::string>(),
                                      r["tokenizer"].as<std::string>());
  std::cout << "imported " << r["hf-dir"].as<std::string>() << " (" << enum_name(result.architecture) << ") -> "
            << result.checkpoint_dir << "\n";
  std::cout << "  " << result.config.n_layer << " layers, d_model " << result.config.d_model << ", vocabulary "
            << result.config.vocab_size;
  if (result.config.padded_vocab() != result.config.vocab_size) {
    std::cout << " (embedding rows " << result.config.padded_vocab() << ")";
  }
  std::cout << "\n";
  for (const auto& note : result.notes) std::cout << "  note: " << note << "\n";
  if (!result.report.kept_initial.empty()) {
    std::cout << "  not in the checkpoint, initialised: ";
    for (size_t i = 0; i < result.report.kept_initial.size(); ++i) {
      std::cout << (i ? ", " : "") << result.report.kept_initial[i];
    }
    std::cout << "\n";
  }
  if (!result.report.ignored.empty()) {
    std::cout << "  ignored (buffers, tied copies, heads lmzoo lacks): " << result.report.ignored.size()
              << " tensors\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace lmzoo::cli
