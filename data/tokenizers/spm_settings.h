// The settings of a SentencePiece model proto that decide how its text is normalised and cut (normaliser switches
// and rules, model type) and its pieces with scores and types, read from the protobuf wire format by hand:
// libsentencepiece's public API does not expose them. Leaves out: every other field.
#pragma once
#include <string>
#include <vector>

namespace lmzoo {

struct SpmSettings {
  enum class ModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  ModelType model_type = ModelType::kUnigram;  // the proto's defaults, for fields a model leaves out
  bool treat_whitespace_as_suffix = false;
  bool split_by_whitespace = true;
  std::string normalizer_name;
  bool has_charsmap = false;  // a precompiled normalisation rule (nmt_nfkc, ...); identity has none
  std::string charsmap;       // its bytes (a Darts trie and the replacement strings), HF's precompiled_charsmap
  bool has_denormalizer = false;  // decode rules (denormalizer_spec) beyond the space marker
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Throws std::runtime_error when MODEL_PROTO is not well-formed protobuf.
SpmSettings read_spm_settings(const std::string& model_proto);

struct SpmPiece {
  enum class Type { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  std::string piece;
  float score = 0;
  Type type = Type::kNormal;
};

// The pieces of MODEL_PROTO in id order. Throws std::runtime_error when it is not well-formed protobuf.
std::vector<SpmPiece> read_spm_pieces(const std::string& model_proto);

}  // namespace lmzoo
