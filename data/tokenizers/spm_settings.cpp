// Reads SpmSettings and the pieces from a serialized sentencepiece.ModelProto: pieces (1), trainer_spec (2),
// normalizer_spec (3) and denormalizer_spec (5), by the field numbers of sentencepiece_model.proto.
#include "data/tokenizers/spm_settings.h"

#include <cstdint>
#include <string_view>

#include "data/tokenizers/protobuf_wire.h"

namespace lmzoo {

namespace {

constexpr int kTrainerSpec = 2, kNormalizerSpec = 3;
constexpr int kModelType = 3, kSplitByWhitespace = 22, kTreatWhitespaceAsSuffix = 24;
constexpr int kName = 1, kCharsmap = 2, kAddDummyPrefix = 3, kRemoveExtraWhitespaces = 4, kEscapeWhitespaces = 5;
constexpr int kPieces = 1, kDenormalizerSpec = 5;
constexpr int kPiece = 1, kScore = 2, kType = 3;

}  // namespace

SpmSettings read_spm_settings(const std::string& model_proto) {
  SpmSettings s;
  const auto no_bytes = [](int, std::string_view) {};
  const auto trainer = [&](std::string_view spec) {
    WireReader(spec).each(
        [&](int field, uint64_t v) {
          if (field == kModelType) s.model_type = static_cast<SpmSettings::ModelType>(v);
          if (field == kSplitByWhitespace) s.split_by_whitespace = v != 0;
          if (field == kTreatWhitespaceAsSuffix) s.treat_whitespace_as_suffix = v != 0;
        },
        no_bytes);
  };
  const auto normalizer = [&](std::string_view spec) {
    WireReader(spec).each(
        [&](int field, uint64_t v) {
          if (field == kAddDummyPrefix) s.add_dummy_prefix = v != 0;
          if (field == kRemoveExtraWhitespaces) s.remove_extra_whitespaces = v != 0;
          if (field == kEscapeWhitespaces) s.escape_whitespaces = v != 0;
        },
        [&](int field, std::string_view bytes) {
          if (field == kName) s.normalizer_name = std::string(bytes);
          if (field == kCharsmap) s.charsmap = std::string(bytes);
          if (field == kCharsmap) s.has_charsmap = !bytes.empty();
        });
  };
  WireReader(model_proto).each([](int, uint64_t) {},
                               [&](int field, std::string_view bytes) {
                                 if (field == kTrainerSpec) trainer(bytes);
                                 if (field == kNormalizerSpec) normalizer(bytes);
                                 if (field == kDenormalizerSpec) s.has_denormalizer = !bytes.empty();
                               });
  return s;
}

std::vector<SpmPiece> read_spm_pieces(const std::string& model_proto) {
  std::vector<SpmPiece> pieces;
  const auto piece = [&](std::string_view message) {
    SpmPiece p;
    WireReader(message).each(
        [&](int field, uint64_t v) {
          if (field == kType) p.type = static_cast<SpmPiece::Type>(v);
        },
        [&](int field, std::string_view bytes) {
          if (field == kPiece) p.piece = std::string(bytes);
        },
        [&](int field, uint32_t bits) {
          if (field == kScore) p.score = WireReader::as_float(bits);
        });
    pieces.push_back(std::move(p));
  };
  WireReader(model_proto).each([](int, uint64_t) {},
                               [&](int field, std::string_view bytes) {
                                 if (field == kPieces) piece(bytes);
                               });
  return pieces;
}

}  // namespace lmzoo
