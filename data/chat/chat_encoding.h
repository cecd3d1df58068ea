// A conversation as the model reads it: rendered with the chat template, tokenized as transformers does (markers
// that are special tokens become their ids), with a per-token mask that scores the assistant's answers and the
// end-of-turn marker closing each. Leaves out: the template language (chat_template.h), storage (chat_data.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/chat/chat_template.h"
#include "data/chat/conversation.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

struct EncodedChat {
  std::vector<int> tokens;
  std::vector<uint8_t> scored;  // 1: an answer's token or the end-of-turn marker after it; 0: everything else
};

class ChatEncoder {
 public:
  // TEMPLATE: Jinja source (empty: kChatMlTemplate). STOP_IDS: the ids that end a turn (generation_config.json's
  // eos ids; empty: the tokenizer's eos); their pieces, and the default template's <|im_end|>, are the end-of-turn
  // markers an answer's score extends to.
  ChatEncoder(const Tokenizer& tokenizer, std::string chat_template, std::vector<int> stop_ids);

  // The template's text for CONVERSATION (with ADD_GENERATION_PROMPT: followed by the start of an answer). Throws
  // ChatTemplateError for a template that raises or uses what the renderer does not support.
  std::string render(const Conversation& conversation, bool add_generation_prompt) const;
  // Tokens and mask. Throws std::runtime_error when the answers cannot be found in the rendered text (a template
  // that rewrites what it is given).
  EncodedChat encode(const Conversation& conversation) const;
  // The tokens of the conversation so far followed by the generation prompt: what generation continues.
  std::vector<int> prompt_tokens(const Conversation& conversation) const;

  // The ids a generated answer stops at: STOP_IDS, or the tokenizer's eos; with the default template also
  // <|im_end|> where the tokenizer has it as one piece.
  const std::vector<int>& stop_ids() const { return stop_ids_; }
  // The end-of-turn markers as text (a model whose markers are plain text stops on them in the decoded answer).
  const std::vector<std::string>& end_markers() const { return end_markers_; }
  const std::string& chat_template() const { return template_; }

 private:
  nlohmann::ordered_json context(const nlohmann::ordered_json& messages, bool add_generation_prompt) const;
  // Char spans [begin, end) of each answer in the rendered text, each extended over the end-of-turn marker after it.
  std::vector<std::pair<size_t, size_t>> answer_spans(const Conversation& conversation, std::string& text) const;

  const Tokenizer& tokenizer_;
  std::string template_;
  ChatTemplate compiled_;  // template_, parsed once
  std::vector<int> stop_ids_;
  std::vector<std::string> end_markers_;
  std::string bos_text_, eos_text_;
};

}  // namespace lmzoo
