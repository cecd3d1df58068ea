// Tests of exact cutting (data/tokenizers/text_cut.h, data/tokenizers/spm_cuts.h, data/tokenizers/gpt2_cuts.h, for_each_chunk with a cutter):
// every cut a rule allows leaves the ids of the whole text, checked piece by piece on seeded strings, and
// encode_long and prepare's token stream equal one encode() of the whole document (and sentencepiece's own
// whole-text ids) on documents far longer than every cut size. Leaves out: the tokenizers' own ids.
#include "tests/catch_compat.h"

#include <filesystem>
#include <random>

#include "data/corpus/corpus.h"
#include "data/corpus/shards.h"
#include "data/tokenizers/gpt2_bpe.h"
#include "data/tokenizers/gpt2_cuts.h"
#include "data/tokenizers/sentencepiece_bridge.h"
#include "data/tokenizers/spm_cuts.h"
#include "data/tokenizers/spm_settings.h"
#include "data/tokenizers/tokenizer.h"
#include "data/unicode/unicode_text.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo;
using lmzoo::test::TempDir;
using lmzoo::test::write_text;
namespace fs = std::filesystem;

namespace {

const std::string kMarker = "\xE2\x96\x81";  // U+2581

// A seeded document of about N bytes made to meet every cut: prose, long space-free runs (one letter, random
// letters and digits), runs of spaces and newlines, "\n\n" and tabs, apostrophes, accents, CJK, emoji and
// (with MARKER) a literal U+2581.
std::string hard_document(size_t n, uint32_t seed, bool marker) {
  std::mt19937 rng(seed);
  const std::string prose = test::english_like_text(n, seed);
  const char* bits[] = {"\n\n", "\n\n\n", " \n\n ", "\t", " \t ", "'s", "'ll ", "it's", "x'", "caf\xC3\xA9 ",
                        "\xE6\x97\xA5\xE6\x9C\xAC ", "\xF0\x9F\x98\x80", "\xE3\x80\x80", "e\xCC\x81 ", "42 ", "3.14",
                        "a,b", "--", "  ", "\n \n"};
  std::string doc;
  size_t at = 0;
  while (at < prose.size()) {
    const size_t take = 20 + rng() % 400;
    doc += prose.substr(at, take);
    at += take;
    switch (rng() % 8) {
      case 0: doc += std::string(1 + rng() % 6000, 'x'); break;
      case 1: {
        const size_t len = 1 + rng() % 3000;
        for (size_t i = 0; i < len; ++i) doc += static_cast<char>(rng() % 3 ? 'a' + rng() % 26 : '0' + rng() % 10);
        break;
      }
      case 2: doc += std::string(1 + rng() % 40, ' '); break;
      case 3: doc += std::string(1 + rng() % 5, '\n'); break;
      case 4: doc += marker ? kMarker : std::string("~"); break;
      default: doc += bits[rng() % (sizeof(bits) / sizeof(bits[0]))];
    }
  }
  return doc;
}

// Short seeded strings over characters that meet every case of the rules.
std::string rule_string(std::mt19937& rng) {
  const char* chars[] = {"a", "b", "s", "l", "1", "2", ".", ",", "'", " ", " ", " ", "\n", "\t", "\xC3\xA9",
                         "\xE3\x80\x80", "\xC2\xA0", "<", ">", "|", "x"};
  std::string s;
  const size_t len = 1 + rng() % 12;
  for (size_t i = 0; i < len; ++i) s += chars[rng() % (sizeof(chars) / sizeof(chars[0]))];
  return s;
}

std::vector<int> spm_whole(const SpmProcessor& sp, const std::string& text) {
  std::vector<int> ids;
  REQUIRE(sp.encode(text, &ids).empty());
  return ids;
}

std::unique_ptr<SpmProcessor> processor(const std::string& proto) {
  auto sp = new_spm_processor();
  REQUIRE(sp->load_serialized(proto).empty());
  return sp;
}

std::vector<int64_t> read_stream(const std::string& dir) {
  std::vector<int64_t> out;
  for (const char* split : {"train", "val"}) {
    TokenStream s = TokenStream::open(dir, split);
    std::vector<int64_t> part(s.size());
    s.read(0, s.size(), part.data());
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

// prepare_data of DOC (as a .txt file and as one .jsonl document) with chunk_bytes CHUNK gives encode(DOC) + eos.
void check_prepare(const std::string& tokenizer_dir, const std::string& doc, size_t chunk) {
  Tokenizer tok = Tokenizer::load(tokenizer_dir);
  std::vector<int64_t> expected;
  for (int id : tok.encode(doc)) expected.push_back(id);
  expected.push_back(tok.special().eos);
  TempDir dir;
  write_text(dir / "doc.txt", doc);
  write_text(dir / "doc.jsonl", nlohmann::json{{"text", doc}}.dump() + "\n");
  for (const char* input : {"doc.txt", "doc.jsonl"}) {
    CAPTURE(input, chunk);
    PrepareOptions o;
    o.tokenizer = tokenizer_dir;
    o.inputs = {dir / input};
    o.out_dir = dir / (std::string("data_") + input);
    o.threads = 2;
    o.chunk_bytes = chunk;
    prepare_data(o);
    const std::vector<int64_t> stream = read_stream(o.out_dir);
    size_t first_diff = 0;
    while (first_diff < std::min(stream.size(), expected.size()) && stream[first_diff] == expected[first_diff]) {
      ++first_diff;
    }
    CAPTURE(first_diff, stream.size(), expected.size());
    CHECK(stream == expected);
  }
}

// encode_long at several piece sizes equals one encode() call.
void check_encode_long(const Tokenizer& tok, const std::string& doc) {
  const std::vector<int> whole = tok.encode(doc);
  for (size_t max_bytes : {16, 64, 300, 4096}) {
    CAPTURE(max_bytes);
    CHECK(tok.encode_long(doc, max_bytes) == whole);
  }
}

// Every cut the SPM backend allows in seeded short strings leaves sentencepiece's ids of the whole string.
void check_spm_rule_cuts(const std::string& proto, const Tokenizer& tok, bool marker) {
  auto sp = processor(proto);
  const CutAt rule = tok.cutter().rule;
  std::mt19937 rng(5);
  int cuts = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = rule_string(rng);
    if (marker && i % 3 == 0) s += kMarker + rule_string(rng);
    const std::vector<int> whole = spm_whole(*sp, s);
    for (size_t pos = 1; pos < s.size(); ++pos) {
      const TextCut cut = rule(s, pos);
      if (!cut.found()) continue;
      ++cuts;
      std::vector<int> parts = spm_whole(*sp, s.substr(0, cut.end));
      const std::vector<int> right = spm_whole(*sp, s.substr(cut.next));
      parts.insert(parts.end(), right.begin(), right.end());
      CAPTURE(s, pos);
      REQUIRE(parts == whole);
    }
  }
  CHECK(cuts > 500);
}

}  // namespace

TEST_CASE("spm settings are read from the model proto", "[chunking]") {
  const SpmSettings llama = read_spm_settings(test::train_llama_bpe_spm());
  CHECK(llama.model_type == SpmSettings::ModelType::kBpe);
  CHECK(llama.add_dummy_prefix);
  CHECK_FALSE(llama.remove_extra_whitespaces);
  CHECK_FALSE(llama.has_charsmap);
  CHECK(llama.normalizer_name == "identity");
  const SpmSettings t5 = read_spm_settings(test::train_hf_spm(test::SpmStyle::kT5));
  CHECK(t5.model_type == SpmSettings::ModelType::kUnigram);
  CHECK(t5.remove_extra_whitespaces);
  CHECK(t5.has_charsmap);
  CHECK(t5.normalizer_name == "nmt_nfkc");
  const SpmSettings native = read_spm_settings(read_file_bytes(test::tiny_corpus("bpe").tokenizer_dir + "/tokenizer.model"));
  CHECK_FALSE(native.add_dummy_prefix);
  CHECK_FALSE(native.remove_extra_whitespaces);
  CHECK_THROWS_WITH(read_spm_settings("\x0a\xff"), Catch::Contains("malformed"));
}

TEST_CASE("gpt2 cuts: the pattern's matches of the two sides are the whole text's", "[chunking]") {
  CHECK(gpt2_cut_at("ab cd", 2).found());          // before a space after a non-space
  CHECK_FALSE(gpt2_cut_at("ab  cd", 3).found());   // between two spaces
  CHECK_FALSE(gpt2_cut_at("a\n\nb", 2).found());   // inside "\n\n"
  CHECK_FALSE(gpt2_cut_at("a\n\n\nb", 3).found());
  CHECK(gpt2_cut_at("a\nb", 2).found());           // a lone newline between words
  CHECK_FALSE(gpt2_cut_at("it's", 3).found());     // inside a contraction
  CHECK(gpt2_cut_at("it's", 2).found());
  CHECK(gpt2_cut_at("ab12", 2).found());           // letters | digits
  CHECK_FALSE(gpt2_cut_at(std::string(5000, 'x'), 4097).found());
  CHECK_FALSE(gpt2_cut_at("a\xC3\xA9", 2).found());  // inside a character

  std::mt19937 rng(3);
  int cuts = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string s = rule_string(rng) + rule_string(rng);
    const std::vector<std::string> whole = gpt2_pretokenize(s);
    for (size_t pos = 1; pos < s.size(); ++pos) {
      const TextCut cut = gpt2_cut_at(s, pos);
      if (!cut.found()) continue;
      ++cuts;
      std::vector<std::string> parts = gpt2_pretokenize(s.substr(0, cut.end));
      const std::vector<std::string> right = gpt2_pretokenize(s.substr(cut.next));
      parts.insert(parts.end(), right.begin(), right.end());
      CAPTURE(s, pos);
      REQUIRE(parts == whole);
    }
  }
  CHECK(cuts > 10000);
}

