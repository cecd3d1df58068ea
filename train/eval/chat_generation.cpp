// chat_reply: the template-rendered prompt continued to an end-of-turn id, the answer decoded and cut at its marker.
#include "train/eval/chat_generation.h"

#include <stdexcept>

#include "data/chat/chat_encoding.h"

namespace lmzoo {

ChatReply chat_reply(Session& session, const Conversation& conversation, SamplingOptions sampling) {
  if (!session.model().is<GPT>()) {
    throw std::invalid_argument("chat generation applies to gpt checkpoints, not " + family_name(session.config()));
  }
  GPT model = session.model().as<GPT>();
  const Tokenizer& tokenizer = session.tokenizer();
  const ChatEncoder encoder(tokenizer, session.info().chat.chat_template, session.info().chat.stop_ids);
  ChatReply reply;
  for (int id : encoder.prompt_tokens(conversation)) reply.prompt.push_back(id);
  const int64_t context = model->config().max_seq_len;
  if (reply.prompt.empty() || int64_t(reply.prompt.size()) >= context) {
    throw std::invalid_argument("the rendered conversation is " + std::to_string(reply.prompt.size()) +
                                " tokens; the model's context is " + std::to_string(context));
  }
  sampling.eos_id = -1;
  sampling.stop_ids.assign(encoder.stop_ids().begin(), encoder.stop_ids().end());
  reply.tokens = generate_tokens(model, reply.prompt, sampling);
  std::vector<int> text_ids;
  for (int64_t id : reply.tokens) {
    if (sampling.stops_at(id)) break;
    if (!tokenizer.is_special(int(id))) text_ids.push_back(int(id));
  }
  reply.text = tokenizer.decode(text_ids);
  for (const auto& marker : encoder.end_markers()) {  // markers that are plain text, not one id
    const size_t at = reply.text.find(marker);
    if (at != std::string::npos) reply.text.resize(at);
  }
  return reply;
}

}  // namespace lmzoo
