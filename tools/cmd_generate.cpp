// lmzoo generate: continue a prompt (gpt), fill its [MASK]s (bert), or label it (bert classifier).
#include <algorithm>
#include <iostream>

#include "models/fill_mask.h"
#include "models/generation.h"
#include "train/classifier_eval.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/device.h"

namespace lmzoo::cli {

int run_generate(int argc, char** argv) {
  cxxopts::Options options("lmzoo generate", "Generate text from a prompt (printed last on stdout).");
  options.add_options()
      ("checkpoint", "run directory or checkpoint directory", cxxopts::value<std::string>())
      ("prompt", "text to continue (bert: text with [MASK]s to fill; classifier: text to label)", cxxopts::value<std::string>())
      ("prompt-pair", "classifier: the second text of a pair task", cxxopts::value<std::string>())
      ("max-new-tokens", "tokens to generate at most", cxxopts::value<int64_t>()->default_value("100"))
      ("temperature", "sampling temperature (0: greedy)", cxxopts::value<double>()->default_value("0.8"))
      ("top-k", "keep the k most likely tokens (0: all); bert: candidates per [MASK] (0: 5); classifier: labels to print (0: 1)", cxxopts::value<int64_t>()->default_value("0"))
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
  const torch::Device device = resolve_device(r["device"].as<std::string>());
  AnyModel loaded = load_model(info, device);
  const std::string prompt = r["prompt"].as<std::string>();
  if (loaded.bert) {
    // For each [MASK]: "[MASK] i:" and its candidates (quoted) with probabilities; last, the prompt with every
    // [MASK] replaced by its most likely candidate.
    std::vector<int64_t> ids;
    for (int id : tokenizer.encode(prompt)) ids.push_back(id);
    if (std::find(ids.begin(), ids.end(), special::kMask) == ids.end()) {
      throw UsageError("a bert checkpoint fills masks: put [MASK] in the --prompt");
    }
    const auto filled = fill_masks(loaded.bert, ids, sampling.top_k > 0 ? sampling.top_k : 5);
    size_t next = 0;
    std::vector<int> best(ids.begin(), ids.end());
    for (auto& id : best) {
      if (id != special::kMask) continue;
      std::printf("[MASK] %zu:", next + 1);
      for (const auto& c : filled[next]) {
        // JSON-quoted: a candidate may be a space-led word piece, a newline or a byte.
        std::printf(" %s %.4f", nlohmann::json(tokenizer.decode({int(c.id)})).dump().c_str(), c.probability);
      }
      std::printf("\n");
      id = int(filled[next++].front().id);
    }
    std::cout << tokenizer.decode(best) << std::endl;
    return 0;
  }
  if (loaded.classifier) {
    // One line per label, "label<TAB>probability", most likely first: the prediction alone by default.
    const std::string pair = r.count("prompt-pair") ? r["prompt-pair"].as<std::string>() : "";
    const auto ranked = classify_text(loaded.classifier, tokenizer, prompt, pair, device);
    const size_t shown = std::min(ranked.size(), size_t(std::max<int64_t>(1, sampling.top_k)));
    for (size_t i = 0; i < shown; ++i) std::printf("%s\t%.4f\n", ranked[i].first.c_str(), ranked[i].second);
    return 0;
  }
  GPT model = require_gpt(loaded, "generate");
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
