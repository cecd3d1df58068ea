// Tests of data/tokenizer: fixed special ids, exact byte round trip, char vocab sizing, hashing, errors.
// Leaves out: the CLI (test_cli_data.cpp) and large-corpus speed.
#include "tests/catch_compat.h"

#include <set>

#include "data/tokenizers/tokenizer.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo;
using lmzoo::test::TempDir;
using lmzoo::test::write_text;

namespace {

const std::vector<std::string> kTrickyTexts = {
    "",
    " ",
    "  two leading spaces",
    "trailing spaces   ",
    "a\n\nb\tc\r\nd\n",
    "\t\ttabs\tand\n\n\nnewlines\n",
    "multiple     spaces   inside    words ",
    "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 and CJK \xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97 \xE6\x97\xA5\xE6\x9C\xAC",
    "never seen: \xE2\x88\xAE \xCE\xA9 \xC3\x9F \xF0\x9D\x94\x98 \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D",
    "literal \xE2\x96\x81 marker \xE2\x96\x81\xE2\x96\x81x",
    "[MASK] <s> </s> <pad> <unk> <extra_id_5> [CLS][SEP]",
    "digits 1234567890 and 3.14159",
    "control \x01\x7f chars",
    std::string("nul\0byte", 8),
    "The cat sat on the mat. The dog ran into the garden!\n\nA new day.",
};

void check_round_trip(const Tokenizer& tok) {
  for (const auto& text : kTrickyTexts) {
    INFO("text: '" << text << "'");
    std::vector<int> ids = tok.encode(text);
    CHECK(tok.decode(ids) == text);
    int64_t bytes = 0;
    for (int id : ids) bytes += tok.piece_bytes(id);
    CHECK(bytes == static_cast<int64_t>(text.size()));
    CHECK(tok.encode_pieces(text).size() == ids.size());
  }
}

// encode_long cuts the text into pieces; the ids must equal one encode() call.
void check_encode_long(const Tokenizer& tok) {
  std::string text = lmzoo::test::english_like_text(6000, 9);
  for (const auto& t : kTrickyTexts) text += t + " ";
  text += std::string(100, 'x') + "  end";  // a word longer than the piece size: cut inside it
  CHECK(tok.decode(tok.encode_long(text, 64)) == text);
  text.resize(text.size() - 106);
  CHECK(tok.encode_long(text, 64) == tok.encode(text));
  CHECK(tok.encode_long(text) == tok.encode(text));
}

void check_special_ids(const Tokenizer& tok) {
  CHECK(tok.id_to_piece(special::kPad) == "<pad>");
  CHECK(tok.id_to_piece(special::kUnk) == "<unk>");
  CHECK(tok.id_to_piece(special::kBos) == "<s>");
  CHECK(tok.id_to_piece(special::kEos) == "</s>");
  CHECK(tok.piece_to_id("[MASK]") == 4);
  CHECK(tok.piece_to_id("[CLS]") == 5);
  CHECK(tok.piece_to_id("[SEP]") == 6);
  CHECK(tok.piece_to_id("<extra_id_0>") == 7);
  CHECK(tok.piece_to_id("<extra_id_99>") == 106);
  CHECK(tok.encode("[MASK]") == std::vector<int>{4});
  CHECK(tok.encode("<extra_id_3>") == std::vector<int>{10});
}

std::string train_error(const TokenizerTrainOptions& options) {
  try {
    Tokenizer::train(options);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bpe tokenizer: fixed special ids and exact round trip", "[tokenizer]") {
  const auto& f = lmzoo::test::tiny_corpus("bpe");
  Tokenizer tok = Tokenizer::load(f.tokenizer_dir);
  CHECK(tok.vocab_size() > special::kNumSpecial + 256);
  CHECK(tok.vocab_size() <= 512);
  check_special_ids(tok);
  check_round_trip(tok);
  check_encode_long(tok);
  // Learned merges: common words are single pieces, word starts carry the space marker.
  std::vector<int> ids = tok.encode("walked the");
  CHECK(ids.size() < 10);
  CHECK(tok.is_word_start(ids.back()));
  CHECK(tok.id_to_piece(ids.back()) == "\xE2\x96\x81the");
  CHECK_FALSE(tok.is_word_start(tok.encode("the")[0]));
  CHECK_THROWS_AS(tok.decode({tok.vocab_size()}), std::runtime_error);
}

TEST_CASE("unigram tokenizer: fixed special ids and exact round trip", "[tokenizer]") {
  TempDir dir;
  write_text(dir / "a.txt", lmzoo::test::english_like_text(20000, 7));
  TokenizerTrainOptions o;
  o.inputs = {dir / "a.txt"};
  o.model_type = TokenizerType::kUnigram;
  o.vocab_size = 450;
  o.out_dir = dir / "tok";
  Tokenizer::train(o);
  Tokenizer tok = Tokenizer::load(dir / "tok");
  CHECK(tok.vocab_size() <= 450);
  check_special_ids(tok);
  check_round_trip(tok);
  check_encode_long(tok);
}

TEST_CASE("char tokenizer: vocab-size is an upper bound, size = specials + bytes + characters", "[tokenizer]") {
  TempDir dir;
  const std::string text = "h\xC3\xA9llo w\xC3\xB6rld \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80\nabc  cab\n";
  write_text(dir / "a.txt", text);
  TokenizerTrainOptions o;
  o.inputs = {dir / "a.txt"};
  o.model_type = TokenizerType::kChar;
  o.vocab_size = 1000000;
  o.out_dir = dir / "tok";
  Tokenizer::train(o);
  Tokenizer tok = Tokenizer::load(dir / "tok");

  std::set<std::string> chars;  // distinct code points, newline excluded
  for (size_t i = 0; i < text.size();) {
    size_t len = (text[i] & 0x80) == 0 ? 1 : (text[i] & 0xE0) == 0xC0 ? 2 : (text[i] & 0xF0) == 0xE0 ? 3 : 4;
    if (text[i] != '\n') chars.insert(text.substr(i, len));
    i += len;
  }
  CHECK(tok.vocab_size() == special::kNumSpecial + 256 + static_cast<int>(chars.size()));
  CHECK(tok.encode("\xE4\xB8\xAD").size() == 1);  // seen CJK character: one piece, not three bytes
  CHECK(tok.encode("\xE6\x97\xA5").size() == 3);  // unseen: byte fallback
  CHECK(tok.encode("cab ").size() == 4);
  check_special_ids(tok);
  check_round_trip(tok);
  check_encode_long(tok);
}

TEST_CASE("tokenizer hash is a stable FNV-1a digest of the model", "[tokenizer]") {
  const auto& f = lmzoo::test::tiny_corpus("bpe");
  Tokenizer a = Tokenizer::load(f.tokenizer_dir);
  Tokenizer b = Tokenizer::load(f.tokenizer_dir + "/tokenizer.model");
  Tokenizer c = Tokenizer::from_serialized(a.serialized());
  REQUIRE(a.hash().size() == 16);
  CHECK(a.hash().find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a.hash() == b.hash());
  CHECK(a.hash() == c.hash());
  CHECK(a.hash() == Tokenizer::load(f.data_dir).hash());  // prepare copies the model
  // Retraining on the same input reproduces the same model.
  TempDir dir;
  TokenizerTrainOptions o;
  o.inputs = {f.text_file};
  o.vocab_size = 512;
  o.out_dir = dir / "tok";
  Tokenizer::train(o);
  CHECK(Tokenizer::load(dir / "tok").hash() == a.hash());
  o.model_type = TokenizerType::kChar;
  Tokenizer::train(o);
  CHECK(Tokenizer::load(dir / "tok").hash() != a.hash());
}

TEST_CASE("tokenizer training reads jsonl and directories, samples lines", "[tokenizer]") {
  TempDir dir;
  std::filesystem::create_directories(dir / "corpus/sub");
  write_text(dir / "corpus/sub/b.jsonl", "{\"text\": \"zebra zebra quagga\"}\n{\"text\": \"quagga zebra\"}\n");
  write_text(dir / "corpus/a.txt", lmzoo::test::english_like_text(3000, 3));
  write_text(dir / "corpus/skip.md", "\xE2\x98\x83\xE2\x98\x83\xE2\x98\x83");  // not read: snowmen would become pieces
  TokenizerTrainOptions o;
  o.inputs = {dir / "corpus"};
  o.model_type = TokenizerType::kChar;
  o.vocab_size = 100000;
  o.out_dir = dir / "tok";
  Tokenizer::train(o);
  Tokenizer tok = Tokenizer::load(dir / "tok");
  CHECK(tok.encode("z").size() == 1);
  CHECK(tok.encode("q").size() == 1);
  CHECK(tok.encode("\xE2\x98\x83").size() == 3);

  o.max_sentences = 3;  // sampling keeps few lines: a smaller char set
  Tokenizer::train(o);
  CHECK(Tokenizer::load(dir / "tok").vocab_size() < tok.vocab_size());
}

TEST_CASE("tokenizer errors are clear one-line messages", "[tokenizer]") {
  TempDir dir;
  write_text(dir / "a.txt", lmzoo::test::english_like_text(2000));
  write_text(dir / "empty.txt", "");
  TokenizerTrainOptions o;
  o.inputs = {dir / "a.txt"};
  o.vocab_size = 400;
  o.out_dir = dir / "tok";

  auto missing = o;
  missing.inputs = {dir / "nope.txt"};
  CHECK_THAT(train_error(missing), Catch::Contains("input not found") && Catch::Contains("nope.txt"));
  auto empty = o;
  empty.inputs = {dir / "empty.txt"};
  CHECK_THAT(train_error(empty), Catch::Contains("no text"));
  auto small = o;
  small.vocab_size = 100;
  CHECK_THAT(train_error(small), Catch::Contains("vocab size 100 is too small"));
  auto too_few_for_chars = o;
  too_few_for_chars.vocab_size = 366;  // fewer slots than distinct characters
  CHECK_THAT(train_error(too_few_for_chars), Catch::Contains("too small"));
  // A model type outside the table cannot be named: the one way in is parsing its name.
  CHECK_THROWS_WITH(parse_enum<TokenizerType>("word"), "model type 'word' is not one of bpe|unigram|char");
  for (const auto& msg : {train_error(missing), train_error(small), train_error(too_few_for_chars)}) {
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK_THROWS_WITH(Tokenizer::load(dir / "nowhere"), Catch::Contains("tokenizer not found"));
  write_text(dir / "bad.model", "not a model");
  CHECK_THROWS_WITH(Tokenizer::load(dir / "bad.model"), Catch::Contains("invalid tokenizer model"));
}
