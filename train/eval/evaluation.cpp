// evaluate(): the request's source read and scored by the session model's family.
#include "train/eval/evaluation.h"

#include <stdexcept>

#include "base/interrupt.h"
#include "base/text_file.h"
#include "data/batching/batcher_span.h"
#include "data/chat/chat_data.h"
#include "data/corpus/labelled_text.h"
#include "data/corpus/pairs.h"
#include "data/corpus/shards.h"
#include "data/unicode/utf8.h"
#include "train/eval/chat_eval.h"
#include "train/eval/masked_eval.h"
#include "train/eval/seq2seq_eval.h"
#include "train/run/run_inputs.h"

namespace lmzoo {

namespace {

// The tokens to score: a prepared split (data_dir) or a text file.
struct ScoredText {
  TokenStream stream = TokenStream::from_tokens({});
  int64_t source_bytes = 0;
  std::string source;
};

ScoredText text_to_score(const Session& session, const EvalRequest& request) {
  if (request.data_dir.empty() == request.text_file.empty()) {
    throw std::invalid_argument("a " + family_name(session.config()) + " model scores one source: a data directory or a "
                                "text file");
  }
  const Tokenizer& tokenizer = session.tokenizer();
  ScoredText out;
  if (!request.data_dir.empty()) {
    if (is_pairs_dir(request.data_dir)) {
      throw std::invalid_argument(request.data_dir + " holds prepared pairs, which score a t5; " +
                                  session.info().dir + " is evaluated on token shards (lmzoo prepare --input) or "
                                  "--text");
    }
    if (is_chat_dir(request.data_dir)) {
      throw std::invalid_argument(request.data_dir + " holds prepared conversations, which score a gpt's answers; " +
                                  session.info().dir + " is evaluated on token shards (lmzoo prepare --input) or --text");
    }
    out.source = request.data_dir + " (" + request.split + ")";
    check_same_tokenizer(request.data_dir, tokenizer, session.info().dir);
    out.stream = TokenStream::open(request.data_dir, request.split, tokenizer.vocab_size());
    out.source_bytes = out.stream.source_bytes();
  } else {
    out.source = request.text_file;
    const std::string text = read_whole_file(out.source);
    require_utf8(text, out.source);
    const auto ids = tokenizer.encode(text);
    out.stream = TokenStream::from_tokens(std::vector<int32_t>(ids.begin(), ids.end()));
    out.source_bytes = int64_t(text.size());
  }
  return out;
}

// Prepared conversations: the perplexity of the answers alone.
EvalReport evaluate_chat(Session& session, GPT& model, const EvalRequest& request) {
  check_same_tokenizer(request.data_dir, session.tokenizer(), session.info().dir);
  const ChatExamples examples = load_chat_examples(request.data_dir, request.split, session.tokenizer().vocab_size());
  EvalReport report{request.data_dir + " (" + request.split + ")", "answer tokens"};
  report.has_bits_per_byte = false;
  report.perplexity = chat_answer_perplexity(model, examples, request.batch_size, request.precision, session.device());
  if (report.perplexity->tokens == 0) throw std::runtime_error(report.source + " has no answer token to score");
  return report;
}

EvalReport evaluate_gpt(Session& session, GPT& model, const EvalRequest& request) {
  if (!request.data_dir.empty() && request.text_file.empty() && is_chat_dir(request.data_dir)) {
    return evaluate_chat(session, model, request);
  }
  const ScoredText scored = text_to_score(session, request);
  if (scored.stream.size() < 2) throw std::runtime_error(scored.source + " has fewer than two tokens to score");
  PerplexityOptions options;
  options.stride = request.stride;
  options.batch_size = request.batch_size;
  options.precision = request.precision;
  EvalReport report{scored.source, "tokens"};
  report.perplexity =
      sliding_window_perplexity(model, scored.stream, scored.source_bytes, options, session.device());
  return report;
}

// Masking rates are the checkpoint's training rates; the seed makes the masks reproducible.
EvalReport evaluate_bert(Session& session, Bert& model, const EvalRequest& request) {
  const ScoredText scored = text_to_score(session, request);
  const TrainConfig& trained = session.info().train;
  MaskedEvalOptions options;
  options.batch_size = request.batch_size;
  options.seed = request.seed;
  options.masking = {trained.mlm_probability, trained.mask_rate, trained.random_rate, false};
  options.precision = request.precision;
  const SpecialIds& special = session.tokenizer().special();
  EvalReport report{scored.source, request.pseudo ? "tokens (pseudo-log-likelihood)" : "masked tokens"};
  report.perplexity =
      request.pseudo
          ? pseudo_perplexity(model, scored.stream, scored.source_bytes, special, options, session.device())
          : masked_token_perplexity(model, scored.stream, scored.source_bytes, special, options, session.device());
  if (report.perplexity->tokens == 0) throw std::runtime_error(scored.source + " has no token to score");
  return report;
}

EvalReport evaluate_classifier_file(Session& session, BertClassifier& model, const EvalRequest& request) {
  if (request.data_dir.empty() || !request.text_file.empty()) {
    throw std::invalid_argument("a classifier is evaluated on a labelled .tsv/.jsonl file");
  }
  EvalReport report{request.data_dir, "examples"};
  report.classification = evaluate_classifier(model, session.tokenizer(), read_labelled_text(request.data_dir),
                                              request.batch_size, session.device(), request.precision);
  return report;
}

// Target perplexity over prepared pairs, a pairs file, or seeded span-corruption batches of a token split with the
// checkpoint's noise settings.
EvalReport evaluate_t5(Session& session, T5& model, const EvalRequest& request) {
  if (request.data_dir.empty() == request.pairs_file.empty() || !request.text_file.empty()) {
    throw std::invalid_argument("a t5 model is evaluated on a data directory (token shards or prepared pairs) or a "
                                "pairs file");
  }
  if (request.span_batches <= 0) throw std::invalid_argument("the span-corruption batches must be positive");
  const Tokenizer& tokenizer = session.tokenizer();
  const CheckpointInfo& info = session.info();
  const torch::Device& device = session.device();
  const int64_t max_len = model->config().max_seq_len;
  const SpecialIds& special = tokenizer.special();
  const int64_t pad = special.require(special.pad, "<pad>", "t5 evaluation");
  EvalReport report{"", "target tokens"};
  report.has_bits_per_byte = false;
  PerplexityResult result;
  if (!request.pairs_file.empty()) {
    report.source = request.pairs_file;
    std::vector<Seq2SeqExample> examples;
    for (const auto& pair : read_text_pairs(request.pairs_file)) {
      examples.push_back(encode_pair(tokenizer, pair, max_len, max_len));
    }
    result = target_perplexity(model, examples, pad, request.batch_size, device, request.precision);
  } else {
    const std::string& dir = request.data_dir;
    check_same_tokenizer(dir, tokenizer, info.dir);
    report.source = dir + " (" + request.split + ")";
    if (is_pairs_dir(dir)) {
      const auto examples = load_pairs(dir, request.split, special.eos, info.model.vocab_size);
      result = target_perplexity(model, examples, pad, request.batch_size, device, request.precision);
    } else {
      const TokenStream stream = TokenStream::open(dir, request.split, info.model.vocab_size);
      SpanOptions options;
      options.batch_size = request.batch_size;
      options.input_length = max_len;
      options.noise_density = info.train.noise_density;
      options.mean_noise_span_length = info.train.mean_span_length;
      const SpanBatcher batcher(stream, special, options, request.seed);
      for (int64_t i = 0; i < request.span_batches; ++i) {
        throw_if_interrupted("evaluating");
        add_target_nll(model, batcher.batch(i, 0), device, request.precision, result);
      }
      report.what = "span-corruption target tokens";
    }
  }
  if (result.tokens == 0) throw std::runtime_error(report.source + " has no target token to score");
  report.perplexity = result;
  return report;
}

void check_request(const EvalRequest& request) {
  if (request.split != "val" && request.split != "train") throw std::invalid_argument("the split must be val or train");
  if (request.precision == Precision::kFp16) throw std::invalid_argument("evaluation runs in fp32 or bf16");
  if (request.stride < 0) throw std::invalid_argument("the stride must be positive (0: half the context)");
  if (request.batch_size <= 0) throw std::invalid_argument("the batch size must be positive");
}

}  // namespace

nlohmann::json EvalReport::to_json() const {
  if (classification) return classification->to_json();
  nlohmann::json j = perplexity ? perplexity->to_json() : nlohmann::json::object();
  if (!has_bits_per_byte) j["bpb"] = nullptr;
  return j;
}

EvalReport evaluate(Session& session, const EvalRequest& request) {
  check_request(request);
  Workload workload = training_workload(session.config(), request.batch_size);  // full windows (t5: both sides)
  workload.use = MemoryUse::kInference;
  if (!session.model_loaded()) {
    require_inference_fits(session.config(), workload, session.device(),
                           "evaluating at --batch-size " + std::to_string(request.batch_size));
  }
  return session.model().visit(Overloaded{
      [&](GPT gpt) { return evaluate_gpt(session, gpt, request); },
      [&](Bert bert) { return evaluate_bert(session, bert, request); },
      [&](BertClassifier classifier) { return evaluate_classifier_file(session, classifier, request); },
      [&](T5 t5) { return evaluate_t5(session, t5, request); }});
}

}  // namespace lmzoo
