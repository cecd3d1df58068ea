// A Hugging Face tokenizer.json for a loaded lmzoo tokenizer: the tokenizer.json kind's own bytes, GPT-2 BPE
// (ByteLevel pre-tokenizer, decoder and post-processor, the merges, <|endoftext|> added) and BERT WordPiece
// (BertNormalizer with tokenizer_config.json's switches, BertPreTokenizer, WordPiece, BertProcessing, the special
// tokens added). Leaves out: SentencePiece kinds (a faithful file needs HF's Precompiled normalizer), which keep
// their .model.
#pragma once
#include <optional>
#include <string>

namespace lmzoo {

class Tokenizer;

// The tokenizer.json bytes for TOKENIZER, or nullopt for SentencePiece kinds. Throws std::runtime_error when the
// tokenizer's own files cannot be read back (malformed legacy files were refused at load).
std::optional<std::string> tokenizer_json_for(const Tokenizer& tokenizer);

}  // namespace lmzoo
