// lmzoo eval: flags to an EvalRequest (train/eval/evaluation.h) and its report printed: perplexity (gpt, bert, t5) or
// accuracy and macro-F1 (classifier); flags that do not apply to the checkpoint's family are refused by name.
#include <cstdio>
#include <iostream>

#include "base/interrupt.h"
#include "data/corpus/pairs.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/eval/evaluation.h"
#include "train/train_config.h"

namespace lmzoo::cli {

namespace {

void print_report(const EvalReport& report) {
  if (report.classification) {
    const ClassificationResult& c = *report.classification;
    std::printf("%s: %ld examples, accuracy %.4f, macro-F1 %.4f, loss %.4f\n", report.source.c_str(),
                long(c.examples()), c.accuracy(), c.macro_f1(), c.to_json()["loss"].get<double>());
  } else if (report.has_bits_per_byte) {
    const PerplexityResult& p = *report.perplexity;
    std::printf("%s: %ld %s, %.4f nats/token, perplexity %.3f, %.4f bits/byte\n", report.source.c_str(),
                long(p.tokens), report.what.c_str(), p.nll(), p.ppl(), p.bits_per_byte());
  } else {
    const PerplexityResult& p = *report.perplexity;
    std::printf("%s: %ld %s, %.4f nats/token, perplexity %.3f\n", report.source.c_str(), long(p.tokens),
                report.what.c_str(), p.nll(), p.ppl());
  }
  std::cout << report.to_json().dump() << std::endl;
}

// --precision: fp32 or bf16 (fp16 needs a loss scaler, which scoring has no use for).
Precision eval_precision(const cxxopts::ParseResult& r) {
  const Precision precision = enum_option<Precision>(r, "precision");
  if (precision == Precision::kFp16) throw UsageError("--precision must be fp32 or bf16");
  return precision;
}

// The sources each kind of checkpoint reads, refused by flag before anything is loaded.
void require_sources_for(const cxxopts::ParseResult& r, const Session& session) {
  switch (session.kind()) {
    case ModelKind::kClassifier:
      if (!r.count("data") || r.count("text")) {
        throw UsageError("a classifier is evaluated on a labelled file: --data FILE.tsv|FILE.jsonl");
      }
      return;
    case ModelKind::kSeq2seq:
      if (r.count("data") + r.count("pairs") != 1 || r.count("text")) {
        throw UsageError("a t5 model is evaluated on --data DIR (token shards or prepared pairs) or --pairs FILE");
      }
      if (r["batches"].as<int64_t>() <= 0) throw UsageError("--batches must be positive");
      return;
    case ModelKind::kCausalLm:
    case ModelKind::kMaskedLm:
      if (r.count("data") == r.count("text")) throw UsageError("give exactly one of --data or --text");
      return;
  }
}

// Whether FLAG (one of kKindFlags below) means something for a checkpoint of KIND.
bool flag_applies(const std::string& flag, ModelKind kind) {
  switch (kind) {
    case ModelKind::kCausalLm: return flag == "stride" || flag == "split";
    case ModelKind::kMaskedLm: return flag == "pseudo" || flag == "seed" || flag == "split";
    case ModelKind::kClassifier: return false;
    case ModelKind::kSeq2seq: return flag == "pairs" || flag == "batches" || flag == "seed" || flag == "split";
  }
  return false;
}

// The flags that apply to some kinds of checkpoint only, and what they apply to.
const std::vector<std::pair<std::string, std::string>> kKindFlags = {
    {"stride", "gpt checkpoints (sliding-window perplexity)"},
    {"pseudo", "bert checkpoints (pseudo-perplexity)"},
    {"pairs", "t5 checkpoints (target perplexity of a pairs file)"},
    {"batches", "t5 checkpoints evaluated on token shards (span-corruption batches)"},
    {"seed", "bert (masked-token perplexity) and t5 (span corruption) checkpoints"},
    {"split", "prepared data directories, not a classifier's labelled file"}};

EvalRequest eval_request(const cxxopts::ParseResult& r) {
  EvalRequest request;
  auto text = [&](const char* flag) { return r.count(flag) ? r[flag].as<std::string>() : std::string(); };
  request.data_dir = text("data");
  request.text_file = text("text");
  request.pairs_file = text("pairs");
  request.split = r["split"].as<std::string>();
  request.batch_size = r["batch-size"].as<int64_t>();
  request.stride = r.count("stride") ? r["stride"].as<int64_t>() : 0;  // 0: half the context
  request.pseudo = r.count("pseudo") > 0;
  request.seed = r["seed"].as<uint64_t>();
  request.span_batches = r["batches"].as<int64_t>();
  request.precision = eval_precision(r);
  return request;
}

// Flags that do nothing for this kind of checkpoint are refused rather than ignored: one line naming the
// flag, what it applies to, and what the checkpoint holds.
void reject_flags_for(const cxxopts::ParseResult& r, const Session& session, bool pairs_dir) {
  auto reject = [&](const char* flag, const std::string& applies_to) {
    if (r.count(flag)) {
      throw UsageError(std::string("--") + flag + " applies to " + applies_to + "; " +
                       r["checkpoint"].as<std::string>() + " holds a " + family_name(session.config()) + " model");
    }
  };
  for (const auto& [flag, applies_to] : kKindFlags) {
    if (!flag_applies(flag, session.kind())) reject(flag.c_str(), applies_to);
  }
  const bool bert = session.kind() == ModelKind::kMaskedLm, t5 = session.kind() == ModelKind::kSeq2seq;
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
  option_between(r, "batch-size", 1, train_limits::kMaxBatch);
  const std::string split = r["split"].as<std::string>();
  if (split != "val" && split != "train") throw UsageError("--split must be val or train");
  eval_precision(r);
  InterruptChecks interrupt_checks;  // Ctrl-C stops at the next batch with exit 130
  Session session = Session::open(r["checkpoint"].as<std::string>(), r["device"].as<std::string>());
  reject_flags_for(r, session, session.kind() == ModelKind::kSeq2seq && r.count("data") &&
                                   is_pairs_dir(r["data"].as<std::string>()));
  require_sources_for(r, session);
  print_report(evaluate(session, eval_request(r)));
  return 0;
}

}  // namespace lmzoo::cli
