// generate(): the request run by the session model's family, and its tokens decoded.
#include "train/eval/text_generation.h"

#include <algorithm>
#include <stdexcept>

#include "data/batching/batcher_mlm.h"
#include "models/fill_mask.h"
#include "train/eval/classifier_eval.h"

namespace lmzoo {

namespace {

// Refuses a generation whose estimate (weights, KV cache of every beam over CACHED positions, a pass over LENGTH
// prompt tokens; t5: ENCODER_LENGTH input tokens) exceeds the device's memory, before the cache exists.
void require_generation_fits(const Session& session, const GenerateRequest& request, int64_t length, int64_t cached,
                             int64_t encoder_length) {
  Workload w;
  w.use = MemoryUse::kInference;
  w.sequences = request.beam ? request.beam->num_beams : 1;
  w.length = length;
  w.cached = cached;
  w.encoder_length = encoder_length;
  require_inference_fits(session.config(), w, session.device(),
                         "generating " + std::to_string(cached) + " positions" +
                             (request.beam ? " with " + std::to_string(w.sequences) + " beams" : "") +
                             (encoder_length ? " from a " + std::to_string(encoder_length) + "-token input" : ""));
}

// A t5 with a position table covers max_seq_len positions: the encoded prompt and the answer must fit.
void check_t5_lengths(const ModelConfig& c, size_t input_tokens, int64_t max_new_tokens) {
  if (!c.positions_from_table()) return;
  const std::string limit = std::to_string(c.max_seq_len);
  if (int64_t(input_tokens) > c.max_seq_len) {
    throw std::invalid_argument("the prompt is " + std::to_string(input_tokens) + " tokens; this t5's " +
                                enum_name(c.position) + " positions cover " + limit);
  }
  if (max_new_tokens > c.max_seq_len) {
    throw std::invalid_argument("--max-new-tokens is at most " + limit + " for this t5 (" + enum_name(c.position) +
                                " positions)");
  }
}

std::vector<int64_t> encode(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int64_t> ids;
  for (int id : tokenizer.encode(text)) ids.push_back(id);
  return ids;
}

// The text of generated ids, special tokens left out.
std::string decode_text(const Tokenizer& tokenizer, const std::vector<int64_t>& ids) {
  std::vector<int> text_ids;
  for (int64_t id : ids) {
    if (!tokenizer.is_special(int(id))) text_ids.push_back(int(id));
  }
  return tokenizer.decode(text_ids);
}

// The options the tokenizer completes: where generation stops, and what finished beams are fed.
GenerateRequest with_tokenizer_ids(GenerateRequest request, const SpecialIds& special) {
  request.sampling.eos_id = request.ignore_eos ? -1 : special.eos;
  if (request.beam) {
    request.beam->eos_id = special.eos;
    request.beam->pad_id = special.pad >= 0 ? special.pad : std::max(special.eos, 0);
  }
  return request;
}

// Sampling or beam search: the generated token lists (one, or the hypotheses best first).
template <typename Sample, typename Search>
std::vector<std::vector<int64_t>> run_decoding(const GenerateRequest& request, GenerateReport& report,
                                               Sample sample, Search search) {
  if (!request.beam) return {sample()};
  report.hypotheses = search();
  std::vector<std::vector<int64_t>> outputs;
  for (const auto& h : report.hypotheses) outputs.push_back(h.tokens);
  return outputs;
}

// gpt: continues the prompt (an empty one starts a new document).
void continue_gpt(Session& session, GPT& model, const GenerateRequest& request, GenerateReport& report) {
  const Tokenizer& tokenizer = session.tokenizer();
  std::vector<int64_t> prompt_ids = encode(tokenizer, request.prompt);
  const int eos = tokenizer.special().eos;
  if (prompt_ids.empty()) prompt_ids.push_back(eos >= 0 ? eos : tokenizer.special().bos);  // start a new document
  if (prompt_ids.back() < 0) {
    throw std::invalid_argument("the tokenizer has no </s> or <s> to start from: give a --prompt");
  }
  const int64_t context = model->config().max_seq_len, prompt_length = int64_t(prompt_ids.size());
  require_generation_fits(session, request, std::min(prompt_length, context - 1),
                          std::min(prompt_length + request.sampling.max_new_tokens, context), 0);
  const auto outputs = run_decoding(
      request, report, [&] { return generate_tokens(model, prompt_ids, request.sampling); },
      [&] { return beam_search_gpt(model, prompt_ids, *request.beam); });
  for (const auto& generated : outputs) report.texts.push_back(request.prompt + decode_text(tokenizer, generated));
}

// t5: the prompt, with </s> appended as T5 does, goes to the encoder.
void answer_t5(Session& session, T5& model, const GenerateRequest& request, GenerateReport& report) {
  const Tokenizer& tokenizer = session.tokenizer();
  const SpecialIds& special = tokenizer.special();
  if (special.pad != 0) {
    throw std::runtime_error("t5 decoding starts from id 0, the pad token; the " + enum_name(tokenizer.kind()) +
                             " tokenizer's pad is " + std::to_string(special.pad));
  }
  std::vector<int64_t> input = encode(tokenizer, request.prompt);
  input.push_back(special.require(special.eos, "</s>", "t5 generation"));
  check_t5_lengths(model->config(), input.size(), request.sampling.max_new_tokens);
  require_generation_fits(session, request, 1, request.sampling.max_new_tokens, int64_t(input.size()));
  const auto outputs = run_decoding(
      request, report, [&] { return generate_t5_tokens(model, input, request.sampling); },
      [&] { return beam_search_t5(model, {input}, *request.beam)[0]; });
  for (const auto& ids : outputs) report.texts.push_back(decode_text(tokenizer, ids));
}

// bert: each [MASK]'s top_k (0: 5) candidates; the text with every [MASK] replaced by its most likely one.
void fill_bert_masks(Session& session, Bert& model, const GenerateRequest& request, GenerateReport& report) {
  const Tokenizer& tokenizer = session.tokenizer();
  const std::vector<int64_t> ids = encode(tokenizer, request.prompt);
  const SpecialIds& special = tokenizer.special();
  require_mlm_ids(special, "fill-mask");
  if (std::find(ids.begin(), ids.end(), special.mask) == ids.end()) {
    throw std::invalid_argument("a bert checkpoint fills masks: put [MASK] in the --prompt");
  }
  const int64_t top_k = request.sampling.top_k > 0 ? request.sampling.top_k : 5;
  const auto filled = fill_masks(model, special, ids, top_k);
  size_t next = 0;
  std::vector<int> best(ids.begin(), ids.end());
  for (auto& id : best) {
    if (id != special.mask) continue;
    std::vector<FilledToken> candidates;
    for (const auto& c : filled[next]) candidates.push_back({tokenizer.decode({int(c.id)}), c.probability});
    report.masks.push_back(std::move(candidates));
    id = int(filled[next++].front().id);
  }
  report.texts.push_back(tokenizer.decode(best));
}

void refuse_beam_search(const Session& session, const GenerateRequest& request) {
  if (request.beam) {
    throw std::invalid_argument("beam search applies to gpt and t5 checkpoints, not " + family_name(session.config()));
  }
}

}  // namespace

GenerateReport generate(Session& session, const GenerateRequest& asked) {
  if (asked.beam) asked.beam->validate();
  const GenerateRequest request = with_tokenizer_ids(asked, session.tokenizer().special());
  GenerateReport report;
  report.eos_id = session.tokenizer().special().eos;
  session.model().visit(Overloaded{
      [&](GPT gpt) { continue_gpt(session, gpt, request, report); },
      [&](Bert bert) {
        refuse_beam_search(session, request);
        fill_bert_masks(session, bert, request, report);
      },
      [&](BertClassifier classifier) {
        refuse_beam_search(session, request);
        report.labels = classify_text(classifier, session.tokenizer(), request.prompt, request.prompt_pair,
                                      session.device());
      },
      [&](T5 t5) { answer_t5(session, t5, request, report); }});
  return report;
}

}  // namespace lmzoo
