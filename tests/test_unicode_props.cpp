// Tests of data/unicode_props and data/unicode_text: UTF-8 decoding, NFD with Hangul and canonical order, the Unicode
// versions of the Rust tokenizers library's tables by hand-picked code points, and a seeded sample checked against
// /usr/bin/python3's unicodedata (Debian 12: Unicode 14.0.0) on the code points it assigns, for the properties that
// follow current Unicode (letters, numbers, spaces, Cc/Cf, lower case); the older tables (BERT's categories, the
// normalisation's classes) are checked against the library itself (test_unicode_sweep.cpp). Leaves out: scripts.
#include "tests/catch_compat.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "data/unicode/unicode_props.h"
#include "data/unicode/unicode_text.h"

using namespace lmzoo;

namespace {

namespace fs = std::filesystem;

std::string hex_seq(const std::u32string& s) {
  std::ostringstream out;
  for (size_t i = 0; i < s.size(); ++i) out << (i ? "," : "") << std::hex << static_cast<uint32_t>(s[i]);
  return s.empty() ? "-" : out.str();
}

// One line per code point: cp L N White_Space isspace Cc|Cf Zs lower (hex, comma-separated).
std::string describe(char32_t cp) {
  using namespace unicode;
  std::u32string low;
  append_lower(cp, low);
  std::ostringstream out;
  out << std::hex << static_cast<uint32_t>(cp) << std::dec << ' ' << is_letter(cp) << is_number(cp)
      << is_white_space(cp) << is_python_space(cp) << is_control_or_format(cp) << is_space_separator(cp) << ' '
      << hex_seq(low);
  return out.str();
}

const char* const kPythonCheck = R"PY(
import sys, unicodedata
def hx(s):
    return ",".join("%x" % ord(c) for c in s) or "-"
def describe(cp):
    c = chr(cp)
    cat = unicodedata.category(c)
    ws = cat in ("Zs", "Zl", "Zp") or 9 <= cp <= 13 or cp == 0x85
    flags = [cat[0] == "L", cat[0] == "N", ws, c.isspace(), cat in ("Cc", "Cf"), cat == "Zs"]
    return "%x %s %s" % (cp, "".join(str(int(f)) for f in flags), hx(c.lower()))
print(unicodedata.unidata_version)
bad = compared = 0
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line.startswith("S ") and unicodedata.category(chr(int(line.split(" ")[0], 16))) == "Cn":
        continue  # unassigned in Python's (older) Unicode: lmzoo's tables may know it
    compared += 1
    if line.startswith("S "):
        _, src, got = line.split(" ")
        text = "".join(chr(int(h, 16)) for h in src.split(","))
        want = "S %s %s" % (src, hx(unicodedata.normalize("NFD", text)))
    else:
        want = describe(int(line.split(" ")[0], 16))
    if want != line:
        bad += 1
        if bad <= 5:
            print("mismatch: C++ %s / Python %s" % (line, want))
print("compared", compared)
print("mismatches", bad)
)PY";

}  // namespace

TEST_CASE("unicode utf8 decoding and encoding", "[unicode]") {
  const std::string text = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x99\x82";
  CHECK(utf8_to_code_points(text) == std::u32string{U'a', 0xE9, 0x4E2D, 0x1F642});
  CHECK(code_points_to_utf8(utf8_to_code_points(text)) == text);
  CHECK_THROWS_WITH(utf8_to_code_points("ab\xC0\xAF", "my.txt"), Catch::Contains("my.txt is not UTF-8"));
  CHECK_THROWS_AS(utf8_to_code_points("\xED\xA0\x80"), HfTokenizerError);  // a surrogate
}

TEST_CASE("unicode nfd decomposes fully and orders marks", "[unicode]") {
  CHECK(nfd(U"\u00E9") == U"e\u0301");
  CHECK(nfd(U"\u1E69") == U"s\u0323\u0307");            // ṩ: two levels of decomposition
  CHECK(nfd(U"\u1E0B\u0323") == U"d\u0323\u0307");       // ḋ + dot below: below (220) sorts before above (230)
  CHECK(nfd(U"\uD55C") == U"\u1112\u1161\u11AB");        // 한, by arithmetic
  CHECK(nfd(U"\uAC00") == U"\u1100\u1161");              // 가: no final consonant
  CHECK(nfd(U"abc") == U"abc");
}

