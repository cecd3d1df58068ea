// The backends behind Tokenizer (data/tokenizers/tokenizer.h): one interface, and a loader per kind that also reports the
// kind's special ids. Leaves out: choosing the kind from a directory (Tokenizer::load) and training.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizers/special_ids.h"
#include "data/tokenizers/text_cut.h"
#include "data/tokenizers/tokenizer_files.h"

namespace lmzoo {

// Ids passed in are in [0, vocab_size()) (Tokenizer checks them).
class TokenizerBackend {
 public:
  virtual ~TokenizerBackend() = default;
  virtual std::vector<int> encode(const std::string& text) const = 0;
  // The cut this tokenizer allows before byte POS of TEXT (see CutAt in data/tokenizers/text_cut.h): encoding the two sides
  // separately gives encode()'s ids for the whole. FORCED: the best cut there is for text that must be cut
  // (may then differ from encode(); none where even that is not a character boundary the rules like).
  virtual TextCut cut_at(std::string_view text, size_t pos, bool forced) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual std::string id_to_piece(int id) const = 0;
  virtual int piece_to_id(const std::string& piece) const = 0;  // the unk id, or -1, for an unknown piece
  virtual int vocab_size() const = 0;
  virtual bool is_word_start(int id) const = 0;
  virtual int piece_bytes(int id) const = 0;
  virtual bool is_control(int id) const = 0;  // a control piece beyond the SpecialIds (e.g. <|endoftext|>)
  // HF's split_special_tokens: special tokens written in the text stay plain text. Kinds that never match special
  // tokens in text ignore it.
  virtual void set_split_special_tokens(bool) {}
  // HF's add_special_tokens: IDS wrapped by the post-processor; false (IDS untouched) for kinds that have none.
  virtual bool add_special_tokens(std::vector<int>& ids) const { return false; }
};

struct LoadedBackend {
  std::unique_ptr<TokenizerBackend> backend;
  SpecialIds special;
  TokenizerFiles files;  // what save() writes; a later load of that directory reads the same
};

// A SentencePiece model proto in any of three conventions, detected from its pieces: lmzoo's own (fixed ids,
// checked as ever), T5's spiece.model (100 sentinels added above the pieces, <extra_id_0> highest) or Llama's.
LoadedBackend load_spm_backend(const std::string& model_proto);
// GPT-2 byte-level BPE from DIR's vocab.json + merges.txt or encoder.json + vocab.bpe; FILES: those files' bytes.
LoadedBackend load_gpt2_backend(const std::string& dir, const TokenizerFiles& files);
// WordPiece from DIR's vocab.txt; FILES: its bytes and tokenizer_config.json's, if any (read for the options).
LoadedBackend load_wordpiece_backend(const std::string& dir, const TokenizerFiles& files);
// A Hugging Face tokenizer.json (data/tokenizers/hf_json/) from FILES' tokenizer.json and tokenizer_config.json (if any);
// errors name the file and the JSON field ("tokenizer.json: model.merges[3]: ...").
LoadedBackend load_hf_json_backend(const TokenizerFiles& files);

}  // namespace lmzoo
