// lmzoo generate: continue a prompt (gpt) or answer it (t5: the prompt goes to the encoder) by sampling,
// greedy or beam search; answer a conversation with the chat template (gpt --chat); fill its [MASK]s (bert), or
// label it (bert classifier).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "base/interrupt.h"
#include "base/text_file.h"
#include "data/chat/conversation.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/eval/chat_generation.h"
#include "train/eval/text_generation.h"

namespace lmzoo::cli {

namespace {

// The most tokens one generate call produces.
constexpr int64_t kMaxNewTokens = 1048576;

// `--beams` without a number means the GNMT / t5x default of 4 beams: argv with "4" inserted after it.
std::vector<std::string> default_beams(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    const bool next_is_value = i + 1 < args.size() && (args[i + 1].rfind("-", 0) != 0 ||
                                                       (args[i + 1].size() > 1 && std::isdigit(args[i + 1][1])));
    if (args[i] == "--beams" && !next_is_value) args.insert(args.begin() + long(i) + 1, "4");
  }
  return args;
}

// One line per sequence when several are printed: newlines inside a sequence are written as "\\n".
void print_sequences(const std::vector<std::string>& texts) {
  if (texts.size() == 1) {
    std::cout << texts[0] << std::endl;
    return;
  }
  for (const auto& text : texts) {
    std::string line;
    for (char c : text) {
      if (c == '\n') line += "\\n";
      else line += c;
    }
    std::cout << line << "\n";
  }
  std::cout.flush();
}

// Flags that do nothing for this kind of checkpoint are refused rather than ignored. bert fills masks and a
// classifier labels text: neither samples nor searches, and only a classifier reads a second text.
void reject_flags_for(const cxxopts::ParseResult& r, const Session& session) {
  const std::string holds =
      "; " + r["checkpoint"].as<std::string>() + " holds a " + family_name(session.config()) + " model";
  if (session.kind() == ModelKind::kMaskedLm || session.kind() == ModelKind::kClassifier) {
    if (r.count("beams")) throw UsageError("--beams applies to gpt and t5 checkpoints" + holds);
    for (const char* flag : {"temperature", "top-p", "seed", "max-new-tokens", "ignore-eos"}) {
      if (r.count(flag)) throw UsageError(std::string("--") + flag + " applies to gpt and t5 generation" + holds);
    }
  }
  if (!session.is_classifier() && r.count("prompt-pair")) {
    throw UsageError("--prompt-pair applies to bert classifier checkpoints (pair tasks)" + holds);
  }
}

cxxopts::Options generate_options() {
  cxxopts::Options options("lmzoo generate", "Generate text from a prompt (printed last on stdout).");
  options.add_options()
      ("checkpoint", "run directory or checkpoint directory", cxxopts::value<std::string>())
      ("prompt", "text to continue (t5: the encoder's input; bert: text with [MASK]s to fill; classifier: text to label)", cxxopts::value<std::string>())
      ("prompt-pair", "classifier: the second text of a pair task", cxxopts::value<std::string>())
      ("chat", "gpt: answer a conversation rendered with the checkpoint's chat template: a JSON file of messages "
               "([{\"role\", \"content\"}, ...] or {\"messages\": [...]}), or - to chat on stdin (one user turn "
               "per line); prints the answer only, stopping at the model's end-of-turn ids",
       cxxopts::value<std::string>())
      ("max-new-tokens", "tokens to generate at most (at most " + std::to_string(kMaxNewTokens) + ")",
       cxxopts::value<int64_t>()->default_value("100"))
      ("temperature", "sampling temperature (0: greedy)", cxxopts::value<double>()->default_value("0.8"))
      ("top-k", "keep the k most likely tokens (0: all); bert: candidates per [MASK] (0: 5); classifier: labels to print (0: 1)", cxxopts::value<int64_t>()->default_value("0"))
      ("top-p", "nucleus sampling mass (1: off)", cxxopts::value<double>()->default_value("1.0"))
      ("seed", "sampling seed", cxxopts::value<uint64_t>()->default_value("1337"))
      ("ignore-eos", "sampling: go on past the tokenizer's end-of-text token, to --max-new-tokens")
      ("beams", "gpt/t5: beam search with N beams instead of sampling (--beams alone: 4)", cxxopts::value<int64_t>())
      ("length-penalty", "beam search: alpha of the length penalty ((5 + len) / 6)^alpha", cxxopts::value<double>()->default_value("0.6"))
      ("early-stopping", "beam search: stop as soon as --beams hypotheses have finished")
      ("num-return", "beam search: sequences to print, best first (at most --beams)", cxxopts::value<int64_t>()->default_value("1"))
      ("device", "auto|cpu|cuda[:N]", cxxopts::value<std::string>()->default_value("auto"));
  return options;
}

SamplingOptions parse_sampling(const cxxopts::ParseResult& r) {
  SamplingOptions sampling;
  sampling.max_new_tokens = r["max-new-tokens"].as<int64_t>();
  if (sampling.max_new_tokens > kMaxNewTokens) {
    throw UsageError("--max-new-tokens " + std::to_string(sampling.max_new_tokens) + " is past the maximum of " +
                     std::to_string(kMaxNewTokens) + " (2^20: hours of decoding on a CPU)");
  }
  sampling.temperature = r["temperature"].as<double>();
  sampling.top_k = r["top-k"].as<int64_t>();
  sampling.top_p = r["top-p"].as<double>();
  sampling.seed = r["seed"].as<uint64_t>();
  if (sampling.max_new_tokens < 0) throw UsageError("--max-new-tokens must be >= 0");
  if (!(sampling.temperature >= 0 && std::isfinite(sampling.temperature))) {
    throw UsageError("--temperature must be a finite number >= 0 (0: greedy)");
  }
  if (sampling.top_k < 0) throw UsageError("--top-k must be >= 0");
  if (!(sampling.top_p > 0 && sampling.top_p <= 1)) throw UsageError("--top-p must be in (0, 1]");
  return sampling;
}

// The beam search options; with beam (--beams given) the sampling flags are refused, without it the beam flags.
BeamSearchOptions parse_beam_search(const cxxopts::ParseResult& r, const SamplingOptions& sampling, bool beam) {
  BeamSearchOptions beam_options;
  beam_options.max_new_tokens = sampling.max_new_tokens;
  beam_options.length_penalty = r["length-penalty"].as<double>();
  beam_options.early_stopping = r.count("early-stopping") > 0;
  beam_options.num_return = r["num-return"].as<int64_t>();
  if (beam) {
    beam_options.num_beams = r["beams"].as<int64_t>();
    if (beam_options.num_beams < 1) throw UsageError("--beams must be >= 1");
    for (const char* flag : {"temperature", "top-k", "top-p", "seed", "ignore-eos"}) {
      if (r.count(flag)) throw UsageError(std::string("--") + flag + " applies to sampling, not to beam search (--beams)");
    }
    if (!std::isfinite(beam_options.length_penalty)) throw UsageError("--length-penalty must be a finite number");
    if (beam_options.num_return < 1 || beam_options.num_return > beam_options.num_beams) {
      throw UsageError("--num-return must be between 1 and --beams (" + std::to_string(beam_options.num_beams) + ")");
    }
  } else {
    for (const char* flag : {"length-penalty", "early-stopping"}) {
      if (r.count(flag)) throw UsageError(std::string("--") + flag + " applies to beam search: add --beams N");
    }
    if (beam_options.num_return != 1) throw UsageError("--num-return applies to beam search: add --beams N (N >= --num-return)");
  }
  return beam_options;
}

// The request the flags ask for: sampling (greedy at temperature 0), or beam search with --beams.
GenerateRequest parse_generate_request(const cxxopts::ParseResult& r) {
  GenerateRequest request;
  request.prompt = r["prompt"].as<std::string>();
  if (r.count("prompt-pair")) request.prompt_pair = r["prompt-pair"].as<std::string>();
  request.sampling = parse_sampling(r);
  request.ignore_eos = r.count("ignore-eos") > 0;
  const bool beam = r.count("beams") > 0;
  const BeamSearchOptions beam_options = parse_beam_search(r, request.sampling, beam);
  if (beam) request.beam = beam_options;
  return request;
}

// Beam search: one stderr line per returned hypothesis, with its score.
void print_hypotheses(const GenerateReport& report) {
  for (size_t i = 0; i < report.hypotheses.size(); ++i) {
    const auto& h = report.hypotheses[i];
    std::fprintf(stderr, "beam %zu: score %.4f, log-prob %.4f, %zu tokens%s\n", i + 1, h.score, h.log_prob,
                 h.tokens.size(), !h.tokens.empty() && h.tokens.back() == report.eos_id ? " (ended at eos)" : "");
  }
}

// bert: for each [MASK], "[MASK] i:" and its candidates (JSON-quoted: a candidate may be a space-led word piece, a
// newline or a byte) with probabilities; last, the prompt with every [MASK] replaced by its most likely candidate.
void print_filled_masks(const GenerateReport& report) {
  for (size_t i = 0; i < report.masks.size(); ++i) {
    std::printf("[MASK] %zu:", i + 1);
    for (const auto& c : report.masks[i]) std::printf(" %s %.4f", nlohmann::json(c.text).dump().c_str(), c.probability);
    std::printf("\n");
  }
  std::cout << report.texts.front() << std::endl;
}

// classifier: one line per label, "label<TAB>probability", most likely first: the prediction alone unless TOP_K
// asks for more.
void print_labels(const GenerateReport& report, int64_t top_k) {
  const size_t shown = std::min(report.labels.size(), size_t(std::max<int64_t>(1, top_k)));
  for (size_t i = 0; i < shown; ++i) std::printf("%s\t%.4f\n", report.labels[i].first.c_str(), report.labels[i].second);
}

// --chat FILE|-: the answers of a gpt chat model. FILE: one answer to its messages. -: a user turn per stdin line,
// each answered in turn, the conversation kept.
int run_chat(const cxxopts::ParseResult& r) {
  for (const char* flag : {"prompt", "prompt-pair", "beams", "ignore-eos", "num-return"}) {
    if (r.count(flag)) throw UsageError(std::string("--") + flag + " does not apply with --chat");
  }
  const SamplingOptions sampling = parse_sampling(r);
  const std::string source = r["chat"].as<std::string>();
  Conversation conversation;
  if (source != "-") {
    nlohmann::json messages;
    try {
      messages = nlohmann::json::parse(read_whole_file(source));
    } catch (const nlohmann::json::exception&) {
      throw UsageError(source + " is not valid JSON (a messages list, or {\"messages\": [...]})");
    }
    if (messages.is_array()) messages = nlohmann::json{{"messages", messages}};
    conversation = conversation_from_json(messages, source + ": ");
    if (conversation.empty()) throw UsageError(source + " holds no messages");
  }
  InterruptChecks interrupt_checks;
  Session session = Session::open(r["checkpoint"].as<std::string>(), r["device"].as<std::string>());
  session.model();
  if (source != "-") {
    std::cout << chat_reply(session, conversation, sampling).text << std::endl;
    return interrupt_requested() ? 130 : 0;
  }
  std::string line;
  while (!interrupt_requested() && std::getline(std::cin, line)) {
    if (line.empty()) continue;
    conversation.push_back({ChatRole::kUser, line});
    const ChatReply reply = chat_reply(session, conversation, sampling);
    std::cout << reply.text << std::endl;
    conversation.push_back({ChatRole::kAssistant, reply.text});
  }
  return interrupt_requested() ? 130 : 0;
}

}  // namespace

