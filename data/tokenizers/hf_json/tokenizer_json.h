// A Hugging Face tokenizer.json read whole: added tokens, normalizer, pre-tokenizer, model, post-processor and
// decoder, giving the ids the Rust tokenizers library 0.22 gives; and the special tokens of the
// tokenizer_config.json beside it. Leaves out: truncation and padding (accepted, ignored: lmzoo cuts its own
// windows), pairs of sequences, offsets.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/tokenizers/hf_json/added_vocabulary.h"
#include "data/tokenizers/hf_json/decoders.h"
#include "data/tokenizers/hf_json/model.h"
#include "data/tokenizers/hf_json/post_processors.h"
#include "data/tokenizers/hf_json/text_pipeline.h"
#include "data/tokenizers/special_ids.h"

namespace lmzoo::hf {

class TokenizerJson {
 public:
  // Parses the bytes of a tokenizer.json; throws TokenizerJsonError "FIELD: reason" (the caller names the file)
  // for malformed JSON, a wrong type, an unknown component or field, or anything lmzoo cannot honour.
  static std::unique_ptr<TokenizerJson> parse(const std::string& json_text);

  // The ids of TEXT (UTF-8) without the post-processor. SPLIT_SPECIAL_TOKENS: special added tokens written in the
  // text stay plain text (HF's split_special_tokens).
  std::vector<int> encode(const std::string& text, bool split_special_tokens = false) const;
  // IDS wrapped by the post-processor (HF's add_special_tokens=True); unchanged when the file has none.
  std::vector<int> post_process(std::vector<int> ids) const;
  // HF's decode(ids, skip_special_tokens=False): tokens through the decoder (joined by spaces without one).
  std::string decode(const std::vector<int>& ids) const;

  int vocab_size() const { return vocab_size_; }  // largest id + 1 over the model and the added tokens
  const std::string* id_to_token(int id) const;   // nullptr for an id neither has
  int token_to_id(const std::string& token) const;  // added tokens first, then the model; -1 if none
  bool is_special_added(int id) const { return special_added_.count(id) > 0; }
  const std::vector<AddedToken>& added_tokens() const { return added_.tokens(); }
  const Model& model() const { return *model_; }
  // Component types the file uses, e.g. "decoder:ByteLevel", "model:WordPiece", "pre_tokenizer:Metaspace".
  bool uses(const std::string& component) const { return components_.count(component) > 0; }

 private:
  TokenizerJson() = default;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  std::unordered_map<int, std::string> added_by_id_;
  std::unordered_map<std::string, int> added_by_content_;
  std::set<int> special_added_;
  std::set<std::string> components_;
  int vocab_size_ = 0;
};

// The special ids named by tokenizer_config.json (bos/eos/unk/pad/mask/cls/sep_token, additional_special_tokens
// <extra_id_N> as sentinels); CONFIG_TEXT empty: guessed from the added tokens' usual spellings. eos falls back to
// sep. Throws TokenizerJsonError "FIELD: reason" for a malformed config or a token the vocabulary lacks.
SpecialIds special_ids_from_config(const TokenizerJson& tokenizer, const std::string& config_text);

}  // namespace lmzoo::hf
