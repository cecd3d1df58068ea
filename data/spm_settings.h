// The settings of a SentencePiece model proto that decide where its text may be cut (normaliser switches,
// model type), read from the protobuf wire format by hand: libsentencepiece's public API does not expose them.
// Leaves out: every other field, the pieces (SpmProcessor gives those).
#pragma once
#include <string>

namespace lmzoo {

struct SpmSettings {
  enum class ModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  ModelType model_type = ModelType::kUnigram;  // the proto's defaults, for fields a model leaves out
  bool treat_whitespace_as_suffix = false;
  bool split_by_whitespace = true;
  std::string normalizer_name;
  bool has_charsmap = false;  // a precompiled normalisation rule (nmt_nfkc, ...); identity has none
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Throws std::runtime_error when MODEL_PROTO is not well-formed protobuf.
SpmSettings read_spm_settings(const std::string& model_proto);

}  // namespace lmzoo
