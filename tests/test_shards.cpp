// Tests of data/shards and data/corpus: shard round trips (uint16/uint32), manifest, errors, prepare_data.
// Leaves out: the prepare CLI (test_cli_data.cpp).
#include "tests/catch_compat.h"

#include <filesystem>
#include <random>

#include "data/corpus/corpus.h"
#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo;
using lmzoo::test::TempDir;
using lmzoo::test::write_text;
namespace fs = std::filesystem;

namespace {

std::vector<int> random_tokens(size_t n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> v(n);
  for (auto& t : v) t = static_cast<int>(rng() % vocab);
  v[0] = vocab - 1;  // the largest id must survive
  return v;
}

// Writes TOKENS as split "train" of DIR in uneven blocks and a manifest; returns the split entry.
nlohmann::json write_split(const std::string& dir, const std::vector<int>& tokens, int vocab, int64_t shard_tokens) {
  ShardWriter writer(dir, "train", vocab, shard_tokens);
  for (size_t i = 0; i < tokens.size(); i += 333) {
    writer.write(tokens.data() + i, std::min<size_t>(333, tokens.size() - i));
  }
  nlohmann::json split = writer.finish();
  split["source_bytes"] = 12345;
  write_manifest(dir, {{"format_version", 1}, {"vocab_size", vocab}, {"dtype", shard_dtype(vocab)},
                       {"splits", {{"train", split}}}});
  return split;
}

std::vector<int64_t> read_all(const TokenStream& s) {
  std::vector<int64_t> out(s.size());
  s.read(0, s.size(), out.data());
  return out;
}

std::string open_error(const std::string& dir, const std::string& split) {
  try {
    TokenStream::open(dir, split);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// Collects all chunks of INPUTS as (documents, concatenated text, largest chunk).
struct Chunks {
  std::vector<std::string> docs{""};
  size_t largest = 0;
};
Chunks collect(const std::vector<std::string>& inputs, size_t chunk_bytes) {
  Chunks c;
  for_each_chunk(inputs, chunk_bytes, [&](const std::string& text, bool end) {
    c.docs.back() += text;
    c.largest = std::max(c.largest, text.size());
    if (end) c.docs.emplace_back();
  });
  c.docs.pop_back();
  return c;
}

}  // namespace

TEST_CASE("shards round trip as uint16 and uint32 across shard boundaries", "[shards]") {
  for (int vocab : {500, 65536, 70000}) {
    TempDir dir;
    const auto tokens = random_tokens(2500, vocab, vocab);
    auto split = write_split(dir.path.string(), tokens, vocab, 1000);
    const int elem = vocab <= 65536 ? 2 : 4;
    CHECK(shard_dtype(vocab) == (elem == 2 ? "uint16" : "uint32"));
    REQUIRE(split["shards"].size() == 3);
    CHECK(split["shards"][0]["file"] == "train_0000.bin");
    CHECK(split["shards"][2]["tokens"] == 500);
    CHECK(split["tokens"] == 2500);
    CHECK(fs::file_size(dir / "train_0001.bin") == 1000u * elem);

    TokenStream s = TokenStream::open(dir.path.string(), "train");
    REQUIRE(s.size() == 2500);
    CHECK(s.source_bytes() == 12345);
    CHECK(read_all(s) == std::vector<int64_t>(tokens.begin(), tokens.end()));
    for (int64_t i : {0, 999, 1000, 1001, 2499}) CHECK(s.at(i) == tokens[i]);
    std::vector<int64_t> window(10);
    s.read(995, 10, window.data());  // spans shards 0 and 1
    CHECK(window == std::vector<int64_t>(tokens.begin() + 995, tokens.begin() + 1005));
    CHECK_THROWS_AS(s.at(2500), std::out_of_range);
    CHECK_THROWS_AS(s.read(2495, 10, window.data()), std::out_of_range);
  }
}

TEST_CASE("shard writer rejects ids outside the vocabulary, and in-memory streams work", "[shards]") {
  TempDir dir;
  ShardWriter w(dir.path.string(), "train", 100, 10);
  CHECK_THROWS_WITH(w.write({1, 2, 100}), Catch::Contains("outside the vocabulary"));
  TokenStream s = TokenStream::from_tokens({5, 6, 7});
  CHECK(s.size() == 3);
  CHECK(s.at(2) == 7);
  std::vector<int64_t> out(2);
  s.read(1, 2, out.data());
  CHECK(out == std::vector<int64_t>{6, 7});
}

TEST_CASE("opening shards fails with clear messages", "[shards]") {
  TempDir dir;
  const std::string d = dir.path.string();
  CHECK_THAT(open_error(d + "/none", "train"), Catch::Contains("data directory not found"));
  CHECK_THAT(open_error(d, "train"), Catch::Contains("no manifest.json"));
  write_text(dir / "manifest.json", "{ not json");
  CHECK_THAT(open_error(d, "train"), Catch::Contains("invalid manifest"));

  write_split(d, random_tokens(1500, 300, 1), 300, 1000);
  CHECK_THAT(open_error(d, "test"), Catch::Contains("split 'test' not found") && Catch::Contains("train"));
  fs::resize_file(dir / "train_0001.bin", 10);
  CHECK_THAT(open_error(d, "train"), Catch::Contains("train_0001.bin has 10 bytes"));
  fs::remove(dir / "train_0001.bin");
  CHECK_THAT(open_error(d, "train"), Catch::Contains("missing shard") && Catch::Contains("train_0001.bin"));
  CHECK_THAT(open_error(d, "train"), !Catch::Contains("\n"));
}

TEST_CASE("corpus: txt is one document, jsonl one per line, chunks cut at line boundaries", "[shards][corpus]") {
  TempDir dir;
  fs::create_directories(dir / "in/sub");
  const std::string long_doc = lmzoo::test::english_like_text(5000, 2);
  write_text(dir / "in/b.txt", long_doc);
  write_text(dir / "in/sub/a.jsonl", "{\"text\": \"first doc\"}\n\n{\"text\": \"second\\ndoc\", \"id\": 2}\n{\"text\": \"\"}\n");
  write_text(dir / "in/notes.md", "skipped");
  write_text(dir / "c.md", "named explicitly");

  auto files = list_input_files({dir / "in", dir / "c.md"});
  REQUIRE(files.size() == 3);
  CHECK(files[0] == dir / "in/b.txt");  // sorted: "in/b.txt" < "in/sub/a.jsonl"
  CHECK(files[1] == dir / "in/sub/a.jsonl");
  CHECK(total_file_bytes({dir / "c.md"}) == 16);

  Chunks c = collect({dir / "in", dir / "c.md"}, 200);
  REQUIRE(c.docs.size() == 4);  // the empty jsonl document is skipped
  CHECK(c.docs[0] == long_doc);
  CHECK(c.docs[1] == "first doc");
  CHECK(c.docs[2] == "second\ndoc");
  CHECK(c.docs[3] == "named explicitly");
  CHECK(c.largest <= 200);
  for_each_chunk({dir / "in/b.txt"}, 1000, [&](const std::string& text, bool end) {
    if (!end) CHECK(text.back() == '\n');  // the generated text has a newline every few hundred bytes
  });

  // A single long line is cut before a space, never inside a word or a UTF-8 character.
  std::string line;
  for (int i = 0; i < 300; ++i) line += "w\xC3\xB6rd ";
  write_text(dir / "line.jsonl", nlohmann::json{{"text", line}}.dump() + "\n");
  std::string joined;
  for_each_chunk({dir / "line.jsonl"}, 64, [&](const std::string& text, bool) {
    CHECK(text.size() <= 64);
    CHECK(text.front() == (joined.empty() ? 'w' : ' '));
    joined += text;
  });
  CHECK(joined == line);
}

TEST_CASE("corpus errors name the file and line", "[shards][corpus]") {
  TempDir dir;
  write_text(dir / "bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": oops}\n");
  write_text(dir / "nofield.jsonl", "{\"body\": \"x\"}\n");
  auto noop = [](const std::string&, bool) {};
  CHECK_THROWS_WITH(for_each_chunk({dir / "bad.jsonl"}, 100, noop), Catch::Contains("bad.jsonl:2: invalid JSON"));
  CHECK_THROWS_WITH(for_each_chunk({dir / "nofield.jsonl"}, 100, noop), Catch::Contains("nofield.jsonl:1") && Catch::Contains("\"text\""));
  CHECK_THROWS_WITH(list_input_files({dir / "missing.txt"}), Catch::Contains("input not found"));
  fs::create_directories(dir / "empty");
  CHECK_THROWS_WITH(list_input_files({dir / "empty"}), Catch::Contains("no input files"));
}

TEST_CASE("prepare_data: stream is encode(doc) + </s> per document, in order, val is the tail", "[shards]") {
  const auto& f = lmzoo::test::tiny_corpus("bpe");
  Tokenizer tok = Tokenizer::load(f.tokenizer_dir);
  TempDir dir;
  std::vector<std::string> docs;
  std::string jsonl;
  for (int i = 0; i < 60; ++i) {
    docs.push_back(lmzoo::test::english_like_text(100 + 37 * i, 100 + i));
    jsonl += nlohmann::json{{"text", docs.back()}}.dump() + "\n";
  }
  write_text(dir / "docs.jsonl", jsonl);
  std::vector<int64_t> expected;
  int64_t text_bytes = 0;
  for (const auto& d : docs) {
    for (int id : tok.encode(d)) expected.push_back(id);
    expected.push_back(special::kEos);
    text_bytes += d.size();
  }

  PrepareOptions o;
  o.tokenizer = f.tokenizer_dir;
  o.inputs = {dir / "docs.jsonl"};
  o.out_dir = dir / "data";
  o.val_fraction = 0.25;
  o.threads = 4;
  o.chunk_bytes = 300;        // many small batches in flight: order must still hold
  o.max_shard_tokens = 1000;  // several shards, the boundary shard is split
  fs::create_directories(dir / "data");
  write_text(dir / "data/train_0042.bin", "stale");  // a previous run's leftovers are removed
  PrepareResult r = prepare_data(o);

  const int64_t total = expected.size();
  const int64_t val_tokens = std::llround(total * 0.25);
  CHECK(r.documents == 60);
  CHECK(r.val_tokens == val_tokens);
  CHECK(r.train_tokens == total - val_tokens);
  CHECK_FALSE(fs::exists(dir / "data/train_0042.bin"));
  TokenStream train = TokenStream::open(dir / "data", "train");
  TokenStream val = TokenStream::open(dir / "data", "val");
  std::vector<int64_t> stream = read_all(train), tail = read_all(val);
  stream.insert(stream.end(), tail.begin(), tail.end());
  CHECK(stream == expected);

  // Source bytes: the decoded val text (without </s>) and the rest of the text, exactly.
  std::vector<int> val_ids;
  for (int64_t id : tail) if (id != special::kEos) val_ids.push_back(static_cast<int>(id));
  CHECK(val.source_bytes() == static_cast<int64_t>(tok.decode(val_ids).size()));
  CHECK(train.source_bytes() + val.source_bytes() == text_bytes);

  nlohmann::json m = read_manifest(dir / "data");
  CHECK(m["format_version"] == 1);
  CHECK(m["tokenizer_hash"] == tok.hash());
  CHECK(m["vocab_size"] == tok.vocab_size());
  CHECK(m["dtype"] == "uint16");
  CHECK(m["sources"][0]["path"] == dir / "docs.jsonl");
  CHECK(m["sources"][0]["bytes"] == jsonl.size());
  CHECK(m["splits"]["train"]["shards"].size() == static_cast<size_t>((total - val_tokens + 999) / 1000));
  CHECK(Tokenizer::load(dir / "data").hash() == tok.hash());
  CHECK_FALSE(fs::exists(dir / "data/manifest.json.tmp"));
}

TEST_CASE("tiny_corpus fixture provides a usable tokenizer and data dir", "[shards]") {
  const auto& f = lmzoo::test::tiny_corpus("char");
  TokenStream train = TokenStream::open(f.data_dir, "train");
  TokenStream val = TokenStream::open(f.data_dir, "val");
  CHECK(train.size() > 20000);
  CHECK(val.size() == std::llround((train.size() + val.size()) * 0.1));
  CHECK(f.vocab_size == Tokenizer::load(f.tokenizer_dir).vocab_size());
  CHECK(&f == &lmzoo::test::tiny_corpus("char"));  // built once
}
