// Tests of data/tokenizers/hf_json's text pipeline (normalizers, pre-tokenizers, Oniguruma wrapper, split behaviours) on
// outputs worked out by hand from the Rust tokenizers 0.22 rules, their error messages, and GPT-2's hand-written
// pre-tokeniser against Oniguruma running the published pattern. Leaves out: models, decoders, added tokens.
#include "tests/catch_compat.h"

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "data/tokenizers/gpt2_byte_level.h"
#include "data/tokenizers/hf_json/json_fields.h"
#include "data/tokenizers/hf_json/onig_regex.h"
#include "data/tokenizers/hf_json/split_pattern.h"
#include "data/tokenizers/hf_json/text_pipeline.h"
#include "data/unicode/unicode_props.h"
#include "data/unicode/unicode_text.h"

using namespace lmzoo;
using namespace lmzoo::hf;
using Pieces = std::vector<std::string>;

namespace {

std::string norm(const std::string& json, const std::string& text) {
  return make_normalizer(nlohmann::json::parse(json), "normalizer")->normalize(text);
}

std::vector<PreSplit> pre_splits(const std::string& json, std::vector<PreSplit> splits) {
  make_pre_tokenizer(nlohmann::json::parse(json), "pre_tokenizer")->pre_tokenize(splits);
  return splits;
}

Pieces pre(const std::string& json, const std::string& text) {
  Pieces out;
  for (const PreSplit& s : pre_splits(json, {{text, true}})) out.push_back(s.text);
  return out;
}

std::string normalizer_error(const std::string& json) {
  try {
    make_normalizer(nlohmann::json::parse(json), "normalizer");
  } catch (const TokenizerJsonError& e) {
    return e.what();
  }
  return "no error";
}

std::string pre_tokenizer_error(const std::string& json) {
  try {
    make_pre_tokenizer(nlohmann::json::parse(json), "pre_tokenizer");
  } catch (const TokenizerJsonError& e) {
    return e.what();
  }
  return "no error";
}

std::string split_json(const std::string& behavior, bool invert) {
  return R"({"type":"Split","pattern":{"String":"-"},"behavior":")" + behavior + R"(","invert":)" +
         (invert ? "true" : "false") + "}";
}

const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string split_regex_json(const char* pattern) {
  return nlohmann::json{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}}
      .dump();
}

}  // namespace

TEST_CASE("hf normalizers: unicode forms, lowercase, accents", "[hf_json]") {
  CHECK(norm(R"({"type":"NFC"})", "e\u0301") == "\u00E9");
  CHECK(norm(R"({"type":"NFD"})", "\u00E9\uD55C") == "e\u0301\u1112\u1161\u11AB");
  CHECK(norm(R"({"type":"NFKC"})", "\uFB01\u00B2\u2460") == "fi21");
  CHECK(norm(R"({"type":"NFKD"})", "\u00E9\u00BD") == "e\u03011\u20442");
  // Rust's char::to_lowercase one character at a time: İ gives i + U+0307, a final Σ still gives σ.
  CHECK(norm(R"({"type":"Lowercase"})", "\u0130\u039F\u03A3A") == "i\u0307\u03BF\u03C3a");
  // StripAccents drops nonspacing marks without decomposing: a precomposed é stays.
  CHECK(norm(R"({"type":"StripAccents"})", "e\u0301\u00E9") == "e\u00E9");
  CHECK(norm(R"({"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"}]})",
             "\u00C7a") == "ca");
}

TEST_CASE("hf normalizers: BertNormalizer cleans, spaces CJK, strips and lowers", "[hf_json]") {
  const std::string uncased =
      R"({"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true})";
  // U+00AD (Cf), U+E000 (Co) and \v (Cc) go, U+0378 (Cn, unassigned) stays; \t and U+3000 become ' '; 中 is spaced
  // out; strip_accents null follows lowercase: é loses its accent.
  CHECK(norm(uncased, "H\u00E9llo\u00AD\tW\u4E2D\uE000\u0378x\x0B\u3000!") == "hello w \u4E2D \u0378x !");
  CHECK(norm(uncased, "a\U000F0000b\U0010FFFDc\xEF\xBB\xBF" "d") == "abcd");  // private use planes, BOM (Cf)
  CHECK(norm(uncased, "\U0002B820\U0002B920") == "\U0002B820 \U0002B920 ");  // the Rust CJK range starts at 2B920
  const std::string cased =
      R"({"type":"BertNormalizer","clean_text":false,"handle_chinese_chars":false,"strip_accents":null,"lowercase":false})";
  CHECK(norm(cased, "H\u00E9\tX\uE000") == "H\u00E9\tX\uE000");
  const std::string strip_only =
      R"({"type":"BertNormalizer","clean_text":false,"handle_chinese_chars":false,"strip_accents":true,"lowercase":false})";
  CHECK(norm(strip_only, "\u00C9t\u00E9") == "Ete");
}

