// tokenizer.json pre-tokenizers as the Rust tokenizers 0.22 run them: ByteLevel (GPT-2's pattern by the hand-written
// matcher of data/tokenizers/gpt2_byte_level.h), Split, Whitespace, WhitespaceSplit, BertPreTokenizer, Metaspace, Digits,
// Punctuation, Sequence. Leaves out: offsets (so ByteLevel's trim_offsets is read and has no effect here), and the
// types lmzoo refuses (CharDelimiterSplit, UnicodeScripts, FixedLength, ...).
#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/enum_table.h"
#include "data/tokenizers/gpt2_byte_level.h"
#include "data/tokenizers/hf_json/json_fields.h"
#include "data/tokenizers/hf_json/onig_regex.h"
#include "data/tokenizers/hf_json/split_pattern.h"
#include "data/tokenizers/hf_json/text_pipeline.h"
#include "data/unicode/unicode_props.h"
#include "data/unicode/unicode_text.h"

namespace lmzoo::hf {

namespace {

// Replaces every split by the pieces CUT gives for its text (byte ranges), dropping empty ones. A piece starts
// the input when its split did and it begins at the split's first byte.
template <typename Cut>
void split_each(std::vector<PreSplit>& splits, Cut cut) {
  std::vector<PreSplit> out;
  out.reserve(splits.size());
  for (const PreSplit& s : splits) {
    for (const auto& [b, e] : cut(s)) {
      if (e > b) out.push_back(PreSplit{s.text.substr(b, e - b), s.starts_input && b == 0});
    }
  }
  splits.swap(out);
}

void split_by(std::vector<PreSplit>& splits, const std::function<bool(char32_t)>& is_delim, SplitBehavior behavior) {
  split_each(splits, [&](const PreSplit& s) { return split_ranges(find_matches(s.text, is_delim), behavior); });
}

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    std::vector<PreSplit> out;
    out.reserve(splits.size());
    for (const PreSplit& s : splits) {
      // The Rust library prepends the space to every split, not only to the first.
      const std::string text = add_prefix_space_ && !s.text.empty() && s.text[0] != ' ' ? " " + s.text : s.text;
      auto emit = [&](size_t b, size_t e) {
        PreSplit piece{std::string(), s.starts_input && b == 0};
        append_byte_level(std::string_view(text).substr(b, e - b), piece.text);
        out.push_back(std::move(piece));
      };
      if (text.empty()) continue;
      if (!use_regex_) {
        emit(0, text.size());
        continue;
      }
      for (const auto& [b, e] : gpt2_pretokenize_ranges(text)) emit(b, e);
    }
    splits.swap(out);
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class Split : public PreTokenizer {
 public:
  Split(const std::string& pattern, SplitBehavior behavior, bool invert)
      : regex_(pattern), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    split_each(splits, [&](const PreSplit& s) {
      std::vector<MatchRange> m = find_matches(regex_, s.text);
      if (invert_) invert_matches(m);
      return split_ranges(std::move(m), behavior_);
    });
  }

 private:
  OnigRegex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// The matches of \w+|[^\w\s]+ as the Rust regex crate reads it: \w is UTS #18's word class (Alphabetic, marks,
// Nd, Pc, Join_Control), which Oniguruma's \w is not (it takes every N and leaves out Join_Control), so spelled out.
class Whitespace : public PreTokenizer {
 public:
  Whitespace()
      : regex_(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+)"
               R"(|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\s]+)") {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    split_each(splits, [&](const PreSplit& s) {
      std::vector<MatchRange> m = find_matches(regex_, s.text);
      invert_matches(m);
      return split_ranges(std::move(m), SplitBehavior::Removed);
    });
  }

 private:
  OnigRegex regex_;
};

class WhitespaceSplit : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    split_by(splits, unicode::is_white_space, SplitBehavior::Removed);
  }
};

class BertPreTokenizer : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    split_by(splits, unicode::is_white_space, SplitBehavior::Removed);
    split_by(splits, unicode::is_bert_punctuation, SplitBehavior::Isolated);
  }
};

enum class PrependScheme { First, Never, Always };

