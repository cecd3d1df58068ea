// End-to-end tests of `lmzoo tokenizer` and `lmzoo prepare`: round trips through stdin/stdout, the
// prepared stream and manifest, and one-line errors for bad input. Leaves out: the other subcommands.
#include "tests/catch_compat.h"

#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

}  // namespace

TEST_CASE("cli: tokenizer train, encode, decode round trip through stdin", "[cli]") {
  TempDir dir;
  write_text(dir / "a.txt", english_like_text(6000, 11));
  write_text(dir / "b.jsonl", "{\"text\": \"caf\\u00e9 na\\u00efve r\\u00e9sum\\u00e9\"}\n");
  write_text(dir / "c.txt", english_like_text(3000, 12));
  auto r = run_cli("tokenizer train --input " + q(dir / "a.txt") + "," + q(dir / "b.jsonl") + " --input " +
                   q(dir / "c.txt") + " --vocab-size 450 --model-type bpe --out " + q(dir / "tok"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());  // SentencePiece's log is silenced
  CHECK_THAT(r.out, Catch::Contains("vocab size") && Catch::Contains("tokenizer.model"));
  Tokenizer tok = Tokenizer::load(dir / "tok");
  CHECK(tok.encode("\xC3\xA9").size() == 1);  // é from the jsonl input is a piece

  const std::string text = "  The cat\tsat.\n\nOn the  mat \xE2\x98\x83 \xE2\x96\x81 \xF0\x9F\x98\x80\n  ";
  write_text(dir / "in.txt", text);
  r = run_cli("tokenizer encode --tokenizer " + q(dir / "tok") + " --ids", dir / "in.txt");
  REQUIRE(r.exit_code == 0);
  CHECK(count_lines(r.out) == 1);
  std::vector<std::string> ids;
  for (int id : tok.encode(text)) ids.push_back(std::to_string(id));
  CHECK(r.out == join(ids) + "\n");

  write_text(dir / "ids.txt", r.out);
  r = run_cli("tokenizer decode --tokenizer " + q(dir / "tok"), dir / "ids.txt");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == text);  // byte for byte, no extra newline

  r = run_cli("tokenizer encode --tokenizer " + q(dir / "tok"), dir / "in.txt");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == join(tok.encode_pieces(text)) + "\n");

  for (const char* help : {"tokenizer --help", "tokenizer train --help", "prepare --help"}) {
    r = run_cli(help);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("lmzoo"));
  }
}

TEST_CASE("cli: tokenizer encode/decode --jsonl: one text or id list per line, newlines inside", "[cli]") {
  const Fixture& f = tiny_corpus();
  const Tokenizer tok = Tokenizer::load(f.tokenizer_dir);
  TempDir dir;
  const std::vector<std::string> texts = {"The cat\tsat.\n\nOn the mat", "", "  two  spaces ",
                                          "caf\xC3\xA9 \xF0\x9F\x98\x80\r\n", std::string(9000, 'x') + "\n end"};
  std::string lines;
  for (const auto& text : texts) lines += nlohmann::json(text).dump() + "\n";
  write_text(dir / "in.jsonl", lines);
  auto r = run_cli("tokenizer encode --jsonl --tokenizer " + q(f.tokenizer_dir), dir / "in.jsonl");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(count_lines(r.out) == int(texts.size()));
  std::istringstream out(r.out);
  std::string expected_ids;
  for (const auto& text : texts) {
    std::string line;
    std::getline(out, line);
    const std::vector<int> ids = nlohmann::json::parse(line).get<std::vector<int>>();
    CHECK(ids == tok.encode(text));  // each line on its own, as one call of the library
    expected_ids += line + "\n";
  }

  write_text(dir / "ids.jsonl", expected_ids);
  r = run_cli("tokenizer decode --jsonl --tokenizer " + q(f.tokenizer_dir), dir / "ids.jsonl");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == lines);  // the texts back, byte for byte, one JSON string per line

  // Lines that are not what each mode reads: one stderr line naming the stdin line, exit 1.
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"encode", "\"ok\"\n42\n", "stdin line 2 is not a JSON string"},
      {"encode", "\"ok\"\nnot json\n", "stdin line 2 is not JSON"},
      {"encode", "\"\\udc00\"\n", "stdin line 1 is not JSON"},
      {"decode", "[1, 2]\n\"text\"\n", "stdin line 2 is not a JSON array of ids"},
      {"decode", "[1, 99999999]\n", "'99999999' on stdin line 1 is not a token id in [0, "},
      {"decode", "[1.5]\n", "'1.5' on stdin line 1 is not a token id"},
  };
  for (const auto& [action, input, message] : bad) {
    write_text(dir / "bad.jsonl", input);
    r = run_cli("tokenizer " + action + " --jsonl --tokenizer " + q(f.tokenizer_dir), dir / "bad.jsonl");
    INFO(action << " of " << input);
    CHECK(r.exit_code == 1);
    CHECK(count_lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(message));
  }
}