TEST_CASE("hf normalizers: Prepend, Replace, Strip", "[hf_json]") {
  CHECK(norm(R"({"type":"Prepend","prepend":"\u2581"})", "a") == "\u2581a");
  CHECK(norm(R"({"type":"Prepend","prepend":"\u2581"})", "").empty());
  CHECK(norm(R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"})", " a b") == "\u2581a\u2581b");
  // A String pattern is a literal: "." is not "any character".
  CHECK(norm(R"({"type":"Replace","pattern":{"String":"."},"content":","})", "a.b.c") == "a,b,c");
  CHECK(norm(R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "})", "a \t\n b") == "a b");
  // a* on "bab": empty match at 0, "a" at 1..2, the empty match at 2 (right after it) skipped, empty match at 3.
  CHECK(norm(R"({"type":"Replace","pattern":{"Regex":"a*"},"content":"-"})", "bab") == "-b-b-");
  CHECK(norm(R"({"type":"Strip","strip_left":true,"strip_right":true})", "\u3000 a b \n") == "a b");
  CHECK(norm(R"({"type":"Strip","strip_left":false,"strip_right":true})", "\u3000 a b \n") == "\u3000 a b");
}

TEST_CASE("hf pre-tokenizers: ByteLevel", "[hf_json]") {
  const std::string plain = R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true})";
  CHECK(pre(plain, "Hello  world's") == Pieces{"Hello", "\u0120", "\u0120world", "'s"});
  CHECK(pre(plain, "\u00E9\n") == Pieces{"\u00C3\u00A9", "\u010A"});  // bytes C3 A9 0A as GPT-2's characters
  const std::string prefixed = R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true})";
  CHECK(pre(prefixed, "a") == Pieces{"\u0120a"});
  CHECK(pre(prefixed, " a") == Pieces{"\u0120a"});
  // The space goes before every split, not only the first (an added token in between makes two splits).
  const auto two = pre_splits(prefixed, {{"a", true}, {"b", false}});
  REQUIRE(two.size() == 2);
  CHECK((two[0].text == "\u0120a" && two[0].starts_input && two[1].text == "\u0120b" && !two[1].starts_input));
  const std::string no_regex = R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":false})";
  CHECK(pre(no_regex, "a b") == Pieces{"\u0120a\u0120b"});
}

TEST_CASE("hf pre-tokenizers: Split with Qwen2's and Llama-3's patterns", "[hf_json]") {
  CHECK(pre(split_regex_json(kQwen2), "I'M 123 ok!!\n\n  x") ==
        Pieces{"I", "'M", " ", "1", "2", "3", " ok", "!!\n\n", " ", " x"});
  CHECK(pre(split_regex_json(kLlama3), "12345 we'LL") == Pieces{"123", "45", " we", "'LL"});
  CHECK(pre(split_regex_json(kLlama3), "\u4F60\u597D world") == Pieces{"\u4F60\u597D", " world"});
}