TEST_CASE("unicode properties name their Unicode version", "[unicode]") {
  const std::string version = unicode::unicode_version();
  INFO("utf8proc's Unicode version: " << version);
  REQUIRE(!version.empty());
  CHECK(std::isdigit(static_cast<unsigned char>(version[0])));
  CHECK(version.find('.') != std::string::npos);
}

TEST_CASE("unicode properties of hand-picked code points", "[unicode]") {
  using namespace unicode;
  CHECK(is_letter(U'a'));
  CHECK(is_letter(0x4E2D));
  CHECK(!is_letter(U'1'));
  CHECK(is_number(0x00B2));   // ² is No
  CHECK(is_number(0x216B));   // Ⅻ is Nl
  CHECK(is_white_space(0x85));
  CHECK(is_white_space(0x3000));
  CHECK(!is_white_space(0x180E));  // Cf since Unicode 6.3
  CHECK(!is_white_space(0x200B));
  CHECK(is_python_space(0x1C));    // bidi class B: Python's isspace() is true, White_Space is not
  CHECK(!is_white_space(0x1C));
  CHECK(is_other_assigned(0xE000));    // Co
  CHECK(is_other_assigned(0xF0000));   // Co, plane 15
  CHECK(is_other_assigned(0x10FFFD));  // Co, plane 16
  CHECK(is_other_assigned(0xAD));      // Cf
  CHECK(!is_other_assigned(0x378));    // Cn
  CHECK(combining_class(0x301) == 230);
  CHECK(combining_class(0x323) == 220);
  std::u32string low;
  append_lower(0x130, low);  // İ: Rust's char::to_lowercase gives two code points
  append_lower(0x3A3, low);  // Σ: σ, never the final form (no context)
  append_lower(U'A', low);
  CHECK(low == U"i\u0307\u03C3a");
  CHECK(normalize("e\u0301", NormalForm::NFC) == "\u00E9");
  CHECK(normalize("\u00E9", NormalForm::NFD) == "e\u0301");
  CHECK(normalize("\uFB01\u00B2", NormalForm::NFKC) == "fi2");
  CHECK(normalize("\u00E9\u2460", NormalForm::NFKD) == "e\u03011");
  CHECK(normalize("\u1112\u1161\u11AB", NormalForm::NFC) == "\uD55C");  // Hangul jamo compose
  CHECK(normalize("abc", NormalForm::NFKD) == "abc");
}

