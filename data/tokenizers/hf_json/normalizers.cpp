// tokenizer.json normalizers as the Rust tokenizers 0.22 run them: NFC/NFD/NFKC/NFKD, Lowercase, StripAccents,
// BertNormalizer, Prepend, Replace, Strip, Precompiled, Sequence; Unicode from data/unicode/unicode_props.h (the Rust
// library's tables over utf8proc), regexes from Oniguruma. Leaves out: alignments (offsets), and the types lmzoo
// refuses (NMT, ByteLevel).
#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/base64.h"
#include "data/tokenizers/hf_json/json_fields.h"
#include "data/tokenizers/hf_json/onig_regex.h"
#include "data/tokenizers/hf_json/precompiled_charsmap.h"
#include "data/tokenizers/hf_json/split_pattern.h"
#include "data/tokenizers/hf_json/text_pipeline.h"
#include "data/unicode/unicode_props.h"
#include "data/unicode/unicode_text.h"

namespace lmzoo::hf {

namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(unicode::NormalForm form) : form_(form) {}
  std::string normalize(const std::string& text) const override { return unicode::normalize(text, form_); }

 private:
  unicode::NormalForm form_;
};

// Rust's char::to_lowercase on every character (no context: a final capital sigma gives σ).
std::string lowercase(const std::string& text) {
  std::u32string out;
  for (char32_t c : utf8_to_code_points(text)) unicode::append_lower(c, out);
  return code_points_to_utf8(out);
}

// The code points for which DROP is false; no decomposition first, so precomposed letters keep their accents.
std::string drop_marks(const std::u32string& cps, bool (*drop)(char32_t)) {
  std::string out;
  for (char32_t c : cps) {
    if (!drop(c)) append_utf8(c, out);
  }
  return out;
}

class Lowercase : public Normalizer {
 public:
  std::string normalize(const std::string& text) const override { return lowercase(text); }
};

// Every mark (Mn, Mc, Me) dropped, as the library's is_combining_mark() tells them (BertNormalizer's strip_accents
// asks a different table: Mn alone).
class StripAccents : public Normalizer {
 public:
  std::string normalize(const std::string& text) const override {
    return drop_marks(utf8_to_code_points(text), unicode::is_combining_mark);
  }
};

// The CJK ideograph blocks of the Rust BertNormalizer (its 0x2B920 start differs from Python BERT's 0x2B820).
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}

  std::string normalize(const std::string& text) const override {
    std::u32string s;
    for (char32_t c : utf8_to_code_points(text)) {
      if (clean_text_) {  // drop NUL, U+FFFD and C* but Cn, \t \n \r (so \v \f U+0085 go); white space to ' '
        const bool tab_or_newline = c == U'\t' || c == U'\n' || c == U'\r';
        if (c == 0 || c == 0xFFFD || (!tab_or_newline && unicode::is_other_assigned(c))) continue;
        if (tab_or_newline || unicode::is_white_space(c)) c = U' ';
      }
      if (chinese_ && is_chinese_char(c)) s += {U' ', c, U' '};
      else s.push_back(c);
    }
    std::string out = code_points_to_utf8(s);
    if (strip_accents_) out = drop_marks(unicode::nfd_code_points(out), unicode::is_nonspacing_mark);
    return lowercase_ ? lowercase(out) : out;
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(const std::string& text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

// Every match of the regex (empty ones too) replaced by CONTENT.
class Replace : public Normalizer {
 public:
  Replace(const std::string& pattern, std::string content) : regex_(pattern), content_(std::move(content)) {}
  std::string normalize(const std::string& text) const override {
    std::string out;
    for (const MatchRange& m : find_matches(regex_, text)) {
      if (m.is_match) out += content_;
      else out.append(text, m.begin, m.end - m.begin);
    }
    return out;
  }

 private:
  OnigRegex regex_;
  std::string content_;
};

// White space (Rust's char::is_whitespace) removed from the left and/or right end.
class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(const std::string& text) const override {
    const std::u32string s = utf8_to_code_points(text);
    size_t a = 0, b = s.size();
    if (left_) {
      while (a < b && unicode::is_white_space(s[a])) ++a;
    }
    if (right_) {
      while (b > a && unicode::is_white_space(s[b - 1])) --b;
    }
    return code_points_to_utf8(s.substr(a, b - a));
  }

 private:
  bool left_, right_;
};

// SentencePiece's compiled rules (T5's, XLM-R's nmt_nfkc), base64 in the file.
class Precompiled : public Normalizer {
 public:
  explicit Precompiled(std::string_view blob) : charsmap_(blob) {}
  std::string normalize(const std::string& text) const override { return charsmap_.normalize(text); }

 private:
  PrecompiledCharsmap charsmap_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(const std::string& text) const override {
    std::string s = text;
    for (const auto& p : parts_) s = p->normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

const char* const kSupported = "NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, BertNormalizer, Prepend, Replace, "
                               "Strip, Precompiled, Sequence";

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, path);
  if (type == "NFC") return std::make_unique<UnicodeForm>(unicode::NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(unicode::NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(unicode::NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(unicode::NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "BertNormalizer") {
    const bool lower = json_bool(j, "lowercase", path);
    return std::make_unique<BertNormalizer>(json_bool(j, "clean_text", path),
                                            json_bool(j, "handle_chinese_chars", path),
                                            json_optional_bool(j, "strip_accents", path).value_or(lower), lower);
  }
  if (type == "Prepend") return std::make_unique<Prepend>(json_string(j, "prepend", path));
  if (type == "Replace") {
    std::string pattern = json_pattern(j, "pattern", path);
    std::string content = json_string(j, "content", path);
    try {
      return std::make_unique<Replace>(pattern, std::move(content));
    } catch (const RegexError& e) {
      json_error(path + ".pattern", std::string("Oniguruma refuses the regex: ") + e.what());
    }
  }
  if (type == "Strip") {
    return std::make_unique<Strip>(json_bool(j, "strip_left", path), json_bool(j, "strip_right", path));
  }
  if (type == "Precompiled") {
    const std::optional<std::string> blob = base64_decode(json_string(j, "precompiled_charsmap", path));
    if (!blob) json_error(path + ".precompiled_charsmap", "not base64");
    try {
      return std::make_unique<Precompiled>(*blob);
    } catch (const std::runtime_error& e) {
      json_error(path + ".precompiled_charsmap", e.what());
    }
  }
  if (type == "Sequence") {
    const nlohmann::json& list = json_array(j, "normalizers", path);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = path + ".normalizers[" + std::to_string(i) + "]";
      if (list[i].is_null()) json_error(item, "expected a normalizer object, got null");
      parts.push_back(make_normalizer(list[i], item));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  json_error(path + ".type", "normalizer type \"" + type + "\" is not supported (lmzoo reads " + kSupported + ")");
}

}  // namespace lmzoo::hf