TEST_CASE("hf pre-tokenizers: Split behaviours and invert", "[hf_json]") {
  const std::string text = "a--b-c-";
  CHECK(pre(split_json("Removed", false), text) == Pieces{"a", "b", "c"});
  CHECK(pre(split_json("Removed", true), text) == Pieces{"-", "-", "-", "-"});
  CHECK(pre(split_json("Isolated", false), text) == Pieces{"a", "-", "-", "b", "-", "c", "-"});
  CHECK(pre(split_json("Isolated", true), text) == Pieces{"a", "-", "-", "b", "-", "c", "-"});
  CHECK(pre(split_json("MergedWithPrevious", false), text) == Pieces{"a-", "-", "b-", "c-"});
  CHECK(pre(split_json("MergedWithPrevious", true), text) == Pieces{"a", "-", "-b", "-c", "-"});
  CHECK(pre(split_json("MergedWithNext", false), text) == Pieces{"a", "-", "-b", "-c", "-"});
  CHECK(pre(split_json("MergedWithNext", true), text) == Pieces{"a-", "-", "b-", "c-"});
  CHECK(pre(split_json("Contiguous", false), text) == Pieces{"a", "--", "b", "-", "c", "-"});
  CHECK(pre(split_json("Contiguous", true), text) == Pieces{"a", "--", "b", "-", "c", "-"});
  // A String pattern is escaped: "a.b" matches only itself.
  CHECK(pre(R"({"type":"Split","pattern":{"String":"a.b"},"behavior":"Isolated","invert":false})", "xa.bya-b") ==
        Pieces{"x", "a.b", "ya-b"});
  // A piece starts the input only if it begins where its split began.
  const auto removed = pre_splits(R"({"type":"Split","pattern":{"String":" "},"behavior":"Removed","invert":false})",
                                  {{"a b", true}, {" c", true}});
  REQUIRE(removed.size() == 3);
  CHECK((removed[0].starts_input && !removed[1].starts_input && !removed[2].starts_input));
}

TEST_CASE("hf pre-tokenizers: Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits", "[hf_json]") {
  // \w is Alphabetic, marks, Nd, Pc and Join_Control: ² (No) is not, ‿ (Pc) and the ZWJ are.
  CHECK(pre(R"({"type":"Whitespace"})", "h\u00E9llo_w\u00F6rld, x\u00B2\u203Fy\u200Dz!!") ==
        Pieces{"h\u00E9llo_w\u00F6rld", ",", "x", "\u00B2", "\u203Fy\u200Dz", "!!"});
  CHECK(pre(R"({"type":"WhitespaceSplit"})", "a\u3000b\u00A0c\u200Bd \n") == Pieces{"a", "b", "c\u200Bd"});
  CHECK(pre(R"({"type":"BertPreTokenizer"})", "Hello, world!\u00BF $5") ==
        Pieces{"Hello", ",", "world", "!", "\u00BF", "$", "5"});
  CHECK(pre(R"({"type":"Punctuation"})", "a!!b") == Pieces{"a", "!", "!", "b"});
  CHECK(pre(R"({"type":"Punctuation","behavior":"Contiguous"})", "a!!b") == Pieces{"a", "!!", "b"});
  CHECK(pre(R"({"type":"Punctuation","behavior":"MergedWithPrevious"})", "a!!b?") == Pieces{"a!", "!", "b?"});
  CHECK(pre(R"({"type":"Digits","individual_digits":true})", "a12b3\u00BD") ==
        Pieces{"a", "1", "2", "b", "3", "\u00BD"});
  CHECK(pre(R"({"type":"Digits","individual_digits":false})", "a12b3\u00BD") == Pieces{"a", "12", "b", "3\u00BD"});
}

TEST_CASE("hf pre-tokenizers: Metaspace prepend schemes and split", "[hf_json]") {
  const std::string always = R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always","split":true})";
  CHECK(pre(always, "Hey  friend") == Pieces{"\u2581Hey", "\u2581", "\u2581friend"});
  CHECK(pre(always, "\u2581a") == Pieces{"\u2581a"});  // already starts with the replacement
  CHECK(pre(R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"never"})", "Hey friend") ==
        Pieces{"Hey", "\u2581friend"});
  CHECK(pre(R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always","split":false})", "a b") ==
        Pieces{"\u2581a\u2581b"});
  CHECK(pre(R"({"type":"Metaspace","replacement":"_","add_prefix_space":true})", "a_b") == Pieces{"_a", "_b"});
  const std::string first = R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first"})";
  const auto splits = pre_splits(first, {{"Hey", true}, {"you", false}});
  REQUIRE(splits.size() == 2);
  CHECK((splits[0].text == "\u2581Hey" && splits[1].text == "you"));
  // After WhitespaceSplit only the piece at byte 0 of the input is the first.
  const std::string seq = R"({"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},)" + first + "]}";
  CHECK(pre(seq, "a b") == Pieces{"\u2581a", "b"});
  CHECK(pre(seq, " a b") == Pieces{"a", "b"});
  CHECK(pre(seq, "").empty());
}

