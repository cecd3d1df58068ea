// lmzoo eval: perplexity of a checkpoint on a prepared split or a text file (gpt: sliding window; bert:
// masked-token or --pseudo pseudo-perplexity; t5: target perplexity on seeded span-corruption batches or on
// pairs), or accuracy and macro-F1 of a classifier on a labelled file.
#include <iostream>

#include "data/interrupt.h"
#include "data/labelled_text.h"
#include "data/pairs.h"
#include "data/shards.h"
#include "data/utf8.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/classifier_eval.h"
#include "train/device.h"
#include "train/evaluator.h"
#include "train/masked_eval.h"
#include "train/seq2seq_eval.h"
#include "train/train_config.h"

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
    if (is_pairs_dir(r["data"].as<std::string>())) {
      throw UsageError(r["data"].as<std::string>() + " holds prepared pairs, which score a t5; " + checkpoint +
                       " is evaluated on token shards (lmzoo prepare --input) or --text");
    }
    out.source = r["data"].as<std::string>() + " (" + split + ")";
    check_same_tokenizer(r["data"].as<std::string>(), tokenizer, checkpoint);
    out.stream = TokenStream::open(r["data"].as<std::string>(), split, tokenizer.vocab_size());
    out.source_bytes = out.stream.source_bytes();
  } else {
    out.source = r["text"].as<std::string>();
    const std::string text = read_whole_file(out.source);
    require_utf8(text, out.source);
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

// --precision: fp32 or bf16 (fp16 needs a loss scaler, which scoring has no use for).
Precision eval_precision(const cxxopts::ParseResult& r) {
  const Precision precision = enum_option<Precision>(r, "precision");
  if (precision == Precision::kFp16) throw UsageError("--precision must be fp32 or bf16");
  return precision;
}

int eval_gpt(const cxxopts::ParseResult& r, GPT& model, const Tokenizer& tokenizer, const std::string& checkpoint,
             const torch::Device& device) {
  const ScoredText scored = text_to_score(r, tokenizer, checkpoint);
  if (scored.stream.size() < 2) throw std::runtime_error(scored.source + " has fewer than two tokens to score");
  PerplexityOptions eval_options;
  eval_options.stride = r.count("stride") ? r["stride"].as<int64_t>() : 0;  // 0: half the context
  eval_options.batch_size = r["batch-size"].as<int64_t>();
  eval_options.precision = eval_precision(r);
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
  options.precision = eval_precision(r);
  const bool pseudo = r.count("pseudo") > 0;
  const SpecialIds& special = tokenizer.special();
  const auto result =
      pseudo ? pseudo_perplexity(model, scored.stream, scored.source_bytes, special, options, device)
             : masked_token_perplexity(model, scored.stream, scored.source_bytes, special, options, device);
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
      evaluate_classifier(model, tokenizer, read_labelled_text(path), r["batch-size"].as<int64_t>(), device,
                          eval_precision(r));
  std::printf("%s: %ld examples, accuracy %.4f, macro-F1 %.4f, loss %.4f\n", path.c_str(), long(result.examples()),
              result.accuracy(), result.macro_f1(), result.to_json()["loss"].get<double>());
  std::cout << result.to_json().dump() << std::endl;
  return 0;
}

// Target perplexity: over prepared pairs (--data PAIRS_DIR), a pairs file (--pairs), or --batches seeded
// span-corruption batches of a token split (--data DIR) with the checkpoint's noise settings. bpb is null:
// targets are not one contiguous text.
int eval_t5(const cxxopts::ParseResult& r, T5& model, const CheckpointInfo& info, const Tokenizer& tokenizer,
            const torch::Device& device) {
  if (r.count("data") + r.count("pairs") != 1 || r.count("text")) {
    throw UsageError("a t5 model is evaluated on --data DIR (token shards or prepared pairs) or --pairs FILE");
  }
  const int64_t batch_size = r["batch-size"].as<int64_t>();
  const Precision precision = eval_precision(r);
  const int64_t max_len = model->config().max_seq_len;
  const SpecialIds& special = tokenizer.special();
  const int64_t pad = special.require(special.pad, "<pad>", "t5 evaluation");
  std::string source, what = "target tokens";
  PerplexityResult result;
  if (r.count("pairs")) {
    source = r["pairs"].as<std::string>();
    std::vector<Seq2SeqExample> examples;
    for (const auto& pair : read_text_pairs(source)) examples.push_back(encode_pair(tokenizer, pair, max_len, max_len));
    result = target_perplexity(model, examples, pad, batch_size, device, precision);
  } else {
    const std::string dir = r["data"].as<std::string>(), split = r["split"].as<std::string>();
    if (split != "val" && split != "train") throw UsageError("--split must be val or train");
    check_same_tokenizer(dir, tokenizer, info.dir);
    source = dir + " (" + split + ")";
    if (is_pairs_dir(dir)) {
      const auto examples = load_pairs(dir, split, special.eos, info.model.vocab_size);
      result = target_perplexity(model, examples, pad, batch_size, device, precision);
    } else {
      const TokenStream stream = TokenStream::open(dir, split, info.model.vocab_size);
      SpanOptions options;
      options.batch_size = batch_size;
      options.input_length = max_len;
      options.noise_density = info.train.noise_density;
      options.mean_noise_span_length = info.train.mean_span_length;
      const SpanBatcher batcher(stream, special, options, r["seed"].as<uint64_t>());
      for (int64_t i = 0; i < r["batches"].as<int64_t>(); ++i) {
        throw_if_interrupted("evaluating");
        add_target_nll(model, batcher.batch(i, 0), device, precision, result);
      }
      what = "span-corruption target tokens";
    }
  }
  if (result.tokens == 0) throw std::runtime_error(source + " has no target token to score");
  std::printf("%s: %ld %s, %.4f nats/token, perplexity %.3f\n", source.c_str(), long(result.tokens), what.c_str(),
              result.nll(), result.ppl());
  nlohmann::json j = result.to_json();
  j["bpb"] = nullptr;
  std::cout << j.dump() << std::endl;
  return 0;
}

// Flags that do nothing for this kind of checkpoint are refused rather than ignored: one line naming the
// flag, what it applies to, and what the checkpoint holds.
void reject_flags_for(const cxxopts::ParseResult& r, ModelKind kind, bool pairs_dir) {
  auto reject = [&](const char* flag, const std::string& applies_to) {
    if (r.count(flag)) {
      throw UsageError(std::string("--") + flag + " applies to " + applies_to + "; " +
                       r["checkpoint"].as<std::string>() + " holds a " + enum_name(kind) + " model");
    }
  };
  const bool gpt = kind == ModelKind::kGpt, bert = kind == ModelKind::kBert, t5 = kind == ModelKind::kT5;
  if (!gpt) reject("stride", "gpt checkpoints (sliding-window perplexity)");
  if (!bert) reject("pseudo", "bert checkpoints (pseudo-perplexity)");
  if (!t5) reject("pairs", "t5 checkpoints (target perplexity of a pairs file)");
  if (!t5) reject("batches", "t5 checkpoints evaluated on token shards (span-corruption batches)");
  if (!bert && !t5) reject("seed", "bert (masked-token perplexity) and t5 (span corruption) checkpoints");
  if (kind == ModelKind::kBertClassifier) reject("split", "prepared data directories, not a classifier's labelled file");
  if (r.count("text") && r.count("split")) throw UsageError("--split applies to --data, not to --text");
  if (bert && r.count("pseudo") && r.count("seed")) {
    throw UsageError("--seed sets the masks of masked-token perplexity; --pseudo masks every token in turn");
  }
  if (t5 && r.count("pairs") && r.count("split")) throw UsageError("--split applies to --data, not to --pairs");
  if (t5 && (r.count("pairs") || pairs_dir)) {
    for (const char* flag : {"batches", "seed"}) {
      if (r.count(flag)) {
        throw UsageError(std::string("--") + flag + " applies to a t5 evaluated on token shards (span corruption), "
                         "not on pairs");
      }
    }
  }
}

}  // namespace