// Each decision follows the Unicode version of the Rust tokenizers library's own source for it (data/unicode/unicode_tables.h),
// whatever utf8proc's version is: code points assigned or changed since show which one.
TEST_CASE("unicode properties follow the Rust library's tables", "[unicode]") {
  using namespace unicode;
  CHECK(is_letter(0x1C89));   // CYRILLIC CAPITAL LETTER TJE, new in Unicode 16.0: Oniguruma's \p{L} knows it
  CHECK(!is_letter(0x16EA0)); // BERIA ERFE CAPITAL LETTER ARKAB, new in 17.0: not yet in Oniguruma's
  CHECK(is_number(0x10D40));  // GARAY DIGIT ZERO, 16.0
  CHECK(!is_number(0x11DE0)); // a digit new in 17.0: Oniguruma's \p{N} does not know it ...
  CHECK(is_numeric(0x11DE0)); // ... Rust's char::is_numeric (the Digits pre-tokenizer) does
  std::u32string low;
  append_lower(0x1C89, low);   // Rust's to_lowercase: Unicode 17.0
  append_lower(0x16EA0, low);
  CHECK(low == U"\u1C8A\U00016EBB");
  CHECK(is_bert_punctuation(U'$'));       // ASCII punctuation, Sc
  CHECK(is_bert_punctuation(0x2E42));     // Ps since Unicode 8.0
  CHECK(!is_bert_punctuation(0x2E43));    // Pd since 9.0: not in unicode_categories' tables
  CHECK(is_other_assigned(0x600));        // Cf since 6.1
  CHECK(!is_other_assigned(0x8E2));       // Cf since 9.0
  CHECK(is_nonspacing_mark(0x8E3));       // Mn since 8.0 ...
  CHECK(!is_nonspacing_mark(0x8D4));      // ... not 9.0 in unicode_categories (BertNormalizer)
  CHECK(is_combining_mark(0x8D4));        // Mn since 9.0 in unicode-normalization-alignments (StripAccents) ...
  CHECK(is_combining_mark(0x903));        // ... which takes every mark, Mc too
  CHECK(!is_nonspacing_mark(0x903));
  CHECK(!is_combining_mark(0x7FD));       // Mn since 11.0
  CHECK(combining_class(0x8D4) == 230);   // unicode-normalization-alignments knows Unicode 9.0 ...
  CHECK(combining_class(0x7FD) == 0);     // ... not 11.0 (utf8proc: 220): a starter
  CHECK(nfd(U"\U00011938") == U"\U00011938");  // DIVES AKURU VOWEL SIGN O (13.0) is not decomposed
  CHECK(normalize("\U00011935\U00011930", NormalForm::NFC) == "\U00011935\U00011930");  // nor composed
  CHECK(normalize("\U0001E030", NormalForm::NFKC) == "\U0001E030");  // a compatibility mapping of 15.0
  // Composition stops at a mark the library takes for a starter: U+0301 does not reach the "a" past U+07FD.
  CHECK(normalize("a\u07FD\u0301", NormalForm::NFC) == "a\u07FD\u0301");
  CHECK(normalize("a\u0316\u0301", NormalForm::NFC) == "\u00E1\u0316");
}

TEST_CASE("unicode properties agree with python unicodedata on a seeded sample", "[unicode]") {
  if (std::system("/usr/bin/python3 -c 'import unicodedata' >/dev/null 2>&1") != 0) {
    WARN("skipped: no /usr/bin/python3");
    return;
  }
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("lmzoo_unicode_" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(dir);
  std::mt19937 rng(2024);
  {
    std::ofstream out(dir / "sample.txt");
    for (int i = 0; i < 6000; ++i) {
      char32_t cp = i % 3 == 0 ? rng() % 0x110000 : i % 3 == 1 ? rng() % 0x3400 : rng() % 0x30000;
      if (cp >= 0xD800 && cp <= 0xDFFF) cp -= 0x800;
      out << describe(cp) << "\n";
    }
    for (char32_t cp = 0; cp < 0x600; ++cp) out << describe(cp) << "\n";  // Latin, Greek, Cyrillic, marks whole
    const char32_t pool[] = {U'a', U'e', 0xE9, 0x1E0B, 0x0301, 0x0323, 0x0307, 0x0334, 0x05B0, 0x0F71, 0xD55C, 0x1EA0};
    for (int i = 0; i < 500; ++i) {  // strings: canonical ordering across characters
      std::u32string s;
      for (uint32_t k = 0, n = 1 + rng() % 6; k < n; ++k) s.push_back(pool[rng() % (sizeof(pool) / sizeof(pool[0]))]);
      out << "S " << hex_seq(s) << " " << hex_seq(nfd(s)) << "\n";
    }
  }
  std::ofstream(dir / "check.py") << kPythonCheck;
  const std::string cmd = "/usr/bin/python3 " + (dir / "check.py").string() + " " + (dir / "sample.txt").string() +
                          " > " + (dir / "result.txt").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(dir / "result.txt");
  std::stringstream result;
  result << in.rdbuf();
  std::error_code ec;
  fs::remove_all(dir, ec);
  REQUIRE(rc == 0);
  const std::string version = result.str().substr(0, result.str().find('\n'));
  // Code points unassigned in Python's Unicode are skipped, so an older Python still checks the rest.
  INFO("Python's Unicode " << version << ", utf8proc's " << unicode::unicode_version() << "\n" << result.str());
  CHECK(result.str().find("mismatches 0\n") != std::string::npos);
}
