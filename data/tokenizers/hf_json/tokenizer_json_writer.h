// A Hugging Face tokenizer.json for a loaded lmzoo tokenizer: the tokenizer.json kind's own bytes, GPT-2 BPE
// (ByteLevel pre-tokenizer, decoder and post-processor, the merges, <|endoftext|> added) and BERT WordPiece
// (BertNormalizer with tokenizer_config.json's switches, BertPreTokenizer, WordPiece, BertProcessing, the special
// tokens added) and SentencePiece models (data/tokenizers/hf_json/spm_tokenizer_json.h). Leaves out: SentencePiece
// models no tokenizer.json can describe exactly (word models, suffix spaces, decode rules), which keep their .model.
#pragma once
#include <optional>
#include <string>

namespace lmzoo {

class Tokenizer;

// The tokenizer.json bytes for TOKENIZER, or nullopt for the SentencePiece models left out. Throws std::runtime_error when the
// tokenizer's own files cannot be read back (malformed legacy files were refused at load).
std::optional<std::string> tokenizer_json_for(const Tokenizer& tokenizer);

}  // namespace lmzoo
