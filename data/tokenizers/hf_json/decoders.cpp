// The tokenizer.json decoders, each the Rust library's decode_chain over the list of token strings.
#include "data/tokenizers/hf_json/decoders.h"

#include <nlohmann/json.hpp>

#include "data/tokenizers/gpt2_bpe.h"
#include "data/tokenizers/hf_json/json_fields.h"
#include "data/unicode/unicode_text.h"
#include "data/unicode/utf8.h"

namespace lmzoo::hf {

namespace {

const std::string kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Code points of valid UTF-8 TEXT (tokens come from the vocabulary, which JSON guarantees is UTF-8).
std::u32string chars_of(const std::string& text) { return utf8_to_code_points(text, "token"); }

class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string mapped;
      bool all = true;
      for (char32_t c : chars_of(token)) {
        const int b = byte_level_char_to_byte(c);
        if (b < 0) {
          all = false;
          break;
        }
        mapped.push_back(char(b));
      }
      bytes += all ? mapped : token;
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t = " " + t;
        }
      }
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  static void replace_all(std::string& s, const std::string& from, const std::string& to) {
    std::string out;
    size_t at = 0;
    for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) out += s.substr(at, hit - at) + to;
    s = out + s.substr(at);
  }
  // The Rust library's wordpiece cleanup, in its order.
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) replace_all(s, from, to);
    return s;
  }
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool strip_first) : replacement_(replacement), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (char32_t c : chars_of(tokens[i])) {
        if (c != replacement_) {
          append_utf8(c, out);
        } else if (!(i == 0 && strip_first_)) {
          out.push_back(' ');
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  char32_t replacement_;
  bool strip_first_;  // prepend_scheme is not "never": the first token loses its replacement characters
};

// "<0xXX>" -> XX as Rust's u8::from_str_radix(&token[3..5], 16) reads it, or -1.
int byte_token_value(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  if (t[3] == '+') return hex(t[4]);
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    const auto flush = [&] {
      if (pending.empty()) return;
      if (find_invalid_utf8(pending) == std::string::npos) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.push_back(kReplacementChar);
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      const int b = byte_token_value(t);
      if (b >= 0) {
        pending.push_back(char(b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, all);
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      const std::u32string chars = chars_of(t);
      size_t start_cut = 0;
      for (size_t i = 0; i < std::min(start_, chars.size()) && chars[i] == content_; ++i) start_cut = i + 1;
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size() && chars[chars.size() - i - 1] == content_; ++i) {
        stop_cut = chars.size() - i - 1;
      }
      t = stop_cut > start_cut ? code_points_to_utf8(chars.substr(start_cut, stop_cut - start_cut)) : "";
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::string pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (pattern_.empty()) return;
    for (std::string& t : tokens) {
      std::string out;
      size_t at = 0;
      for (size_t hit; (hit = t.find(pattern_, at)) != std::string::npos; at = hit + pattern_.size()) {
        out += t.substr(at, hit - at) + content_;
      }
      t = out + t.substr(at);
    }
  }

 private:
  std::string pattern_, content_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : parts_) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

// One character (the string field KEY of J), e.g. Metaspace's replacement.
char32_t char_field(const nlohmann::json& j, const std::string& path, const char* key, const std::string& def) {
  const std::string s = json_string_or(j, key, path, def);
  const std::u32string chars = utf8_to_code_points(s, json_field_path(path, key));
  if (chars.size() != 1) json_error(json_field_path(path, key), "expected one character, got '" + s + "'");
  return chars[0];
}

}  // namespace

int byte_level_char_to_byte(char32_t cp) {
  static const std::vector<int> table = [] {
    std::vector<int> t(512, -1);
    for (int b = 0; b < 256; ++b) t[gpt2_byte_to_char(uint8_t(b))] = b;
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const size_t bad = find_invalid_utf8(std::string_view(bytes).substr(i));
    if (bad == std::string::npos) {
      out.append(bytes, i, std::string::npos);
      break;
    }
    out.append(bytes, i, bad);
    i += bad;
    // The maximal prefix of a valid sequence starting at i (at least one byte) becomes one U+FFFD.
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
    size_t len = 1;
    for (; len < need && i + len < bytes.size(); ++len) {
      const unsigned char n = static_cast<unsigned char>(bytes[i + len]);
      unsigned char lo = 0x80, hi = 0xBF;
      if (len == 1) {
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
      }
      if (n < lo || n > hi) break;
    }
    out += kReplacementChar;
    i += len;
  }
  return out;
}

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, path);
  if (type == "ByteLevel") {
    json_check_known_keys(j, path, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    return std::make_unique<ByteLevelDecoder>();
  }
  if (type == "WordPiece") {
    json_check_known_keys(j, path, {"type", "prefix", "cleanup"});
    return std::make_unique<WordPieceDecoder>(json_string_or(j, "prefix", path, "##"), json_bool_or(j, "cleanup", path, true));
  }
  if (type == "Metaspace") {
    json_check_known_keys(j, path, {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    const char32_t replacement = char_field(j, path, "replacement", "\xE2\x96\x81");
    std::string scheme = json_bool_or(j, "add_prefix_space", path, true) ? "always" : "never";
    scheme = json_string_or(j, "prepend_scheme", path, scheme);
    if (scheme != "always" && scheme != "never" && scheme != "first") {
      json_error(json_field_path(path, "prepend_scheme"), "'" + scheme + "' is not one of always|never|first");
    }
    return std::make_unique<MetaspaceDecoder>(replacement, scheme != "never");
  }
  if (type == "ByteFallback") {
    json_check_known_keys(j, path, {"type"});
    return std::make_unique<ByteFallbackDecoder>();
  }
  if (type == "Fuse") {
    json_check_known_keys(j, path, {"type"});
    return std::make_unique<FuseDecoder>();
  }
  if (type == "Strip") {
    json_check_known_keys(j, path, {"type", "content", "start", "stop"});
    return std::make_unique<StripDecoder>(char_field(j, path, "content", " "), size_t(json_uint_or(j, "start", path, 0, 1 << 20)),
                                          size_t(json_uint_or(j, "stop", path, 0, 1 << 20)));
  }
  if (type == "Replace") {
    json_check_known_keys(j, path, {"type", "pattern", "content"});
    const std::string ppath = json_field_path(path, "pattern");
    const auto p = j.find("pattern");
    if (p == j.end() || !p->is_object() || p->size() != 1) json_error(ppath, "expected {\"String\": ...}");
    if (p->contains("Regex")) json_error(json_field_path(ppath, "Regex"), "a Regex pattern in a decoder is not supported (String is)");
    return std::make_unique<ReplaceDecoder>(json_string(*p, "String", ppath), json_string(j, "content", path));
  }
  if (type == "Sequence") {
    json_check_known_keys(j, path, {"type", "decoders"});
    const auto d = j.find("decoders");
    const std::string dpath = json_field_path(path, "decoders");
    if (d == j.end() || !d->is_array()) json_error(dpath, "expected an array of decoders");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < d->size(); ++i) {
      auto part = make_decoder((*d)[i], dpath + "[" + std::to_string(i) + "]");
      if (!part) json_error(dpath + "[" + std::to_string(i) + "]", "null is not a decoder");
      parts.push_back(std::move(part));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  json_error(json_field_path(path, "type"), "'" + type + "' is not supported (ByteLevel, WordPiece, Metaspace, ByteFallback, "
                                        "Fuse, Strip, Replace, Sequence)");
}

}  // namespace lmzoo::hf
