// SentencePiece model proto -> tokenizer.json: the model, normaliser, decoder, post-processor and added tokens.
#include "data/tokenizers/hf_json/spm_tokenizer_json.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "data/tokenizers/hf_json/base64.h"
#include "data/tokenizers/hf_json/tokenizer_json_layout.h"
#include "data/tokenizers/spm_settings.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo::hf {

namespace {

using nlohmann::ordered_json;
using Type = SpmPiece::Type;

const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581

enum class Convention { kNative, kT5, kLlama };

Convention convention_of(const std::vector<SpmPiece>& pieces) {
  const auto piece = [&](size_t id) { return id < pieces.size() ? pieces[id].piece : std::string(); };
  if (piece(0) == "<pad>" && piece(1) == "</s>") return Convention::kT5;
  if (piece(0) == "<unk>" && piece(1) == "<s>" && piece(2) == "</s>") return Convention::kLlama;
  return Convention::kNative;
}

ordered_json replace_json(const std::string& kind, const std::string& pattern, const std::string& content) {
  return ordered_json{{"type", "Replace"}, {"pattern", {{kind, pattern}}}, {"content", content}};
}

// SentencePiece's normaliser: the compiled rules, then (remove_extra_whitespaces) leading spaces dropped, runs of
// spaces squeezed and trailing spaces or space markers dropped, the dummy prefix, and spaces as U+2581.
ordered_json normalizer_json(const SpmSettings& s) {
  ordered_json parts = ordered_json::array();
  if (s.has_charsmap) {
    parts.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", base64_encode(s.charsmap)}});
  }
  if (s.remove_extra_whitespaces) {
    const std::string trailing = s.escape_whitespaces ? "[ " + kSpaceMarker + "]+\\z" : " +\\z";
    parts.push_back(replace_json("Regex", "\\A +|" + trailing, ""));
    parts.push_back(replace_json("Regex", " {2,}", " "));
  }
  if (s.add_dummy_prefix) parts.push_back({{"type", "Prepend"}, {"prepend", s.escape_whitespaces ? kSpaceMarker : " "}});
  if (s.escape_whitespaces) parts.push_back(replace_json("String", " ", kSpaceMarker));
  if (parts.empty()) return nullptr;
  if (parts.size() == 1) return parts[0];
  return ordered_json{{"type", "Sequence"}, {"normalizers", std::move(parts)}};
}

// Pieces back to text as sentencepiece decodes them: U+2581 as a space, byte pieces fused into UTF-8, and the first
// space removed where the normaliser added or kept only one.
ordered_json decoder_json(const SpmSettings& s) {
  ordered_json parts = ordered_json::array();
  if (s.escape_whitespaces) parts.push_back(replace_json("String", kSpaceMarker, " "));
  parts.push_back({{"type", "ByteFallback"}});
  parts.push_back({{"type", "Fuse"}});
  if (s.add_dummy_prefix || s.remove_extra_whitespaces) {
    parts.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  return ordered_json{{"type", "Sequence"}, {"decoders", std::move(parts)}};
}

ordered_json template_piece(const std::string& kind, const std::string& id, int type_id) {
  return {{kind, {{"id", id}, {"type_id", type_id}}}};
}

// HF's add_special_tokens: T5 appends </s>, Llama puts <s> first (id 1 in both conventions). lmzoo's own models add
// their specials in the batchers, so their file has none.
ordered_json post_processor_json(Convention convention) {
  if (convention == Convention::kNative) return nullptr;
  const bool t5 = convention == Convention::kT5;
  const std::string token = t5 ? "</s>" : "<s>";
  const ordered_json a = template_piece("Sequence", "A", 0);
  ordered_json single, pair;
  if (t5) {
    single = {a, template_piece("SpecialToken", token, 0)};
    pair = {a, template_piece("SpecialToken", token, 0), template_piece("Sequence", "B", 0),
            template_piece("SpecialToken", token, 0)};
  } else {
    single = {template_piece("SpecialToken", token, 0), a};
    pair = {template_piece("SpecialToken", token, 0), a, template_piece("SpecialToken", token, 1),
            template_piece("Sequence", "B", 1)};
  }
  return ordered_json{{"type", "TemplateProcessing"},
                      {"single", std::move(single)},
                      {"pair", std::move(pair)},
                      {"special_tokens", {{token, {{"id", token}, {"ids", {1}}, {"tokens", {token}}}}}}};
}

// The merges a BPE model needs to rebuild every piece, as HF's SentencePieceExtractor orders them: by the merged
// piece's score (highest first), then by the ids of the two halves. Only normal pieces are built or used.
ordered_json merges_json(const std::vector<SpmPiece>& pieces) {
  std::unordered_map<std::string, int> normal;
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (pieces[id].type == Type::kNormal) normal.emplace(pieces[id].piece, int(id));
  }
  std::vector<std::tuple<float, int, int, int>> merges;  // (-score, merged id, left id, right id)
  for (size_t id = 0; id < pieces.size(); ++id) {
    const std::string& p = pieces[id].piece;
    if (pieces[id].type != Type::kNormal) continue;
    for (size_t cut = 1; cut < p.size(); ++cut) {
      if ((static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80) continue;  // inside a character
      const auto left = normal.find(p.substr(0, cut)), right = normal.find(p.substr(cut));
      if (left != normal.end() && right != normal.end()) {
        merges.emplace_back(-pieces[id].score, int(id), left->second, right->second);
      }
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) <
           std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b));
  });
  ordered_json out = ordered_json::array();
  for (const auto& [score, merged, left, right] : merges) {
    out.push_back(ordered_json::array({pieces[size_t(left)].piece, pieces[size_t(right)].piece}));
  }
  return out;
}

}  // namespace

