// lmzoo eval: perplexity of a checkpoint on a prepared split or a text file (gpt: sliding window; bert:
// masked-token or --pseudo pseudo-perplexity), or accuracy and macro-F1 of a classifier on a labelled file.
#include <iostream>

#include "data/labelled_text.h"
#include "data/shards.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/classifier_eval.h"
#include "train/device.h"
#include "train/evaluator.h"
#include "train/masked_eval.h"

namespace lmzoo::cli {

namespace {

// The tokens to score: a prepared split (--data DIR [--split]) or a text file (--text).
struct ScoredText {
  TokenStream stream = TokenStream::from_tokens({});
  int64_t source_bytes = 0;
  std::string source;
};

ScoredText text_to_score(const cxxopts::ParseResult& r, const Tokenizer& tokenizer, const std::string& checkpoint) {
  if (r.count("data") == r.count("text")) throw UsageError("give exactly one of --data or --text");
  const std::string split = r["split"].as<std::string>();
  if (split != "val" && split != "train") throw UsageError("--split must be val or train");
  ScoredText out;
  if (r.count("data")) {
    out.source = r["data"].as<std::string>() + " (" + split + ")";
    check_same_tokenizer(r["data"].as<std::string>(), tokenizer, checkpoint);
    out.stream = TokenStream::open(r["data"].as<std::string>(), split);
    out.source_bytes = out.stream.source_bytes();
  } else {
    out.source = r["text"].as<std::string>();
    const std::string text = read_whole_file(out.source);
    const auto ids = tokenizer.encode(text);
    out.stream = TokenStream::from_tokens(std::vector<int32_t>(ids.begin(), ids.end()));
    out.source_bytes = int64_t(text.size());
  }
  return out;
}

void print_perplexity(const std::string& source, const std::string& what, const PerplexityResult& result) {
  std::printf("%s: %ld %s, %.4f nats/token, perplexity %.3f, %.4f bits/byte\n", source.c_str(), long(result.tokens),
              what.c_str(), result.nll(), result.ppl(), result.bits_per_byte());
  std::cout << result.to_json().dump() << std::endl;
}

int eval_gpt(const cxxopts::ParseResult& r, GPT& model, const Tokenizer& tokenizer, const std::string& checkpoint,
             const torch::Device& device) {
  const ScoredText scored = text_to_score(r, tokenizer, checkpoint);
  if (scored.stream.size() < 2) throw std::runtime_error(scored.source + " has fewer than two tokens to score");
  PerplexityOptions eval_options;
  eval_options.stride = r["stride"].as<int64_t>();
  eval_options.batch_size = r["batch-size"].as<int64_t>();
  eval_options.precision = r["precision"].as<std::string>();
  print_perplexity(scored.source, "tokens",
                   sliding_window_perplexity(model, scored.stream, scored.source_bytes, eval_options, device));
  return 0;
}

// Masking rates are the checkpoint's training rates; the seed makes the masks reproducible.
int eval_bert(const cxxopts::ParseResult& r, Bert& model, const CheckpointInfo& info, const Tokenizer& tokenizer,
              const torch::Device& device) {
  const ScoredText scored = text_to_score(r, tokenizer, info.dir);
  MaskedEvalOptions options;
  options.batch_size = r["batch-size"].as<int64_t>();
  options.seed = r["seed"].as<uint64_t>();
  options.masking = {info.train.mlm_probability, info.train.mask_rate, info.train.random_rate, false};
  const bool pseudo = r.count("pseudo") > 0;
  const auto result = pseudo ? pseudo_perplexity(model, scored.stream, scored.source_bytes, options, device)
                             : masked_token_perplexity(model, scored.stream, scored.source_bytes, options, device);
  if (result.tokens == 0) throw std::runtime_error(scored.source + " has no token to score");
  print_perplexity(scored.source, pseudo ? "tokens (pseudo-log-likelihood)" : "masked tokens", result);
  return 0;
}

int eval_classifier(const cxxopts::ParseResult& r, BertClassifier& model, const Tokenizer& tokenizer,
                    const torch::Device& device) {
  if (!r.count("data") || r.count("text")) {
    throw UsageError("a classifier is evaluated on a labelled file: --data FILE.tsv|FILE.jsonl");
  }
  const std::string path = r["data"].as<std::string>();
  const auto result =
      evaluate_classifier(model, tokenizer, read_labelled_text(path), r["batch-size"].as<int64_t>(), device);
  std::printf("%s: %ld examples, accuracy %.4f, macro-F1 %.4f, loss %.4f\n", path.c_str(), long(result.examples()),
              result.accuracy(), result.macro_f1(), result.to_json()["loss"].get<double>());
  std::cout << result.to_json().dump() << std::endl;
  return 0;
}

}  // namespace

int run_eval(int argc, char** argv) {
  cxxopts::Options options("lmzoo eval",
                           "Evaluate a checkpoint. The last stdout line is JSON: for gpt and bert tokens "
                           "(scored), nll (nats/token), ppl, bpb (bits per byte); for a classifier examples, "
                           "accuracy, macro_f1, loss.");
  options.add_options()
      ("checkpoint", "run directory (uses best/, else last/) or checkpoint directory", cxxopts::value<std::string>())
      ("data", "prepared data directory; for a classifier a labelled .tsv/.jsonl file", cxxopts::value<std::string>())
      ("split", "val|train", cxxopts::value<std::string>()->default_value("val"))
      ("text", "a UTF-8 text file to score instead of --data", cxxopts::value<std::string>())
      ("stride", "gpt: window stride in tokens (default: half the context)", cxxopts::value<int64_t>()->default_value("0"))
      ("pseudo", "bert: pseudo-perplexity, each token masked in turn (default: masked-token perplexity)")
      ("seed", "bert: masking seed of masked-token perplexity", cxxopts::value<uint64_t>()->default_value("1234"))
      ("batch-size", "windows (or examples) per forward pass", cxxopts::value<int64_t>()->default_value("8"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("auto"))
      ("precision", "fp32|bf16", cxxopts::value<std::string>()->default_value("fp32"))
      ("threads", "intra-op CPU threads", cxxopts::value<int>());
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);
  require_option(r, "checkpoint");
  if (r["stride"].as<int64_t>() < 0 || r["batch-size"].as<int64_t>() <= 0) {
    throw UsageError("--stride must be >= 0 and --batch-size positive");
  }
  const std::string checkpoint = r["checkpoint"].as<std::string>();
  const CheckpointInfo info = read_checkpoint(checkpoint);
  const Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
  const torch::Device device = resolve_device(r["device"].as<std::string>());
  AnyModel model = load_model(info, device);
  if (model.classifier) return eval_classifier(r, model.classifier, tokenizer, device);
  if (model.bert) return eval_bert(r, model.bert, info, tokenizer, device);
  GPT gpt = require_gpt(model, "eval");
  return eval_gpt(r, gpt, tokenizer, checkpoint, device);
}

}  // namespace lmzoo::cli