int run_eval(int argc, char** argv) {
  cxxopts::Options options("lmzoo eval",
                           "Evaluate a checkpoint. The last stdout line is JSON: for gpt and bert tokens "
                           "(scored), nll (nats/token), ppl, bpb (bits per byte); for t5 the same with target "
                           "tokens, and bpb null (targets are not one contiguous text); for a classifier examples, "
                           "accuracy, macro_f1, loss.");
  options.add_options()
      ("checkpoint", "run directory (uses best/, else last/) or checkpoint directory", cxxopts::value<std::string>())
      ("data", "prepared data directory (t5: token shards, scored by span corruption, or prepared pairs); for a "
               "classifier a labelled .tsv/.jsonl file", cxxopts::value<std::string>())
      ("pairs", "t5: a .tsv/.jsonl pairs file to score (target perplexity)", cxxopts::value<std::string>())
      ("batches", "t5 on token shards: span-corruption batches scored", cxxopts::value<int64_t>()->default_value("20"))
      ("split", "val|train", cxxopts::value<std::string>()->default_value("val"))
      ("text", "a UTF-8 text file to score instead of --data", cxxopts::value<std::string>())
      ("stride", "gpt: window stride in tokens (default: half the context)", cxxopts::value<int64_t>())
      ("pseudo", "bert: pseudo-perplexity, each token masked in turn (default: masked-token perplexity)")
      ("seed", "bert: masking seed of masked-token perplexity; t5: span-corruption seed", cxxopts::value<uint64_t>()->default_value("1234"))
      ("batch-size", "windows (or examples) per forward pass", cxxopts::value<int64_t>()->default_value("8"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("auto"))
      ("precision", "fp32|bf16", cxxopts::value<std::string>()->default_value(enum_name(Precision::kFp32)))
      ("threads", "intra-op CPU threads", cxxopts::value<int>());
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);
  require_option(r, "checkpoint");
  if (r.count("stride") && r["stride"].as<int64_t>() < 1) throw UsageError("--stride must be positive");
  if (r["batch-size"].as<int64_t>() <= 0) throw UsageError("--batch-size must be positive");
  const int64_t batch_size = option_between(r, "batch-size", 1, train_limits::kMaxBatch);
  const std::string split = r["split"].as<std::string>();
  if (split != "val" && split != "train") throw UsageError("--split must be val or train");
  eval_precision(r);
  InterruptChecks interrupt_checks;  // Ctrl-C stops at the next batch with exit 130
  const std::string checkpoint = r["checkpoint"].as<std::string>();
  const CheckpointInfo info = open_checkpoint(checkpoint);
  const Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
  const torch::Device device = resolve_device(r["device"].as<std::string>());
  Workload workload = training_workload(info.model, batch_size);  // full windows (t5: inputs and targets)
  workload.use = MemoryUse::kInference;
  require_inference_fits(info.model, workload, device, "evaluating at --batch-size " + std::to_string(batch_size));
  AnyModel model = load_model(info, device);
  reject_flags_for(r, model.kind(), model.is<T5>() && r.count("data") && is_pairs_dir(r["data"].as<std::string>()));
  return model.visit(Overloaded{
      [&](GPT gpt) { return eval_gpt(r, gpt, tokenizer, checkpoint, device); },
      [&](Bert bert) { return eval_bert(r, bert, info, tokenizer, device); },
      [&](BertClassifier classifier) { return eval_classifier(r, classifier, tokenizer, device); },
      [&](T5 t5) {
        if (r["batches"].as<int64_t>() <= 0) throw UsageError("--batches must be positive");
        return eval_t5(r, t5, info, tokenizer, device);
      }});
}

}  // namespace lmzoo::cli