TEST_CASE("spm cuts: Llama-style BPE cuts before a space and drops it; every allowed cut is exact", "[chunking]") {
  const std::string proto = test::train_llama_bpe_spm();
  Tokenizer tok = Tokenizer::from_serialized(proto);
  const CutAt rule = tok.cutter().rule;
  TextCut cut = rule("ab cd", 2);
  CHECK((cut.end == 2 && cut.next == 3));
  CHECK_FALSE(rule("ab  cd", 3).found());
  CHECK_FALSE(rule("ab ", 2).found());     // the dummy prefix of "" would be missing
  CHECK_FALSE(rule("a\nb", 2).found());    // the dummy prefix would add a "▁"
  check_spm_rule_cuts(proto, tok, true);
}

TEST_CASE("spm cuts: lmzoo's own models cut after newlines and before spaces, unigram only whole", "[chunking]") {
  const std::string bpe = read_file_bytes(test::tiny_corpus("bpe").tokenizer_dir + "/tokenizer.model");
  Tokenizer tok = Tokenizer::from_serialized(bpe);
  TextCut cut = tok.cutter().rule("ab cd", 2);
  CHECK((cut.end == 2 && cut.next == 2));
  CHECK(tok.cutter().rule("a\nb", 2).found());
  check_spm_rule_cuts(bpe, tok, false);
  Tokenizer unigram = Tokenizer::load(test::tiny_corpus("unigram").tokenizer_dir);
  CHECK_FALSE(unigram.cutter().rule("ab cd", 2).found());
  CHECK(unigram.cutter().forced("ab cd", 2).found());
  Tokenizer t5 = Tokenizer::from_serialized(test::train_hf_spm(test::SpmStyle::kT5));
  CHECK_FALSE(t5.cutter().rule("ab cd", 2).found());
}

