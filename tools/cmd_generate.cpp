// lmzoo generate: continue a prompt (gpt) or answer it (t5: the prompt goes to the encoder) by sampling,
// greedy or beam search; fill its [MASK]s (bert), or label it (bert classifier).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "data/batcher_mlm.h"
#include "data/interrupt.h"
#include "models/beam_search.h"
#include "models/fill_mask.h"
#include "models/generation.h"
#include "train/classifier_eval.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/device.h"

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

// Beam search: one stderr line per returned hypothesis, with its score; returns the token lists.
std::vector<std::vector<int64_t>> report_hypotheses(const std::vector<Hypothesis>& hypotheses, int64_t eos) {
  std::vector<std::vector<int64_t>> outputs;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const auto& h = hypotheses[i];
    std::fprintf(stderr, "beam %zu: score %.4f, log-prob %.4f, %zu tokens%s\n", i + 1, h.score, h.log_prob,
                 h.tokens.size(), !h.tokens.empty() && h.tokens.back() == eos ? " (ended at eos)" : "");
    outputs.push_back(h.tokens);
  }
  return outputs;
}

// Flags that do nothing for this kind of checkpoint are refused rather than ignored. bert fills masks and a
// classifier labels text: neither samples nor searches, and only a classifier reads a second text.
void reject_flags_for(const cxxopts::ParseResult& r, ModelKind kind) {
  const std::string holds = "; " + r["checkpoint"].as<std::string>() + " holds a " + enum_name(kind) + " model";
  if (kind == ModelKind::kBert || kind == ModelKind::kBertClassifier) {
    if (r.count("beams")) throw UsageError("--beams applies to gpt and t5 checkpoints" + holds);
    for (const char* flag : {"temperature", "top-p", "seed", "max-new-tokens", "ignore-eos"}) {
      if (r.count(flag)) throw UsageError(std::string("--") + flag + " applies to gpt and t5 generation" + holds);
    }
  }
  if (kind != ModelKind::kBertClassifier && r.count("prompt-pair")) {
    throw UsageError("--prompt-pair applies to bert classifier checkpoints (pair tasks)" + holds);
  }
}