std::optional<std::string> spm_tokenizer_json(const Tokenizer& tok) {
  const auto file = tok.files().count("spiece.model") ? tok.files().find("spiece.model")
                                                       : tok.files().find("tokenizer.model");
  if (file == tok.files().end()) return std::nullopt;
  const std::string& proto = file->second;
  const SpmSettings settings = read_spm_settings(proto);
  const std::vector<SpmPiece> pieces = read_spm_pieces(proto);
  using Model = SpmSettings::ModelType;
  if (settings.model_type == Model::kWord || settings.treat_whitespace_as_suffix || settings.has_denormalizer) {
    return std::nullopt;
  }
  const Convention convention = convention_of(pieces);
  bool byte_fallback = false;
  int unk = -1;
  ordered_json added = ordered_json::array();
  for (size_t id = 0; id < pieces.size(); ++id) {
    const Type type = pieces[id].type;
    byte_fallback = byte_fallback || type == Type::kByte;
    if (type == Type::kUnknown && unk < 0) unk = int(id);
    if (type == Type::kUnknown || type == Type::kControl || type == Type::kUserDefined) {
      // lmzoo's own user-defined pieces ([MASK], sentinels) are its special tokens; elsewhere HF keeps them plain.
      const bool special = type != Type::kUserDefined || convention == Convention::kNative;
      added.push_back(added_token_json(int(id), pieces[id].piece, false, special));
    }
  }
  // Ids above the model's pieces (T5's sentinels, <extra_id_0> highest), as Tokenizer numbers them.
  std::vector<std::pair<int, std::string>> above;
  for (int id = int(pieces.size()); id < tok.vocab_size(); ++id) {
    above.emplace_back(id, tok.id_to_piece(id));
    added.push_back(added_token_json(id, tok.id_to_piece(id), false, true));
  }

  ordered_json model;
  if (settings.model_type == Model::kUnigram) {
    ordered_json vocab = ordered_json::array();
    for (const SpmPiece& p : pieces) vocab.push_back(ordered_json::array({p.piece, double(p.score)}));
    for (const auto& [id, piece] : above) vocab.push_back(ordered_json::array({piece, 0.0}));
    model = ordered_json{{"type", "Unigram"}, {"unk_id", unk < 0 ? ordered_json(nullptr) : ordered_json(unk)},
                         {"vocab", std::move(vocab)}, {"byte_fallback", byte_fallback}};
  } else {  // BPE, or a char model: a BPE whose merges are empty
    ordered_json vocab = ordered_json::object();
    for (size_t id = 0; id < pieces.size(); ++id) vocab[pieces[id].piece] = int(id);
    for (const auto& [id, piece] : above) vocab[piece] = id;
    model = ordered_json{{"type", "BPE"},
                         {"dropout", nullptr},
                         {"unk_token", unk < 0 ? ordered_json(nullptr) : ordered_json(pieces[size_t(unk)].piece)},
                         {"continuing_subword_prefix", nullptr},
                         {"end_of_word_suffix", nullptr},
                         {"fuse_unk", true},
                         {"byte_fallback", byte_fallback},
                         {"ignore_merges", false},
                         {"vocab", std::move(vocab)},
                         {"merges", settings.model_type == Model::kBpe ? merges_json(pieces) : ordered_json::array()}};
  }
  return tokenizer_json_document(std::move(added), normalizer_json(settings), nullptr,
                                 post_processor_json(convention), decoder_json(settings), std::move(model))
      .dump(2);
}

}  // namespace lmzoo::hf
