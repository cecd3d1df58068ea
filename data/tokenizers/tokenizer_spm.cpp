// SentencePiece backend: lmzoo's native models (fixed special ids, byte fallback, exact round trip) and Hugging
// Face's T5 (spiece.model, sentinels added on top as T5Tokenizer does) and Llama (tokenizer.model) models as they
// are. Leaves out: HF's added tokens other than T5's sentinels.
#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>

#include "data/tokenizers/sentencepiece_bridge.h"
#include "data/tokenizers/spm_cuts.h"
#include "data/tokenizers/tokenizer_backend.h"

namespace lmzoo {

namespace {

const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space symbol
constexpr int kT5Sentinels = 100;

// Expected piece of native special id I.
std::string native_piece(int i) {
  static const char* fixed[] = {"<pad>", "<unk>", "<s>", "</s>", "[MASK]", "[CLS]", "[SEP]"};
  if (i < special::kSentinel0) return fixed[i];
  return "<extra_id_" + std::to_string(i - special::kSentinel0) + ">";
}

// A SentencePiece error message without its "file.cc(123) [check]" prefix.
std::string status_message(const std::string& m) {
  auto bracket = m.rfind("] ");
  return bracket == std::string::npos ? m : m.substr(bracket + 2);
}

// Throws when a bridge call returned an error message; FALLBACK is the reason when SentencePiece gave none.
void check(const std::string& error, const std::string& what, const std::string& fallback = "no reason given") {
  if (error.empty()) return;
  std::string reason = status_message(error);
  if (reason.find_first_not_of(" \t\n") == std::string::npos) reason = fallback;
  throw std::runtime_error(what + ": " + reason);
}

// N when TEXT at POS spells "<extra_id_N>" with N in [0, 100); LENGTH is then its length. Else -1.
int sentinel_at(const std::string& text, size_t pos, size_t& length) {
  static const std::string open = "<extra_id_";
  if (text.compare(pos, open.size(), open) != 0) return -1;
  size_t p = pos + open.size();
  int n = 0, digits = 0;
  while (p < text.size() && text[p] >= '0' && text[p] <= '9' && digits < 3) n = n * 10 + (text[p++] - '0'), ++digits;
  const bool leading_zero = digits > 1 && text[pos + open.size()] == '0';
  if (digits == 0 || p >= text.size() || text[p] != '>' || n >= kT5Sentinels || leading_zero) return -1;
  length = p + 1 - pos;
  return n;
}

enum class Convention { kNative, kT5, kLlama };

class SpmBackend : public TokenizerBackend {
 public:
  SpmBackend(std::unique_ptr<SpmProcessor> sp, Convention convention, const SpmSettings& settings)
      : sp_(std::move(sp)), convention_(convention) {
    sp_size_ = sp_->piece_size();
    if (convention_ == Convention::kNative) check_native();
    if (convention_ == Convention::kT5 && sp_->is_unknown(sp_->piece_to_id("<extra_id_0>"))) extra_ = kT5Sentinels;
    find_byte_pieces();
    count_piece_bytes();
    std::vector<std::string> matched;  // the pieces a text can match: not control, byte or unknown
    for (int id = 0; id < sp_size_; ++id) {
      if (!sp_->is_control(id) && !sp_->is_byte(id) && !sp_->is_unknown(id)) matched.push_back(sp_->id_to_piece(id));
    }
    cut_rule_ = spm_cut_rule(settings, matched, extra_ > 0);
  }

  SpecialIds special() const {
    if (convention_ == Convention::kNative) return native_special_ids();
    SpecialIds s;
    s.tokenizer = "sentencepiece";
    auto id_of = [&](const char* piece) {
      const int id = sp_->piece_to_id(piece);
      return (id >= 0 && id < sp_size_ && sp_->id_to_piece(id) == piece) ? id : -1;
    };
    s.pad = id_of("<pad>");
    s.unk = id_of("<unk>");
    s.bos = id_of("<s>");
    s.eos = id_of("</s>");
    for (int i = 0; convention_ == Convention::kT5 && i < kT5Sentinels; ++i) {
      const std::string piece = "<extra_id_" + std::to_string(i) + ">";
      s.sentinels.push_back(extra_ ? sp_size_ + kT5Sentinels - 1 - i : id_of(piece.c_str()));
    }
    if (!s.sentinels.empty() && s.sentinels.back() < 0) s.sentinels.clear();
    return s;
  }

  std::vector<int> encode(const std::string& text) const override {
    if (!extra_) return encode_plain(text);
    std::vector<int> ids;
    size_t start = 0;
    for (size_t pos = text.find("<extra_id_"); pos != std::string::npos; pos = text.find("<extra_id_", pos + 1)) {
      size_t length = 0;
      const int n = sentinel_at(text, pos, length);
      if (n < 0) continue;
      append(ids, encode_plain(text.substr(start, pos - start)));
      ids.push_back(sentinel_id(n));
      start = pos + length;
      pos = start - 1;
    }
    append(ids, encode_plain(text.substr(start)));
    return ids;
  }

  TextCut cut_at(std::string_view text, size_t pos, bool forced) const override {
    return spm_cut_at(cut_rule_, text, pos, forced);
  }

  std::string decode(const std::vector<int>& ids) const override {
    std::string text, part;
    std::vector<int> run;
    auto flush = [&] {
      if (run.empty()) return;
      check(sp_->decode(run, &part), "decode failed");
      text += part;
      run.clear();
    };
    for (int id : ids) {
      if (id < sp_size_) {
        run.push_back(id);
        continue;
      }
      flush();
      text += id_to_piece(id);
    }
    flush();
    return text;
  }

