// The tokenizer keys of a GGUF file (tokenizer.ggml.*) from an lmzoo tokenizer, so that llama.cpp's tokenizer gives
// lmzoo's ids: GPT-2 byte-level BPE (vocab.json + merges.txt, or a tokenizer.json byte-level BPE whose
// pre-tokenizer llama.cpp names) as model "gpt2", SentencePiece BPE / char models with identity normalisation as
// model "llama". Refuses by name what llama.cpp's tokenizers would cut differently (unigram SentencePiece, a
// normalisation rule, WordPiece, other tokenizer.json models). Leaves out: the reverse (gguf_import_tokenizer.h).
#pragma once
#include <cstdint>
#include <string>

#include "data/gguf/gguf_writer.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

struct GgufTokenizerSummary {
  std::string model;  // tokenizer.ggml.model: gpt2 | llama
  std::string pre;    // tokenizer.ggml.pre (gpt2 models)
  int64_t tokens = 0; // the tokenizer's own ids (before padding rows)
  bool chat_template = false;
};

// Adds the tokenizer keys for TOKENIZER to WRITER, with ROWS tokens in all ("[PAD<i>]", type unused, past the
// tokenizer's vocabulary, as llama.cpp's converter pads), and tokenizer.chat_template: CHAT_TEMPLATE (the
// checkpoint's own) or else the tokenizer's tokenizer_config.json one. Throws std::invalid_argument naming the
// tokenizer kind llama.cpp cannot reproduce.
GgufTokenizerSummary add_gguf_tokenizer(GgufWriter& writer, const Tokenizer& tokenizer, int64_t rows,
                                        const std::string& chat_template = "");

}  // namespace lmzoo