cxxopts::Options generate_options() {
  cxxopts::Options options("lmzoo generate", "Generate text from a prompt (printed last on stdout).");
  options.add_options()
      ("checkpoint", "run directory or checkpoint directory", cxxopts::value<std::string>())
      ("prompt", "text to continue (t5: the encoder's input; bert: text with [MASK]s to fill; classifier: text to label)", cxxopts::value<std::string>())
      ("prompt-pair", "classifier: the second text of a pair task", cxxopts::value<std::string>())
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

// How to generate: sampling (greedy at temperature 0), or beam search with --beams.
struct GenerateOptions {
  SamplingOptions sampling;
  bool beam = false;
  BeamSearchOptions beam_options;
};

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
  if (sampling.temperature < 0) throw UsageError("--temperature must be >= 0");
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

GenerateOptions parse_generate_options(const cxxopts::ParseResult& r) {
  GenerateOptions g;
  g.sampling = parse_sampling(r);
  g.beam = r.count("beams") > 0;
  g.beam_options = parse_beam_search(r, g.sampling, g.beam);
  return g;
}

// The device MODEL's weights are on.
torch::Device device_of(const torch::nn::Module& model) { return model.parameters().front().device(); }

// Refuses a generation whose estimate (weights, KV cache of every beam over CACHED positions, a pass over LENGTH
// prompt tokens; t5: ENCODER_LENGTH input tokens) exceeds the device's memory, before the cache exists.
void require_generation_fits(const ModelConfig& config, const GenerateOptions& g, int64_t length, int64_t cached,
                             int64_t encoder_length, const torch::Device& device) {
  Workload w;
  w.use = MemoryUse::kInference;
  w.sequences = g.beam ? g.beam_options.num_beams : 1;
  w.length = length;
  w.cached = cached;
  w.encoder_length = encoder_length;
  require_inference_fits(config, w, device,
                         "generating " + std::to_string(cached) + " positions" +
                             (g.beam ? " with " + std::to_string(w.sequences) + " beams" : "") +
                             (encoder_length ? " from a " + std::to_string(encoder_length) + "-token input" : ""));
}

// A t5 with a position table covers max_seq_len positions: the encoded prompt and the answer must fit.
void check_t5_lengths(const ModelConfig& c, size_t input_tokens, int64_t max_new_tokens) {
  if (!c.positions_from_table()) return;
  const std::string limit = std::to_string(c.max_seq_len);
  if (int64_t(input_tokens) > c.max_seq_len) {
    throw UsageError("the prompt is " + std::to_string(input_tokens) + " tokens; this t5's " + enum_name(c.position) +
                     " positions cover " + limit);
  }
  if (max_new_tokens > c.max_seq_len) {
    throw UsageError("--max-new-tokens is at most " + limit + " for this t5 (" + enum_name(c.position) + " positions)");
  }
}

// t5: the prompt, with </s> appended as T5 does, goes to the encoder; the answer is printed without specials.
void answer_t5(T5& model, const Tokenizer& tokenizer, const std::string& prompt, const GenerateOptions& g) {
  const SpecialIds& special = tokenizer.special();
  if (special.pad != 0) {
    throw std::runtime_error("t5 decoding starts from id 0, the pad token; the " + enum_name(tokenizer.kind()) +
                             " tokenizer's pad is " + std::to_string(special.pad));
  }
  std::vector<int64_t> input;
  for (int id : tokenizer.encode(prompt)) input.push_back(id);
  input.push_back(special.require(special.eos, "</s>", "t5 generation"));
  check_t5_lengths(model->config(), input.size(), g.sampling.max_new_tokens);
  require_generation_fits(model->config(), g, 1, g.sampling.max_new_tokens, int64_t(input.size()), device_of(*model));
  std::vector<std::vector<int64_t>> outputs;
  if (g.beam) {
    outputs = report_hypotheses(beam_search_t5(model, {input}, g.beam_options)[0], special.eos);
  } else {
    outputs.push_back(generate_t5_tokens(model, input, g.sampling));
  }
  std::vector<std::string> texts;
  for (const auto& ids : outputs) {
    std::vector<int> text_ids;
    for (int64_t id : ids) if (!tokenizer.is_special(int(id))) text_ids.push_back(int(id));
    texts.push_back(tokenizer.decode(text_ids));
  }
  print_sequences(texts);
}

// bert: for each [MASK], "[MASK] i:" and its TOP_K (0: 5) candidates (quoted) with probabilities; last, the
// prompt with every [MASK] replaced by its most likely candidate.
void fill_bert_masks(Bert& model, const Tokenizer& tokenizer, const std::string& prompt, int64_t top_k) {
  std::vector<int64_t> ids;
  for (int id : tokenizer.encode(prompt)) ids.push_back(id);
  const SpecialIds& special = tokenizer.special();
  require_mlm_ids(special, "fill-mask");
  if (std::find(ids.begin(), ids.end(), special.mask) == ids.end()) {
    throw UsageError("a bert checkpoint fills masks: put [MASK] in the --prompt");
  }
  const auto filled = fill_masks(model, special, ids, top_k > 0 ? top_k : 5);
  size_t next = 0;
  std::vector<int> best(ids.begin(), ids.end());
  for (auto& id : best) {
    if (id != special.mask) continue;
    std::printf("[MASK] %zu:", next + 1);
    for (const auto& c : filled[next]) {
      // JSON-quoted: a candidate may be a space-led word piece, a newline or a byte.
      std::printf(" %s %.4f", nlohmann::json(tokenizer.decode({int(c.id)})).dump().c_str(), c.probability);
    }
    std::printf("\n");
    id = int(filled[next++].front().id);
  }
  std::cout << tokenizer.decode(best) << std::endl;
}

// bert classifier: one line per label, "label<TAB>probability", most likely first: the prediction alone unless
// TOP_K asks for more.
void label_text(BertClassifier& model, const Tokenizer& tokenizer, const std::string& prompt, const std::string& pair,
                const torch::Device& device, int64_t top_k) {
  const auto ranked = classify_text(model, tokenizer, prompt, pair, device);
  const size_t shown = std::min(ranked.size(), size_t(std::max<int64_t>(1, top_k)));
  for (size_t i = 0; i < shown; ++i) std::printf("%s\t%.4f\n", ranked[i].first.c_str(), ranked[i].second);
}

// gpt: continues the prompt (an empty one starts a new document); prints the prompt and its continuation.
void continue_gpt(GPT& model, const Tokenizer& tokenizer, const std::string& prompt, const GenerateOptions& g) {
  std::vector<int64_t> prompt_ids;
  for (int id : tokenizer.encode(prompt)) prompt_ids.push_back(id);
  const int eos = tokenizer.special().eos;
  if (prompt_ids.empty()) prompt_ids.push_back(eos >= 0 ? eos : tokenizer.special().bos);  // start a new document
  if (prompt_ids.back() < 0) throw UsageError("the tokenizer has no </s> or <s> to start from: give a --prompt");
  const int64_t context = model->config().max_seq_len, prompt_length = int64_t(prompt_ids.size());
  require_generation_fits(model->config(), g, std::min(prompt_length, context - 1),
                          std::min(prompt_length + g.sampling.max_new_tokens, context), 0, device_of(*model));
  std::vector<std::vector<int64_t>> outputs;
  if (g.beam) {
    outputs = report_hypotheses(beam_search_gpt(model, prompt_ids, g.beam_options), eos);
  } else {
    outputs.push_back(generate_tokens(model, prompt_ids, g.sampling));
  }
  std::vector<std::string> texts;
  for (const auto& generated : outputs) {
    std::vector<int> text_ids;
    for (int64_t id : generated) if (!tokenizer.is_special(int(id))) text_ids.push_back(int(id));
    texts.push_back(prompt + tokenizer.decode(text_ids));
  }
  print_sequences(texts);
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
  require_option(r, "prompt");
  require_utf8_option(r, "prompt");
  require_utf8_option(r, "prompt-pair");
  GenerateOptions g = parse_generate_options(r);
  InterruptChecks interrupt_checks;  // Ctrl-C: print what was generated so far, exit 130

  const CheckpointInfo info = open_checkpoint(r["checkpoint"].as<std::string>());
  const Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
  const SpecialIds& special = tokenizer.special();
  g.sampling.eos_id = g.beam_options.eos_id = special.eos;  // generation stops at the tokenizer's eos
  if (r.count("ignore-eos")) g.sampling.eos_id = -1;
  g.beam_options.pad_id = special.pad >= 0 ? special.pad : std::max(special.eos, 0);  // fed to finished rows
  const torch::Device device = resolve_device(r["device"].as<std::string>());
  AnyModel loaded = load_model(info, device);
  const std::string prompt = r["prompt"].as<std::string>();
  reject_flags_for(r, loaded.kind());
  loaded.visit(Overloaded{
      [&](GPT gpt) { continue_gpt(gpt, tokenizer, prompt, g); },
      [&](Bert bert) { fill_bert_masks(bert, tokenizer, prompt, g.sampling.top_k); },
      [&](BertClassifier classifier) {
        const std::string pair = r.count("prompt-pair") ? r["prompt-pair"].as<std::string>() : "";
        label_text(classifier, tokenizer, prompt, pair, device, g.sampling.top_k);
      },
      [&](T5 t5) { answer_t5(t5, tokenizer, prompt, g); }});
  if (interrupt_requested()) {
    std::cerr << "lmzoo generate: interrupted: printed what was generated so far\n";
    return 130;
  }
  return 0;
}

}  // namespace lmzoo::cli
