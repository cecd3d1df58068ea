// lmzoo eval: sliding-window perplexity of a checkpoint on a prepared split or a text file.
#include <iostream>

#include "data/shards.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/device.h"
#include "train/evaluator.h"

namespace lmzoo::cli {

int run_eval(int argc, char** argv) {
  cxxopts::Options options("lmzoo eval", "Perplexity of a checkpoint. The last stdout line is JSON: "
                                         "tokens, nll (nats/token), ppl, bpb (bits per byte).");
  options.add_options()
      ("checkpoint", "run directory (uses best/, else last/) or checkpoint directory", cxxopts::value<std::string>())
      ("data", "prepared data directory", cxxopts::value<std::string>())
      ("split", "val|train", cxxopts::value<std::string>()->default_value("val"))
      ("text", "a UTF-8 text file to score instead of --data", cxxopts::value<std::string>())
      ("stride", "window stride in tokens (default: half the context)", cxxopts::value<int64_t>()->default_value("0"))
      ("batch-size", "windows per forward pass", cxxopts::value<int64_t>()->default_value("8"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("auto"))
      ("precision", "fp32|bf16", cxxopts::value<std::string>()->default_value("fp32"))
      ("threads", "intra-op CPU threads", cxxopts::value<int>());
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);
  require_option(r, "checkpoint");
  if (r.count("data") == r.count("text")) throw UsageError("give exactly one of --data or --text");
  if (r["stride"].as<int64_t>() < 0 || r["batch-size"].as<int64_t>() <= 0) {
    throw UsageError("--stride must be >= 0 and --batch-size positive");
  }
  const std::string split = r["split"].as<std::string>();
  if (split != "val" && split != "train") throw UsageError("--split must be val or train");

  const std::string checkpoint = r["checkpoint"].as<std::string>();
  const CheckpointInfo info = read_checkpoint(checkpoint);
  const Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
  const torch::Device device = resolve_device(r["device"].as<std::string>());
  GPT model = load_model(info, device);

  TokenStream stream = TokenStream::from_tokens({});
  int64_t source_bytes = 0;
  std::string source;
  if (r.count("data")) {
    source = r["data"].as<std::string>() + " (" + split + ")";
    check_same_tokenizer(r["data"].as<std::string>(), tokenizer, checkpoint);
    stream = TokenStream::open(r["data"].as<std::string>(), split);
    source_bytes = stream.source_bytes();
  } else {
    source = r["text"].as<std::string>();
    const std::string text = read_whole_file(source);
    const auto ids = tokenizer.encode(text);
    stream = TokenStream::from_tokens(std::vector<int32_t>(ids.begin(), ids.end()));
    source_bytes = int64_t(text.size());
  }
  if (stream.size() < 2) throw std::runtime_error(source + " has fewer than two tokens to score");

  PerplexityOptions eval_options;
  eval_options.stride = r["stride"].as<int64_t>();
  eval_options.batch_size = r["batch-size"].as<int64_t>();
  eval_options.precision = r["precision"].as<std::string>();
  const auto result = sliding_window_perplexity(model, stream, source_bytes, eval_options, device);
  std::printf("%s: %ld tokens, %.4f nats/token, perplexity %.3f, %.4f bits/byte\n", source.c_str(),
              long(result.tokens), result.nll(), result.ppl(), result.bits_per_byte());
  std::cout << result.to_json().dump() << std::endl;
  return 0;
}

}  // namespace lmzoo::cli
