// The next assistant turn of a conversation, as a chat model answers: the conversation rendered with the
// checkpoint's chat template and its generation prompt, continued until an end-of-turn id.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/chat/conversation.h"
#include "models/generation.h"
#include "train/run/session.h"

namespace lmzoo {

struct ChatReply {
  std::string text;              // the answer, special tokens and the end-of-turn marker left out
  std::vector<int64_t> tokens;   // the generated ids, the end-of-turn id included when one ended it
  std::vector<int64_t> prompt;   // the ids the model continued
};

// Renders CONVERSATION with SESSION's chat template (lmzoo's ChatML default when it has none) and
// add_generation_prompt, then samples (greedy at temperature 0) until one of the checkpoint's end-of-turn ids
// (generation_config.json's eos ids, else the tokenizer's eos), an end-of-turn marker in plain text, or
// max_new_tokens. std::invalid_argument for a checkpoint that is not a gpt or a prompt longer than its context.
ChatReply chat_reply(Session& session, const Conversation& conversation, SamplingOptions sampling);

}  // namespace lmzoo
