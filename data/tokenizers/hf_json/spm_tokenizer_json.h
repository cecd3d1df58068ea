// tokenizer.json for a SentencePiece tokenizer, built to give sentencepiece's ids under the Rust tokenizers library:
// Unigram (vocab with scores) or BPE (merges rebuilt from the pieces, as HF's converter does; a char model is a BPE
// without merges), byte fallback; the normaliser as a Sequence (Precompiled rules, SentencePiece's extra-white-space
// removal, the dummy prefix, spaces as U+2581); user-defined, control and T5 sentinel pieces as added tokens.
// Leaves out: word models, treat_whitespace_as_suffix and denormalizer rules (nullopt: no file describes them).
#pragma once
#include <optional>
#include <string>

namespace lmzoo {
class Tokenizer;
}

namespace lmzoo::hf {

// The tokenizer.json bytes for TOKENIZER (a SentencePiece kind), or nullopt for the models left out.
std::optional<std::string> spm_tokenizer_json(const Tokenizer& tokenizer);

}  // namespace lmzoo::hf
