// lmzoo generate: continue a prompt with a trained decoder-only checkpoint.
#include <iostream>

#include "models/generation.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/device.h"

namespace lmzoo::cli {

int run_generate(int argc, char** argv) {
  cxxopts::Options options("lmzoo generate", "Generate text from a prompt (printed last on stdout).");
  options.add_options()
      ("checkpoint", "run directory or checkpoint directory", cxxopts::value<std::string>())
      ("prompt", "text to continue", cxxopts::value<std::string>())
      ("max-new-tokens", "tokens to generate at most", cxxopts::value<int64_t>()->default_value("100"))
      ("temperature", "sampling temperature (0: greedy)", cxxopts::value<double>()->default_value("0.8"))
      ("top-k", "keep the k most likely tokens (0: all)", cxxopts::value<int64_t>()->default_value("0"))
      ("top-p", "nucleus sampling mass (1: off)", cxxopts::value<double>()->default_value("1.0"))
      ("seed", "sampling seed", cxxopts::value<uint64_t>()->default_value("1337"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("auto"));
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  require_option(r, "checkpoint");
  require_option(r, "prompt");
  SamplingOptions sampling;
  sampling.max_new_tokens = r["max-new-tokens"].as<int64_t>();
  sampling.temperature = r["temperature"].as<double>();
  sampling.top_k = r["top-k"].as<int64_t>();
  sampling.top_p = r["top-p"].as<double>();
  sampling.seed = r["seed"].as<uint64_t>();
  sampling.eos_id = special::kEos;
  if (sampling.max_new_tokens < 0) throw UsageError("--max-new-tokens must be >= 0");
  if (sampling.temperature < 0) throw UsageError("--temperature must be >= 0");
  if (sampling.top_k < 0) throw UsageError("--top-k must be >= 0");
  if (!(sampling.top_p > 0 && sampling.top_p <= 1)) throw UsageError("--top-p must be in (0, 1]");

  const CheckpointInfo info = read_checkpoint(r["checkpoint"].as<std::string>());
  const Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
  GPT model = load_model(info, resolve_device(r["device"].as<std::string>()));
  const std::string prompt = r["prompt"].as<std::string>();
  std::vector<int64_t> prompt_ids;
  for (int id : tokenizer.encode(prompt)) prompt_ids.push_back(id);
  if (prompt_ids.empty()) prompt_ids.push_back(special::kEos);  // empty prompt: start a new document
  const auto generated = generate_tokens(model, prompt_ids, sampling);
  std::vector<int> text_ids;
  for (int64_t id : generated) if (id != special::kEos) text_ids.push_back(int(id));
  std::cout << prompt << tokenizer.decode(text_ids) << std::endl;
  return 0;
}

}  // namespace lmzoo::cli
