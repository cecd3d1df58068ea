// The pieces under the Precompiled normalizer: base64 (RFC 4648's test vectors), grapheme clusters (UAX #29
// examples) and SentencePiece's nmt_nfkc rules applied as the Rust library does, on a T5-style model trained here.
#include "tests/catch_compat.h"

#include "data/tokenizers/hf_json/base64.h"
#include "data/tokenizers/hf_json/precompiled_charsmap.h"
#include "data/tokenizers/spm_settings.h"
#include "data/unicode/unicode_props.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo;

TEST_CASE("base64 encodes RFC 4648's vectors and decodes them back, refusing malformed text", "[tokenizers]") {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},       {"fo", "Zm8="},
                                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == std::optional<std::string>(plain));
  }
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  CHECK(base64_decode(base64_encode(all_bytes)) == std::optional<std::string>(all_bytes));
  for (const char* bad : {"Zg=", "Zg=a", "Z===", "Zm9v*A==", "=Zm9", "Zg==Zg=="}) {
    INFO(bad);
    CHECK_FALSE(base64_decode(bad).has_value());
  }
}

TEST_CASE("grapheme clusters follow UAX #29: combining marks, emoji ZWJ sequences, flags, CR LF", "[unicode]") {
  using V = std::vector<size_t>;
  CHECK(unicode::grapheme_lengths("").empty());
  CHECK(unicode::grapheme_lengths("ab") == V{1, 1});
  CHECK(unicode::grapheme_lengths("e\xCC\x81x") == V{3, 1});                   // e + U+0301
  CHECK(unicode::grapheme_lengths("\r\n\n") == V{2, 1});                       // CR LF is one cluster
  CHECK(unicode::grapheme_lengths("\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7") == V{8});  // regional indicators F R
  // man ZWJ woman ZWJ girl: one cluster of 4 + 3 + 4 + 3 + 4 bytes
  CHECK(unicode::grapheme_lengths("\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7") ==
        V{18});
}

TEST_CASE("Precompiled: nmt_nfkc rules per grapheme cluster, the shortest matching rule first", "[tokenizers]") {
  const SpmSettings settings = read_spm_settings(test::train_hf_spm(test::SpmStyle::kT5));
  REQUIRE(settings.normalizer_name == "nmt_nfkc");
  const hf::PrecompiledCharsmap charsmap(settings.charsmap);
  CHECK(charsmap.normalize("plain text") == "plain text");
  CHECK(charsmap.normalize("\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3") == "ABC");  // full-width ＡＢＣ (NFKC)
  CHECK(charsmap.normalize("\xEF\xAC\x81ne") == "fine");                         // the ﬁ ligature
  CHECK(charsmap.normalize("\xE2\x91\xA0") == "1");                              // ①
  CHECK(charsmap.normalize("e\xCC\x81") == "\xC3\xA9");                          // e + U+0301 composes to é
  // ｅ + U+0301 (5 bytes, one cluster): the rule for ｅ alone is the shortest match and replaces the whole cluster,
  // as the Rust library does (sentencepiece's longest match gives é).
  CHECK(charsmap.normalize("\xEF\xBD\x85\xCC\x81") == "e");
  // ｶﾞ is one cluster of 6 bytes: too long to look up whole, so each character is mapped (ｶ -> カ, ﾞ -> U+3099).
  CHECK(charsmap.normalize("\xEF\xBD\xB6\xEF\xBE\x9E") == "\xE3\x82\xAB\xE3\x82\x99");
}

TEST_CASE("Precompiled refuses malformed charsmaps in one message", "[tokenizers]") {
  const auto error_of = [](const std::string& blob) {
    try {
      hf::PrecompiledCharsmap c(blob);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("ab") == "the charsmap is shorter than its 4-byte trie size");
  CHECK(error_of(std::string("\x08\x00\x00\x00\x01\x00\x00\x00", 8)) ==
        "the charsmap's trie size 8 does not fit its 8 bytes");
  CHECK(error_of(std::string("\x04\x00\x00\x00\x00\x00\x00\x00\xFF", 9)) == "the charsmap's replacements are not UTF-8");
}
