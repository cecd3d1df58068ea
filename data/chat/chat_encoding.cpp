// Chat rendering and answer masks: the answers are found by rendering them between sentinel characters, then the
// text is tokenized piece by piece (checked against the whole text's tokens, else located by prefix encodings).
#include "data/chat/chat_encoding.h"

#include <algorithm>
#include <stdexcept>


namespace lmzoo {

namespace {

// Private-use code points U+F8F0 / U+F8F1 around each answer while its place in the rendering is found.
const std::string kAnswerOpen = "\xEF\xA3\xB0";
const std::string kAnswerClose = "\xEF\xA3\xB1";
const std::string kChatMlEnd = "<|im_end|>";

std::string trimmed(const std::string& s) {
  const char* space = " \t\n\r\f\v";
  const size_t begin = s.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

// MARKED without its sentinels, and the [begin, end) of each open/close pair in it; false when they do not pair up.
bool strip_sentinels(const std::string& marked, std::string& text, std::vector<std::pair<size_t, size_t>>& spans) {
  text.clear();
  spans.clear();
  size_t at = 0;
  bool open = false;
  while (true) {
    const size_t next = marked.find(open ? kAnswerClose : kAnswerOpen, at);
    const size_t other = marked.find(open ? kAnswerOpen : kAnswerClose, at);
    if (other < next) return false;
    text += marked.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (next == std::string::npos) return !open;
    if (open) {
      spans.back().second = text.size();
    } else {
      spans.emplace_back(text.size(), text.size());
    }
    open = !open;
    at = next + kAnswerOpen.size();
  }
}

size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  return size_t(std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first - a.begin());
}

}  // namespace

ChatEncoder::ChatEncoder(const Tokenizer& tokenizer, std::string chat_template, std::vector<int> stop_ids)
    : tokenizer_(tokenizer), template_(chat_template.empty() ? std::string(kChatMlTemplate) : std::move(chat_template)),
      compiled_(template_), stop_ids_(std::move(stop_ids)) {
  const SpecialIds& special = tokenizer.special();
  if (stop_ids_.empty() && special.eos >= 0) stop_ids_.push_back(special.eos);
  const int im_end = tokenizer.piece_to_id(kChatMlEnd);  // ChatML's marker as one piece (tokenizer train --special-tokens)
  if (template_ == kChatMlTemplate && im_end >= 0 && tokenizer.id_to_piece(im_end) == kChatMlEnd &&
      std::find(stop_ids_.begin(), stop_ids_.end(), im_end) == stop_ids_.end()) {
    stop_ids_.push_back(im_end);
  }
  for (int id : stop_ids_) {
    if (id < 0 || id >= tokenizer.vocab_size()) {
      throw std::runtime_error("end-of-turn id " + std::to_string(id) + " is outside the tokenizer's " +
                               std::to_string(tokenizer.vocab_size()) + " ids");
    }
    end_markers_.push_back(tokenizer.id_to_piece(id));
  }
  if (template_ == kChatMlTemplate) end_markers_.push_back(kChatMlEnd);
  if (special.bos >= 0) bos_text_ = tokenizer.id_to_piece(special.bos);
  if (special.eos >= 0) eos_text_ = tokenizer.id_to_piece(special.eos);
}

nlohmann::ordered_json ChatEncoder::context(const nlohmann::ordered_json& messages, bool add_generation_prompt) const {
  nlohmann::ordered_json ctx = {{"messages", messages}, {"add_generation_prompt", add_generation_prompt}};
  if (!bos_text_.empty()) ctx["bos_token"] = bos_text_;
  if (!eos_text_.empty()) ctx["eos_token"] = eos_text_;
  return ctx;
}

std::string ChatEncoder::render(const Conversation& conversation, bool add_generation_prompt) const {
  return compiled_.render(context(messages_json(conversation), add_generation_prompt)).text;
}

std::vector<std::pair<size_t, size_t>> ChatEncoder::answer_spans(const Conversation& conversation,
                                                                 std::string& text) const {
  const std::string plain = render(conversation, false);
  const auto answers = std::count_if(conversation.begin(), conversation.end(),
                                     [](const ChatMessage& m) { return m.role == ChatRole::kAssistant; });
  // Templates that trim what they print see the sentinels as content: try the answers trimmed too.
  for (bool trim : {false, true}) {
    nlohmann::ordered_json messages = messages_json(conversation);
    for (size_t i = 0; i < conversation.size(); ++i) {
      if (conversation[i].role != ChatRole::kAssistant) continue;
      const std::string& content = conversation[i].content;
      messages[i]["content"] = kAnswerOpen + (trim ? trimmed(content) : content) + kAnswerClose;
    }
    std::vector<std::pair<size_t, size_t>> spans;
    if (!strip_sentinels(compiled_.render(context(messages, false)).text, text, spans)) continue;
    if (text != plain || int64_t(spans.size()) != answers) continue;
    for (size_t k = 0; k < spans.size(); ++k) {  // each answer's score runs on to the marker that closes it
      const size_t limit = k + 1 < spans.size() ? spans[k + 1].first : text.size();
      size_t best = std::string::npos, best_end = 0;
      for (const auto& marker : end_markers_) {
        const size_t at = text.find(marker, spans[k].second);
        if (at != std::string::npos && at + marker.size() <= limit && at < best) {
          best = at;
          best_end = at + marker.size();
        }
      }
      if (best != std::string::npos) spans[k].second = best_end;
    }
    return spans;
  }
  throw std::runtime_error("the chat template does not print the assistant's messages as given (each once, in order), "
                           "so the answer tokens cannot be told apart");
}

EncodedChat ChatEncoder::encode(const Conversation& conversation) const {
  std::string text;
  const auto spans = answer_spans(conversation, text);
  // Pieces between the span edges, each encoded on its own: exact when the edges are token edges (checked).
  std::vector<size_t> edges = {0};
  for (const auto& [begin, end] : spans) {
    edges.push_back(begin);
    edges.push_back(end);
  }
  edges.push_back(text.size());
  EncodedChat out;
  for (size_t k = 0; k + 1 < edges.size(); ++k) {
    if (edges[k + 1] == edges[k]) continue;
    const auto ids = tokenizer_.encode(text.substr(edges[k], edges[k + 1] - edges[k]));
    out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
    out.scored.insert(out.scored.end(), ids.size(), uint8_t(k % 2));  // odd pieces are answers
  }
  const auto whole = tokenizer_.encode(text);
  if (whole == out.tokens) return out;
  // A token crosses an edge: the tokens before an edge are those the text up to it shares with the whole text.
  out.tokens = whole;
  out.scored.assign(whole.size(), 0);
  for (const auto& [begin, end] : spans) {
    const size_t first = common_prefix(tokenizer_.encode(text.substr(0, begin)), whole);
    const size_t last = common_prefix(tokenizer_.encode(text.substr(0, end)), whole);
    for (size_t j = first; j < std::max(first, last); ++j) out.scored[j] = 1;
  }
  return out;
}

std::vector<int> ChatEncoder::prompt_tokens(const Conversation& conversation) const {
  return tokenizer_.encode(render(conversation, true));
}

}  // namespace lmzoo