TEST_CASE("hf text pipeline: errors name the field and the reason", "[hf_json]") {
  CHECK(make_normalizer(nullptr, "normalizer") == nullptr);
  CHECK(make_pre_tokenizer(nullptr, "pre_tokenizer") == nullptr);
  CHECK(normalizer_error(R"({"type":"NMT"})") ==
        "normalizer.type: normalizer type \"NMT\" is not supported (lmzoo reads NFC, NFD, NFKC, NFKD, "
        "Lowercase, StripAccents, BertNormalizer, Prepend, Replace, Strip, Precompiled, Sequence)");
  CHECK(normalizer_error(R"({"type":"Precompiled","precompiled_charsmap":""})") ==
        "normalizer.precompiled_charsmap: the charsmap is shorter than its 4-byte trie size");
  CHECK(normalizer_error(R"({"type":"Precompiled","precompiled_charsmap":"AAA*"})") ==
        "normalizer.precompiled_charsmap: not base64");
  CHECK(normalizer_error(R"({"type":"Precompiled","precompiled_charsmap":"QAAAAA=="})") ==
        "normalizer.precompiled_charsmap: the charsmap's trie size 64 does not fit its 4 bytes");
  CHECK(normalizer_error(R"({"strip_left":true})") == "normalizer: missing field \"type\"");
  CHECK(normalizer_error("5") == "normalizer: expected a JSON object, got number");
  CHECK(normalizer_error(R"({"type":"Strip","strip_left":true})") == "normalizer: missing field \"strip_right\"");
  CHECK(normalizer_error(R"({"type":"BertNormalizer","clean_text":1,"handle_chinese_chars":true,"lowercase":true})") ==
        "normalizer.clean_text: expected true or false, got number 1");
  CHECK(normalizer_error(R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Replace","pattern":{"Regex":"("},"content":""}]})") ==
        "normalizer.normalizers[1].pattern: Oniguruma refuses the regex: end pattern with unmatched parenthesis");
  CHECK(normalizer_error(R"({"type":"Replace","pattern":{"Str":"x"},"content":""})") ==
        "normalizer.pattern: unknown pattern kind \"Str\", expected String or Regex");
  CHECK(normalizer_error(R"({"type":"Replace","pattern":"x","content":""})") ==
        "normalizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}, got \"x\"");
  CHECK(pre_tokenizer_error(R"({"type":"Sequence","pretokenizers":[{"type":"Whitespace"},{"type":"Split","pattern":{"Regex":"[a"},"behavior":"Isolated","invert":false}]})") ==
        "pre_tokenizer.pretokenizers[1].pattern: Oniguruma refuses the regex: premature end of char-class");
  CHECK(pre_tokenizer_error(R"({"type":"CharDelimiterSplit","delimiter":"x"})") ==
        "pre_tokenizer.type: pre-tokenizer type \"CharDelimiterSplit\" is not supported (lmzoo reads ByteLevel, Split, "
        "Whitespace, WhitespaceSplit, BertPreTokenizer, Metaspace, Digits, Punctuation, Sequence)");
  CHECK(pre_tokenizer_error(R"({"type":"Split","pattern":{"String":" "},"behavior":"removed","invert":false})") ==
        "pre_tokenizer.behavior: \"removed\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
        "Contiguous");
  CHECK(pre_tokenizer_error(R"({"type":"Split","pattern":{"String":" "},"behavior":"Removed"})") ==
        "pre_tokenizer: missing field \"invert\"");
  CHECK(pre_tokenizer_error(R"({"type":"Digits","individual_digits":"yes"})") ==
        "pre_tokenizer.individual_digits: expected true or false, got string \"yes\"");
  CHECK(pre_tokenizer_error(R"({"type":"ByteLevel","add_prefix_space":true})") ==
        "pre_tokenizer: missing field \"trim_offsets\"");
  CHECK(pre_tokenizer_error(R"({"type":"Metaspace","replacement":"ab"})") ==
        "pre_tokenizer.replacement: expected exactly one character, got \"ab\"");
  CHECK(pre_tokenizer_error(R"({"type":"Metaspace","replacement":"_","add_prefix_space":false})") ==
        "pre_tokenizer.add_prefix_space: false contradicts prepend_scheme (not \"never\")");
  CHECK(pre_tokenizer_error(R"({"type":"Metaspace","replacement":"_","prepend_scheme":"First"})") ==
        "pre_tokenizer.prepend_scheme: \"First\" is not one of first, never, always");
  CHECK(pre_tokenizer_error(R"({"type":"Sequence","pretokenizers":{}})") ==
        "pre_tokenizer.pretokenizers: expected an array, got object");
}

TEST_CASE("hf onig regex: find_all and its empty matches", "[hf_json]") {
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  CHECK(OnigRegex("a*").find_all("bab") == Ranges{{0, 0}, {1, 2}, {3, 3}});
  CHECK(OnigRegex("").find_all("\u00E9x") == Ranges{{0, 0}, {2, 2}, {3, 3}});  // steps over whole characters
  CHECK(OnigRegex("(?i:'s)").find_all("it'S's") == Ranges{{2, 4}, {4, 6}});
  CHECK(OnigRegex(R"(\p{L}+)").full_match("\u00E9t\u00E9"));
  CHECK_THROWS_WITH(OnigRegex("(?<n"), Catch::Contains("invalid group name"));
  CHECK(regex_escape("a.b*c-d#e~") == "a\\.b\\*c\\-d\\#e\\~");
}

// The hand-written matcher takes its classes from the Rust library's Oniguruma (Unicode 16.0, data/unicode/unicode_tables.h),
// the system's Oniguruma from its own tables (Debian 12: libonig 6.9.8 has Unicode 14.0), so code points unassigned
// in the system's version (\p{Cn}) are left out of the comparison.
TEST_CASE("gpt2 hand-written pre-tokeniser equals Oniguruma on the published pattern", "[hf_json][gpt2bpe]") {
  const OnigRegex gpt2(kGpt2Pattern);
  const OnigRegex unassigned(R"(\p{Cn})");
  auto onig_knows = [&](char32_t cp) {
    std::string s;
    append_utf8(cp, s);
    return !unassigned.full_match(s);
  };
  // Every code point: the classes the matcher uses equal Oniguruma's \p{L}, \p{N} and \s.
  const OnigRegex letter(R"(\p{L})"), number(R"(\p{N})"), space(R"(\s)");
  int class_mismatches = 0, compared = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || !onig_knows(cp)) continue;
    ++compared;
    std::string s;
    append_utf8(cp, s);
    if (letter.full_match(s) != unicode::is_letter(cp) || number.full_match(s) != unicode::is_number(cp) ||
        space.full_match(s) != unicode::is_white_space(cp)) {
      if (++class_mismatches <= 5) UNSCOPED_INFO("class mismatch at U+" << std::hex << static_cast<uint32_t>(cp));
    }
  }
  CHECK(class_mismatches == 0);
  CHECK(compared > 280000);  // libonig 6.9.8 (Unicode 14) assigns 282,230, private use included
  // Seeded random and adversarial strings: mixed scripts, spaces, newlines, digits, apostrophes, marks.
  const std::vector<std::string> fragments = {
      " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00A0", "\u3000", "\u2028", "\x0B", "\u0085", "'", "'s",
      "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'RE", "''", " '", "a", "Z", "word", " the", "0", "42", " 7",
      "\u00B2", "\u0663", "\u216B", "!", "?!", " ...", "-", "_", "$", "\u00E9", "e\u0301", "\u0301", "\u0300\u0323",
      "\u4E2D\u6587", "\uD55C", "\u0E44\u0E17\u0E22", "\u0639\u0631\u0628\u064A", "\U0001F600", "\u200D", "\u200B",
      "\U0001F468\u200D\U0001F469", "\uE000", "\u0378", "\U000E0041", "\U0001F3FD", "\u0130", "\u00DF", "\uFB01"};
  std::mt19937 rng(26);
  int mismatches = 0;
  for (int n = 0; n < 4000; ++n) {
    std::string text;
    const int parts = static_cast<int>(rng() % 24);
    for (int k = 0; k < parts; ++k) {
      if (rng() % 4 == 0) {  // a random scalar value from anywhere in the code space
        char32_t cp = rng() % 4 == 0 ? rng() % 0x110000 : rng() % 0x3000;
        if ((cp >= 0xD800 && cp <= 0xDFFF) || !onig_knows(cp)) cp = U'x';
        append_utf8(cp, text);
      } else {
        text += fragments[rng() % fragments.size()];
      }
    }
    if (gpt2_pretokenize_ranges(text) != gpt2.find_all(text) && ++mismatches <= 5) {
      UNSCOPED_INFO("differs on " << nlohmann::json(text).dump());
    }
  }
  CHECK(mismatches == 0);
  const std::string long_text = std::string(5000, ' ') + "x" + std::string(3000, '\n') + std::string(2000, 'y');
  CHECK(gpt2_pretokenize_ranges(long_text) == gpt2.find_all(long_text));
}
