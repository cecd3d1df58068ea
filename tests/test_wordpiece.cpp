// Tests of data/wordpiece against hand-worked BertTokenizer behaviour on a small vocab.txt: cleaning, CJK, lower
// case and accents, punctuation, never-split tokens, ## continuation, [UNK], errors. Leaves out a real BERT vocab.
#include "tests/catch_compat.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "data/tokenizers/wordpiece.h"

using namespace lmzoo;

namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;
using Ids = std::vector<int64_t>;

struct VocabFile {  // a vocab.txt in a fresh temp directory, removed at the end
  fs::path dir;
  std::string path;
  explicit VocabFile(const std::string& text) {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("lmzoo_wordpiece_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(dir);
    path = (dir / "vocab.txt").string();
    std::ofstream(path, std::ios::binary) << text;
  }
  ~VocabFile() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// id = line number
const char* const kVocab =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"   // 0-4
    "hello\nworld\n,\n!\nun\n"                // 5-9
    "##aff\n##able\n\xE4\xB8\xAD\n\xE5\x9B\xBD\ncafe\n"  // 10-14: 中 国
    ".\n##s\nHello\na\n##a\n"                 // 15-19
    "Héllo\n";                                // 20

WordPieceTokenizer make(const VocabFile& v, bool lower = true, std::optional<bool> strip = std::nullopt) {
  WordPieceOptions o;
  o.do_lower_case = lower;
  o.strip_accents = strip;
  return WordPieceTokenizer::load(v.path, o);
}

}  // namespace

TEST_CASE("wordpiece lower case, accents and punctuation", "[wordpiece]") {
  VocabFile v(kVocab);
  const WordPieceTokenizer tok = make(v);
  CHECK(tok.vocab_size() == 21);
  CHECK(tok.unk_id() == 1);
  CHECK(tok.cls_id() == 2);
  CHECK(tok.sep_id() == 3);
  CHECK(tok.mask_id() == 4);
  CHECK(tok.pad_id() == 0);
  // lower: "héllo, world!"; accents: NFD gives e + U+0301 (Mn), dropped; , and ! split off.
  CHECK(tok.basic_tokenize("H\xC3\xA9llo, WORLD!") == Strings{"hello", ",", "world", "!"});
  CHECK(tok.encode("H\xC3\xA9llo, WORLD!") == Ids{5, 7, 6, 8});
  CHECK(tok.encode("H\xC3\xA9llo, WORLD!", true) == Ids{2, 5, 7, 6, 8, 3});
  // Already decomposed input strips the same way.
  CHECK(tok.basic_tokenize("He\xCC\x81llo") == Strings{"hello"});
  // ASCII symbols 33-47, 58-64, 91-96, 123-126 split even when not P* ($ is Sc, ^ is Sk); Unicode P* split
  // (¿ Po, « Pi, — Pd); other symbols (€ Sc, © So) stay inside the word.
  CHECK(tok.basic_tokenize("a$b^c\xE2\x82\xAC" "d\xC2\xA9" "e\xC2\xBF" "f\xE2\x80\x94g\xC2\xABh") ==
        Strings{"a", "$", "b", "^", "c\xE2\x82\xAC" "d\xC2\xA9" "e", "\xC2\xBF", "f", "\xE2\x80\x94", "g", "\xC2\xAB", "h"});
  CHECK(tok.basic_tokenize("...hello...") == Strings{".", ".", ".", "hello", ".", ".", "."});
  // İ lowers to i + U+0307 (Python's str.lower), then the mark goes; Σ lowers one character at a time (σ, not ς).
  CHECK(tok.basic_tokenize("\xC4\xB0stanbul") == Strings{"istanbul"});
  CHECK(tok.basic_tokenize("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3") == Strings{"\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83"});
  // Hangul syllables decompose (NFD) into conjoining jamo, which are letters and stay: 한 -> U+1112 U+1161 U+11AB.
  CHECK(tok.basic_tokenize("\xED\x95\x9C") == Strings{"\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"});
}

TEST_CASE("wordpiece cased and accent switches follow tokenizer_config", "[wordpiece]") {
  VocabFile v(kVocab);
  // do_lower_case false: strip_accents defaults to false too.
  CHECK(make(v, false).basic_tokenize("H\xC3\xA9llo, WORLD!") == Strings{"H\xC3\xA9llo", ",", "WORLD", "!"});
  CHECK(make(v, false).encode("H\xC3\xA9llo Hello") == Ids{20, 17});
  CHECK(make(v, true, false).basic_tokenize("H\xC3\xA9llo") == Strings{"h\xC3\xA9llo"});
  CHECK(make(v, false, true).basic_tokenize("H\xC3\xA9llo") == Strings{"Hello"});
  CHECK(make(v, true, false).basic_tokenize("\xC4\xB0") == Strings{"i\xCC\x87"});
}

TEST_CASE("wordpiece greedy longest match with continuation and unknowns", "[wordpiece]") {
  VocabFile v(kVocab);
  const WordPieceTokenizer tok = make(v);
  CHECK(tok.tokenize("unaffable") == Strings{"un", "##aff", "##able"});
  CHECK(tok.encode("unaffable cafes.") == Ids{9, 10, 11, 14, 16, 15});
  CHECK(tok.tokenize("unx") == Strings{"[UNK]"});  // "un" matches but "##x" does not: the whole word is [UNK]
  CHECK(tok.tokenize("xyz hello") == Strings{"[UNK]", "hello"});
  // 100 characters are split ("a" then 99 "##a"); 101 are [UNK] without trying.
  const Strings hundred = tok.tokenize(std::string(100, 'a'));
  REQUIRE(hundred.size() == 100);
  CHECK(hundred[0] == "a");
  CHECK(hundred[99] == "##a");
  CHECK(tok.tokenize(std::string(101, 'a')) == Strings{"[UNK]"});
  // The limit counts code points: 60 two-byte characters are 60, not 120.
  std::string accents;
  for (int i = 0; i < 60; ++i) accents += "\xC3\xA0";  // à -> a
  CHECK(tok.tokenize(accents).size() == 60);
  CHECK(tok.decode({9, 10, 11, 7, 5}) == "unaffable , hello");
  CHECK(tok.decode({10, 5}) == "##aff hello");  // a leading ## stays
  CHECK(tok.decode({}) == "");
}

TEST_CASE("wordpiece CJK, cleaning and never-split tokens", "[wordpiece]") {
  VocabFile v(kVocab);
  const WordPieceTokenizer tok = make(v);
  // Each CJK ideograph is a word; 人 is not in the vocabulary. Kana and Hangul are not spaced out.
  CHECK(tok.basic_tokenize("\xE4\xB8\xAD\xE5\x9B\xBD\xE4\xBA\xBA" "abc") ==
        Strings{"\xE4\xB8\xAD", "\xE5\x9B\xBD", "\xE4\xBA\xBA", "abc"});
  CHECK(tok.encode("\xE4\xB8\xAD\xE5\x9B\xBD\xE4\xBA\xBA") == Ids{12, 13, 1});
  CHECK(tok.basic_tokenize("\xE3\x81\x82\xE3\x81\x84") == Strings{"\xE3\x81\x82\xE3\x81\x84"});
  // NUL, U+FFFD, controls (Cc) and format characters (Cf: U+200B) vanish; tab, NBSP, U+3000 are spaces.
  CHECK(tok.basic_tokenize(std::string("hel\0lo", 6) + "\x01\xEF\xBF\xBD\xE2\x80\x8B wor\x7Fld") ==
        Strings{"hello", "world"});
  CHECK(tok.basic_tokenize("hello\tworld\xC2\xA0!\xE3\x80\x80hello\r\n") == Strings{"hello", "world", "!", "hello"});
  // U+2028 is not a BERT space (Zl) but Python's split() splits on it.
  CHECK(tok.basic_tokenize("a\xE2\x80\xA8" "b") == Strings{"a", "b"});
  // Special tokens stay whole and are not lower-cased, even without spaces around them.
  CHECK(tok.tokenize("[CLS] Hello [SEP]") == Strings{"[CLS]", "hello", "[SEP]"});
  CHECK(tok.encode("hello[MASK]world [PAD][UNK]") == Ids{5, 4, 6, 0, 1});
  CHECK(tok.basic_tokenize("[cls]") == Strings{"[", "cls", "]"});  // only the exact spelling is special
  CHECK(tok.basic_tokenize("") == Strings{});
  CHECK(tok.basic_tokenize(" \n\t ") == Strings{});
}

// The rule checked against the Rust tokenizers 0.22 BertNormalizer (npm @anush008/tokenizers): clean_text drops
// categories Cc, Cf, Co (and Cs), not Cn; its CJK range starts at 0x2B920 where Python's BERT has 0x2B820.
TEST_CASE("wordpiece removes every C* character but unassigned ones, as the Rust BertNormalizer", "[wordpiece]") {
  VocabFile v(kVocab);
  const WordPieceTokenizer tok = make(v);
  // Private use (Co) in the BMP and planes 15 and 16, a soft hyphen and a BOM (Cf), a DEL and NEL (Cc): all gone.
  CHECK(tok.encode("hel\uE000lo wor\U000F0000ld\U0010FFFD") == Ids{5, 6});
  CHECK(tok.encode("hel\u00ADlo\uFEFF \x7Fworld\u0085") == Ids{5, 6});
  CHECK(tok.encode("\uE000 \U000F0000\U0010FFFD") == Ids{});
  // U+0378 is unassigned (Cn): kept, so the word is unknown.
  CHECK(tok.encode("hel\u0378lo") == Ids{1});
  CHECK(tok.encode("hello \u0378") == Ids{5, 1});
  // CJK Extension B..F: U+2B820 (Extension E) is not spaced out by the Rust normalizer, U+2B920 is.
  CHECK(tok.basic_tokenize("a\U0002B820b") == Strings{"a\U0002B820b"});
  CHECK(tok.basic_tokenize("a\U0002B920b") == Strings{"a", "\U0002B920", "b"});
}

TEST_CASE("wordpiece errors are one clear exception", "[wordpiece]") {
  VocabFile v(kVocab);
  const WordPieceTokenizer tok = make(v);
  CHECK_THROWS_AS(tok.encode("bad \xC3"), HfTokenizerError);
  CHECK_THROWS_WITH(tok.encode("bad \xC3"), Catch::Contains("not UTF-8"));
  CHECK_THROWS_WITH(tok.decode({5, 21}), Catch::Contains("token id 21"));
  CHECK_THROWS_WITH(tok.id_to_piece(-2), Catch::Contains("token id -2"));
  CHECK(tok.piece_to_id("nope") == -1);
  CHECK_THROWS_WITH(WordPieceTokenizer::load((v.dir / "missing.txt").string()), Catch::Contains("missing.txt"));
  VocabFile no_unk("a\nb\n");
  CHECK_THROWS_WITH(WordPieceTokenizer::load(no_unk.path), Catch::Contains("no [UNK]"));
  VocabFile bad("[UNK]\nok\nbad\xFF\n");
  CHECK_THROWS_WITH(WordPieceTokenizer::load(bad.path), Catch::Contains("line 3") && Catch::Contains("not UTF-8"));
  VocabFile crlf("[UNK]\r\nhello\r\n");
  CHECK(WordPieceTokenizer::load(crlf.path).encode("hello") == Ids{1});
}