class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    for (PreSplit& s : splits) {
      std::string text;
      for (char c : s.text) {
        if (c == ' ') text += replacement_;
        else text.push_back(c);
      }
      const bool starts_with = text.compare(0, replacement_.size(), replacement_) == 0;
      const bool prepend = scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && s.starts_input);
      if (prepend && !starts_with && !text.empty()) text = replacement_ + text;
      s.text = std::move(text);
    }
    if (!split_) {
      splits.erase(std::remove_if(splits.begin(), splits.end(), [](const PreSplit& s) { return s.text.empty(); }),
                   splits.end());
      return;
    }
    const char32_t rep = utf8_to_code_points(replacement_)[0];
    split_by(splits, [rep](char32_t c) { return c == rep; }, SplitBehavior::MergedWithNext);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class Digits : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    split_by(splits, unicode::is_numeric, individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
  }

 private:
  bool individual_;
};

class Punctuation : public PreTokenizer {
 public:
  explicit Punctuation(SplitBehavior behavior) : behavior_(behavior) {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    split_by(splits, unicode::is_bert_punctuation, behavior_);
  }

 private:
  SplitBehavior behavior_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<PreSplit>& splits) const override {
    for (const auto& p : parts_) p->pre_tokenize(splits);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

SplitBehavior behavior_field(const nlohmann::json& j, const std::string& path, bool required) {
  if (!required && !j.contains("behavior")) return SplitBehavior::Isolated;
  const std::string name = json_string(j, "behavior", path);
  if (auto b = find_enum<SplitBehavior>(name)) return *b;
  json_error(path + ".behavior", "\"" + name + "\" is not one of " + enum_choices<SplitBehavior>(", "));
}

PrependScheme prepend_scheme_field(const nlohmann::json& j, const std::string& path) {
  const std::optional<bool> add_prefix_space = json_optional_bool(j, "add_prefix_space", path);
  PrependScheme scheme = PrependScheme::Always;
  if (j.contains("prepend_scheme")) {
    const std::string name = json_string(j, "prepend_scheme", path);
    if (name == "first") scheme = PrependScheme::First;
    else if (name == "never") scheme = PrependScheme::Never;
    else if (name == "always") scheme = PrependScheme::Always;
    else json_error(path + ".prepend_scheme", "\"" + name + "\" is not one of first, never, always");
  }
  if (add_prefix_space == false && scheme != PrependScheme::Never) {  // the Rust library's check, kept
    json_error(path + ".add_prefix_space", "false contradicts prepend_scheme (not \"never\")");
  }
  return scheme;
}

const char* const kSupported = "ByteLevel, Split, Whitespace, WhitespaceSplit, BertPreTokenizer, Metaspace, Digits, "
                               "Punctuation, Sequence";

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, path);
  if (type == "ByteLevel") {
    (void)json_bool(j, "trim_offsets", path);  // offsets only: read for its errors
    return std::make_unique<ByteLevel>(json_bool(j, "add_prefix_space", path),
                                       j.contains("use_regex") ? json_bool(j, "use_regex", path) : true);
  }
  if (type == "Split") {
    const std::string pattern = json_pattern(j, "pattern", path);
    const SplitBehavior behavior = behavior_field(j, path, true);
    const bool invert = json_bool(j, "invert", path);
    try {
      return std::make_unique<Split>(pattern, behavior, invert);
    } catch (const RegexError& e) {
      json_error(path + ".pattern", std::string("Oniguruma refuses the regex: ") + e.what());
    }
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Metaspace") {
    std::string replacement = json_char(j, "replacement", path);
    const PrependScheme scheme = prepend_scheme_field(j, path);
    return std::make_unique<Metaspace>(std::move(replacement), scheme,
                                       json_optional_bool(j, "split", path).value_or(true));
  }
  if (type == "Digits") return std::make_unique<Digits>(json_bool(j, "individual_digits", path));
  if (type == "Punctuation") return std::make_unique<Punctuation>(behavior_field(j, path, false));
  if (type == "Sequence") {
    const nlohmann::json& list = json_array(j, "pretokenizers", path);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = path + ".pretokenizers[" + std::to_string(i) + "]";
      if (list[i].is_null()) json_error(item, "expected a pre-tokenizer object, got null");
      parts.push_back(make_pre_tokenizer(list[i], item));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  json_error(path + ".type", "pre-tokenizer type \"" + type + "\" is not supported (lmzoo reads " + kSupported + ")");
}

}  // namespace lmzoo::hf