TEST_CASE("spm: a literal U+2581 gives sentencepiece's ids and decode for T5 and Llama models", "[chunking]") {
  for (const std::string& proto : {test::train_llama_bpe_spm(), test::train_hf_spm(test::SpmStyle::kT5)}) {
    Tokenizer tok = Tokenizer::from_serialized(proto);
    auto sp = processor(proto);
    for (const std::string& text : {"a" + kMarker + "b", kMarker, "a " + kMarker + kMarker + "b", kMarker + "a"}) {
      CAPTURE(text);
      const std::vector<int> ids = spm_whole(*sp, text);
      CHECK(tok.encode(text) == ids);
      std::string decoded;
      REQUIRE(sp->decode(ids, &decoded).empty());
      CHECK(tok.decode(tok.encode(text)) == decoded);
    }
  }
  // lmzoo's own models keep their exact round trip: the marker's three bytes.
  Tokenizer native = Tokenizer::load(test::tiny_corpus("bpe").tokenizer_dir);
  CHECK(native.decode(native.encode("a" + kMarker + "b")) == "a" + kMarker + "b");
}

TEST_CASE("spm encode_long equals sentencepiece's whole-text ids on long hard documents", "[chunking]") {
  struct Model {
    const char* name;
    std::string proto;
    bool marker;  // lmzoo's own models encode a literal U+2581 as bytes (exact round trip), not as sentencepiece
  };
  const std::vector<Model> models = {
      {"llama-bpe", test::train_llama_bpe_spm(), true},
      {"t5-unigram", test::train_hf_spm(test::SpmStyle::kT5), true},
      {"llama-unigram", test::train_hf_spm(test::SpmStyle::kLlama), true},
      {"native-bpe", read_file_bytes(test::tiny_corpus("bpe").tokenizer_dir + "/tokenizer.model"), false},
      {"native-unigram", read_file_bytes(test::tiny_corpus("unigram").tokenizer_dir + "/tokenizer.model"), false},
  };
  for (const Model& m : models) {
    CAPTURE(m.name);
    Tokenizer tok = Tokenizer::from_serialized(m.proto);
    auto sp = processor(m.proto);
    const std::string doc = hard_document(150000, 17, m.marker);
    const std::vector<int> whole = spm_whole(*sp, doc);
    CHECK(tok.encode(doc) == whole);
    check_encode_long(tok, doc);
  }
}