int run_generate(int argc_in, char** argv_in) {
  std::vector<std::string> arg_strings = default_beams(argc_in, argv_in);
  std::vector<char*> arg_pointers;
  for (auto& a : arg_strings) arg_pointers.push_back(a.data());
  int argc = int(arg_pointers.size());
  char** argv = arg_pointers.data();
  cxxopts::Options options = generate_options();
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  require_option(r, "checkpoint");
  if (r.count("chat")) return run_chat(r);
  require_option(r, "prompt");
  require_utf8_option(r, "prompt");
  require_utf8_option(r, "prompt-pair");
  const GenerateRequest request = parse_generate_request(r);
  InterruptChecks interrupt_checks;  // Ctrl-C: print what was generated so far, exit 130

  Session session = Session::open(r["checkpoint"].as<std::string>(), r["device"].as<std::string>());
  session.model();
  reject_flags_for(r, session);
  const GenerateReport report = generate(session, request);
  switch (session.kind()) {
    case ModelKind::kClassifier:
      print_labels(report, request.sampling.top_k);
      break;
    case ModelKind::kMaskedLm:
      print_filled_masks(report);
      break;
    case ModelKind::kCausalLm:
    case ModelKind::kSeq2seq:
      print_hypotheses(report);
      print_sequences(report.texts);
      break;
  }
  if (interrupt_requested()) {
    std::cerr << "lmzoo generate: interrupted: printed what was generated so far\n";
    return 130;
  }
  return 0;
}

}  // namespace lmzoo::cli
