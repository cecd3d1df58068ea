// Tokenizer files from a GGUF file's tokenizer.ggml.* keys, in the forms lmzoo's tokenizer loads: a byte-level BPE
// ("gpt2" model) as tokenizer.json with the pre-tokenizer llama.cpp names (gpt-2, llama-bpe, qwen2, smollm), a
// SentencePiece-style "llama" model as a tokenizer.model proto (BPE, identity normalisation), and
// tokenizer_config.json with add_bos_token and the chat template. Leaves out: llama.cpp's other tokenizer models.
#pragma once
#include "data/gguf/gguf_reader.h"
#include "data/tokenizers/tokenizer_files.h"

namespace lmzoo {

// Throws GgufFormatError naming the key that is missing or malformed, or the tokenizer model lmzoo cannot load.
TokenizerFiles tokenizer_files_from_gguf(const GgufFile& file);

}  // namespace lmzoo