TEST_CASE("prepare's token stream equals encoding each whole document (SentencePiece kinds)", "[chunking]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> models = {
      {"llama-bpe", test::train_llama_bpe_spm()},
      {"t5-unigram", test::train_hf_spm(test::SpmStyle::kT5)},
      {"native-bpe", read_file_bytes(test::tiny_corpus("bpe").tokenizer_dir + "/tokenizer.model")},
  };
  for (const auto& [name, proto] : models) {
    CAPTURE(name);
    const fs::path model = dir / (name + ".model");
    write_text(model, proto);
    const std::string doc = hard_document(60000, 23, name != "native-bpe");
    for (size_t chunk : {1000, 4096}) check_prepare(model.string(), doc, chunk);
  }
}

TEST_CASE("gpt2 encode_long and prepare equal the whole text: \\n\\n at cuts stays one token", "[chunking]") {
  const std::string dir = test::gpt2_vocab_dir();
  if (dir.empty()) {
    WARN("skipped: no GPT-2 vocabulary (run tools/fetch_gpt2_vocab.sh or set LMZOO_GPT2_ENCODER_DIR)");
    return;
  }
  Tokenizer tok = Tokenizer::load(dir);
  // "\n\n" across what used to be a cut: the whole text gives 628 once.
  const std::string text = std::string(1000, 'a') + "\n\n\n" + std::string(1000, 'b');
  CHECK(tok.encode_long(text, 1001) == tok.encode(text));
  const std::string doc = hard_document(120000, 29, true);
  check_encode_long(tok, doc);
  for (size_t chunk : {1000, 4096}) check_prepare(dir, doc, chunk);
}

TEST_CASE("wordpiece encode_long and prepare equal the whole text", "[chunking]") {
  TempDir dir;
  test::write_bert_vocab(dir.path, false);
  Tokenizer tok = Tokenizer::load(dir.path.string());
  const std::string doc = hard_document(60000, 31, true);
  check_encode_long(tok, doc);
  check_prepare(dir.path.string(), doc, 1000);
}

TEST_CASE("for_each_chunk: no allowed cut keeps the document whole up to the buffer limit, then forces one", "[chunking]") {
  TempDir dir;
  write_text(dir / "a.txt", std::string(5000, 'x') + " tail");
  const TextCutter never{[](std::string_view, size_t) { return TextCut{}; },
                         [](std::string_view, size_t) { return TextCut{}; }};
  std::vector<std::string> chunks;
  for_each_chunk({dir / "a.txt"}, 100, [&](const std::string& t, bool) { chunks.push_back(t); }, never, 1 << 20);
  CHECK(chunks.size() == 1);
  chunks.clear();
  for_each_chunk({dir / "a.txt"}, 100, [&](const std::string& t, bool) { chunks.push_back(t); }, never, 1000);
  CHECK(chunks.size() > 1);
  std::string joined;
  for (const auto& c : chunks) joined += c;
  CHECK(joined == std::string(5000, 'x') + " tail");
}
