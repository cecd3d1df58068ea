// The "model" of a tokenizer.json: one word (a pre-tokenizer split) to ids, and the vocabulary both ways. Built
// from its JSON object by make_model (BPE, WordPiece, Unigram). Leaves out: WordLevel, training, offsets.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lmzoo::hf {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of WORD (one split, UTF-8, non-empty) to OUT, exactly as the Rust tokenizers library does.
  virtual void tokenize(const std::string& word, std::vector<int>& out) const = 0;
  virtual int token_to_id(const std::string& token) const = 0;  // or -1
  // The token of ID, or nullptr for an id the vocabulary skips.
  virtual const std::string* id_to_token(int id) const = 0;
  virtual int vocab_size() const = 0;  // largest id + 1
};

// The model described by J (FIELD_PATH names it in errors, e.g. "model"); throws TokenizerJsonError.
std::unique_ptr<Model> make_model(const nlohmann::json& j, const std::string& field_path);

// The vocabulary of a model as id -> token with holes (""), shared by the three models.
struct Vocab {
  std::vector<std::string> tokens;  // id -> token
  std::vector<bool> present;        // id -> the vocabulary has it
  void add(int id, const std::string& token) {
    if (size_t(id) >= tokens.size()) {
      tokens.resize(size_t(id) + 1);
      present.resize(size_t(id) + 1, false);
    }
    tokens[size_t(id)] = token;
    present[size_t(id)] = true;
  }
  const std::string* get(int id) const {
    return id >= 0 && size_t(id) < tokens.size() && present[size_t(id)] ? &tokens[size_t(id)] : nullptr;
  }
};

}  // namespace lmzoo::hf