TEST_CASE("cli: char tokenizer accepts a huge vocab-size", "[cli]") {
  TempDir dir;
  write_text(dir / "a.txt", "abc abd\nxyz\n");
  auto r = run_cli("tokenizer train --input " + q(dir / "a.txt") + " --vocab-size 1000000 --model-type char --out " + q(dir / "tok"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("vocab size " + std::to_string(special::kNumSpecial + 256 + 8)));
}

TEST_CASE("cli: prepare writes the documents' token stream with the last val fraction held out", "[cli]") {
  const auto& f = tiny_corpus("bpe");
  Tokenizer tok = Tokenizer::load(f.tokenizer_dir);
  TempDir dir;
  std::vector<std::string> docs = {english_like_text(900, 21), english_like_text(400, 22)};
  write_text(dir / "docs.jsonl", nlohmann::json{{"text", docs[0]}}.dump() + "\n" + nlohmann::json{{"text", docs[1]}}.dump() + "\n");
  docs.push_back(english_like_text(1500, 23));
  write_text(dir / "z.txt", docs[2]);
  auto r = run_cli("prepare --tokenizer " + q(f.tokenizer_dir) + " --input " + q(dir / "docs.jsonl") + " --input " +
                   q(dir / "z.txt") + " --out " + q(dir / "data") + " --val-fraction 0.2 --threads 2");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(count_lines(r.out) == 1);
  CHECK_THAT(r.out, Catch::Contains("3 documents") && Catch::Contains("tokens/s"));

  std::vector<int64_t> expected;
  for (const auto& d : docs) {
    for (int id : tok.encode(d)) expected.push_back(id);
    expected.push_back(special::kEos);
  }
  const int64_t total = expected.size();
  auto m = read_manifest(dir / "data");
  CHECK(m["splits"]["val"]["tokens"] == std::llround(total * 0.2));
  CHECK(m["splits"]["train"]["tokens"] == total - std::llround(total * 0.2));
  CHECK(m["tokenizer_hash"] == tok.hash());
  TokenStream train = TokenStream::open(dir / "data", "train"), val = TokenStream::open(dir / "data", "val");
  std::vector<int64_t> stream(train.size() + val.size());
  train.read(0, train.size(), stream.data());
  val.read(0, val.size(), stream.data() + train.size());
  CHECK(stream == expected);
  CHECK(train.source_bytes() + val.source_bytes() == static_cast<int64_t>(docs[0].size() + docs[1].size() + docs[2].size()));
}

namespace {

// Runs each (arguments, expected text) case: non-zero exit, exactly one line on stderr.
void check_one_line_errors(const std::vector<std::pair<std::string, std::string>>& cases, const std::string& stdin_file) {
  for (const auto& [args, needle] : cases) {
    INFO("lmzoo " << args);
    auto r = run_cli(args, args.rfind("tokenizer decode", 0) == 0 ? stdin_file : "");
    CHECK(r.exit_code != 0);
    CHECK(count_lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::StartsWith("lmzoo ") && Catch::Contains(needle));
  }
}

}  // namespace

TEST_CASE("cli: bad tokenizer inputs give one line on stderr and a non-zero exit", "[cli]") {
  const auto& f = tiny_corpus("bpe");
  TempDir dir;
  write_text(dir / "a.txt", english_like_text(2000, 5));
  write_text(dir / "ids.txt", "5 6 x\n");
  const std::string train = "tokenizer train --out " + q(dir / "tok") + " ";
  check_one_line_errors({
      {train + "--input " + q(dir / "missing.txt"), "missing.txt"},
      {train + "--input " + q(dir / "a.txt") + " --vocab-size 10", "too small"},
      {train + "--input " + q(dir / "a.txt") + " --vocab-size abc", "abc"},
      {train + "--input " + q(dir / "a.txt") + " --model-type word", "word"},
      {train, "--input"},
      {"tokenizer", "missing action"},
      {"tokenizer frobnicate", "frobnicate"},
      {"tokenizer encode --tokenizer " + q(dir / "no_tok"), "tokenizer not found"},
      {"tokenizer decode --tokenizer " + q(f.tokenizer_dir), "'x'"},
  }, dir / "ids.txt");
}

TEST_CASE("cli: bad prepare inputs give one line on stderr and a non-zero exit", "[cli]") {
  const auto& f = tiny_corpus("bpe");
  TempDir dir;
  write_text(dir / "a.txt", english_like_text(2000, 5));
  write_text(dir / "bad.jsonl", "{\"text\": \"fine\"}\n{\"text\": \n");
  const std::string prepare = "prepare --tokenizer " + q(f.tokenizer_dir) + " --out " + q(dir / "data") + " ";
  check_one_line_errors({
      {prepare + "--input " + q(dir / "missing.txt"), "missing.txt"},
      {prepare + "--input " + q(dir / "bad.jsonl"), "bad.jsonl:2"},
      {prepare + "--input " + q(dir / "a.txt") + " --val-fraction 1.5", "--val-fraction"},
      {"prepare --tokenizer " + q(dir / "no_tok") + " --input " + q(dir / "a.txt") + " --out " + q(dir / "d"), "tokenizer not found"},
      {"prepare --input " + q(dir / "a.txt") + " --out " + q(dir / "d"), "--tokenizer"},
  }, "");
}