  std::string id_to_piece(int id) const override {
    if (id >= sp_size_) return "<extra_id_" + std::to_string(sp_size_ + kT5Sentinels - 1 - id) + ">";
    return sp_->id_to_piece(id);
  }

  int piece_to_id(const std::string& piece) const override {
    size_t length = 0;
    const int n = extra_ ? sentinel_at(piece, 0, length) : -1;
    if (n >= 0 && length == piece.size()) return sentinel_id(n);
    return sp_->piece_to_id(piece);
  }

  int vocab_size() const override { return sp_size_ + extra_; }
  bool is_word_start(int id) const override { return id_to_piece(id).rfind(kSpaceMarker, 0) == 0; }
  int piece_bytes(int id) const override { return piece_bytes_[size_t(id)]; }
  bool is_control(int id) const override { return id >= sp_size_ || sp_->is_control(id); }

 private:
  static void append(std::vector<int>& ids, const std::vector<int>& more) {
    ids.insert(ids.end(), more.begin(), more.end());
  }
  int sentinel_id(int n) const { return sp_size_ + kT5Sentinels - 1 - n; }

  // SentencePiece's ids for TEXT. lmzoo's own models keep their exact round trip: a literal U+2581 (which
  // SentencePiece reads as a space and decodes as one) is encoded as its three byte pieces. T5's and Llama's
  // models give what sentencepiece gives.
  std::vector<int> encode_plain(const std::string& text) const {
    std::vector<int> ids, part_ids;
    const bool bytes_for_marker = has_bytes_ && convention_ == Convention::kNative;
    size_t start = 0;
    while (true) {
      size_t marker = bytes_for_marker ? text.find(kSpaceMarker, start) : std::string::npos;
      size_t end = marker == std::string::npos ? text.size() : marker;
      if (end > start) {
        check(sp_->encode(std::string_view(text).substr(start, end - start), &part_ids), "encode failed");
        append(ids, part_ids);
      }
      if (marker == std::string::npos) break;
      for (unsigned char c : kSpaceMarker) ids.push_back(byte_ids_[c]);
      start = marker + kSpaceMarker.size();
    }
    return ids;
  }

  void check_native() const {
    if (sp_size_ <= special::kNumSpecial + 256) {
      throw std::runtime_error("not an lmzoo tokenizer: vocabulary too small");
    }
    for (int i = 0; i < special::kNumSpecial; ++i) {
      if (sp_->id_to_piece(i) != native_piece(i)) {
        throw std::runtime_error("not an lmzoo tokenizer: id " + std::to_string(i) + " is '" + sp_->id_to_piece(i) +
                                 "', expected '" + native_piece(i) + "'");
      }
    }
  }

  // byte_ids_ from the byte-fallback pieces <0xNN>; a native model must have all 256.
  void find_byte_pieces() {
    has_bytes_ = true;
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      const int id = sp_->piece_to_id(name);
      has_bytes_ = has_bytes_ && id >= 0 && id < sp_size_ && sp_->is_byte(id);
      if (!has_bytes_ && convention_ == Convention::kNative) {
        throw std::runtime_error("not an lmzoo tokenizer: no byte-fallback piece " + std::string(name));
      }
      byte_ids_[size_t(b)] = id;
    }
  }

  void count_piece_bytes() {
    piece_bytes_.resize(size_t(vocab_size()));
    for (int id = 0; id < vocab_size(); ++id) {
      const std::string piece = id_to_piece(id);
      int& n = piece_bytes_[size_t(id)];
      if (id >= sp_size_) n = int(piece.size());  // a sentinel comes from its spelling in the text
      else if (sp_->is_control(id)) n = 0;
      else if (sp_->is_byte(id)) n = 1;
      else if (sp_->is_unknown(id)) n = has_bytes_ ? 5 : 1;  // " \u2047 " when decoded; else one unknown character
      else {
        int markers = 0;
        for (size_t p = piece.find(kSpaceMarker); p != std::string::npos; p = piece.find(kSpaceMarker, p + 3)) {
          ++markers;
        }
        n = int(piece.size()) - 2 * markers;  // each 3-byte marker decodes to ' '
      }
    }
  }

  std::unique_ptr<SpmProcessor> sp_;
  Convention convention_;
  int sp_size_ = 0;
  int extra_ = 0;  // T5 sentinels added above the model's pieces
  bool has_bytes_ = false;
  std::array<int, 256> byte_ids_{};  // id of the byte-fallback piece <0xNN>
  std::vector<int> piece_bytes_;
  SpmCutRule cut_rule_;
};

// The convention of a loaded model, from its first pieces.
Convention detect_convention(const SpmProcessor& sp) {
  const int n = sp.piece_size();
  auto piece = [&](int id) { return id < n ? sp.id_to_piece(id) : std::string(); };
  if (piece(0) == "<pad>" && piece(1) == "</s>") return Convention::kT5;
  if (piece(0) == "<unk>" && piece(1) == "<s>" && piece(2) == "</s>") return Convention::kLlama;
  return Convention::kNative;  // including anything unrecognised, which check_native then names
}

}  // namespace

LoadedBackend load_spm_backend(const std::string& model_proto) {
  auto sp = new_spm_processor();
  if (model_proto.empty()) throw std::runtime_error("invalid tokenizer model: the file is empty");
  check(sp->load_serialized(model_proto), "invalid tokenizer model", "not a SentencePiece model file");
  const Convention convention = detect_convention(*sp);
  auto backend = std::make_unique<SpmBackend>(std::move(sp), convention, read_spm_settings(model_proto));
  LoadedBackend loaded;
  loaded.special = backend->special();
  loaded.files[convention == Convention::kT5 ? "spiece.model" : "tokenizer.model"] = model_proto;
  loaded.backend = std::move(backend);
  return loaded;
}

}  // namespace lmzoo
