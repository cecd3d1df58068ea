// A prepared chat directory (lmzoo prepare --chat): conversations rendered with the chat template, tokenized, each
// token with its score flag, and the example boundaries; written whole or not at all, read back as examples.
//
// Layout: manifest.json (format_version 1, "kind": "chat", tokenizer_hash, vocab_size, dtype, chat_template_hash,
// chat_template_origin, stop_ids, per split "train" / "val": examples, tokens, scored tokens) and, per split, two
// TokenStream splits of equal length: SPLIT (the tokens) and SPLIT_flags (per token: 1 scored, + 2 where an example
// starts); the tokenizer's files and chat_template.jinja alongside.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmzoo {

struct PrepareChatOptions {
  std::string tokenizer;            // tokenizer or model directory (its chat template and generation_config.json)
  std::vector<std::string> inputs;  // .jsonl files of conversations or prompt/completion pairs
  std::string out_dir;
  std::string chat_template_file;   // overrides the directory's template; empty: the directory's, else ChatML
  double val_fraction = 0.1;        // the last fraction of the examples (at least one when > 0 and there are two)
  int threads = 0;                  // 0: all cores
};

struct PrepareChatResult {
  int64_t train_examples = 0, val_examples = 0, tokens = 0, scored_tokens = 0, bytes = 0;
  std::string template_origin;  // "--chat-template FILE", "DIR's chat template" or "the default (ChatML)"
  double seconds = 0;
};

// Reads every input, renders and encodes each conversation on THREADS threads, writes OUT_DIR. Throws
// std::invalid_argument (one line) on bad input, naming the file and line (a malformed line, an unknown role, no
// assistant turn, a template that raises or uses what the renderer does not support); nothing is written then.
PrepareChatResult prepare_chat(const PrepareChatOptions& options);

// True when DATA_DIR's manifest says it holds prepared chat examples.
bool is_chat_dir(const std::string& data_dir);

struct ChatExamples {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> scored;
  std::vector<int64_t> offsets;  // example i is [offsets[i], offsets[i + 1]); size examples + 1
  int64_t size() const { return int64_t(offsets.size()) - 1; }
};

// The examples of SPLIT ("train" or "val"). Throws std::runtime_error when the directory is not a chat directory,
// its splits disagree, or it holds ids past MODEL_VOCAB (0: not checked).
ChatExamples load_chat_examples(const std::string& data_dir, const std::string& split, int64_t model_vocab = 0);

}  // namespace lmzoo
