// Tests of tokenizer.json (data/tokenizers/hf_json/): each model, decoder, post-processor and the added tokens on small
// hand-written files whose ids are worked out by hand from the Rust library's rules; the refusals (one line naming
// the file and field); the writer's round trips; the CLI; GPT-2's <|endoftext|> matched in text, with the switch.
#include "tests/catch_compat.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizers/gpt2_bpe.h"
#include "data/tokenizers/hf_json/tokenizer_json.h"
#include "data/tokenizers/hf_json/tokenizer_json_writer.h"
#include "data/tokenizers/tokenizer.h"
#include "data/unicode/unicode_text.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;
using nlohmann::json;
namespace fs = std::filesystem;
using Ids = std::vector<int>;

namespace {

// A tokenizer.json document around MODEL with the other components null.
json doc(json model) {
  return json{{"version", "1.0"},         {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", json::array()},
              {"normalizer", nullptr},    {"pre_tokenizer", nullptr}, {"model", std::move(model)},
              {"post_processor", nullptr}, {"decoder", nullptr}};
}

std::unique_ptr<hf::TokenizerJson> parse(const json& j) { return hf::TokenizerJson::parse(j.dump()); }

// A character-level BPE: a b c and their merges, in the "a b" string form (PAIRS: the [a, b] form).
json abc_bpe(bool pairs) {
  json merges = pairs ? json::array({{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "a"}})
                      : json::array({"a b", "b c", "ab c", "a a"});
  return json{{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}, {"bc", 5}, {"aa", 6}}},
              {"merges", merges}};
}

json added(int id, const std::string& content, bool special, bool normalized = false) {
  return json{{"id", id},          {"content", content}, {"single_word", false}, {"lstrip", false},
              {"rstrip", false},   {"normalized", normalized}, {"special", special}};
}

// Writes J as DIR/tokenizer.json (and CONFIG as tokenizer_config.json when not empty).
void write_json_dir(const fs::path& dir, const std::string& tokenizer_json, const std::string& config = "") {
  fs::create_directories(dir);
  write_text(dir / "tokenizer.json", tokenizer_json);
  if (!config.empty()) write_text(dir / "tokenizer_config.json", config);
}

// A GPT-2 directory: the 256 byte characters (id = byte), "Ġt" 256 "he" 257 "Ġthe" 258 "<|endoftext|>" 259.
void write_tiny_gpt2(const fs::path& dir) {
  json vocab;
  for (int b = 0; b < 256; ++b) {
    std::string c;
    append_utf8(gpt2_byte_to_char(uint8_t(b)), c);
    vocab[c] = b;
  }
  vocab["\xC4\xA0t"] = 256;
  vocab["he"] = 257;
  vocab["\xC4\xA0the"] = 258;
  vocab["<|endoftext|>"] = 259;
  fs::create_directories(dir);
  write_text(dir / "vocab.json", vocab.dump());
  write_text(dir / "merges.txt", "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n");
}

// The message Tokenizer::load gives for DIR, or "" when it loads.
std::string load_error(const fs::path& dir) {
  try {
    (void)Tokenizer::load(dir.string());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

const std::vector<std::string>& varied_texts() {
  static const std::vector<std::string> texts = {
      "Hello world", "the cat sat on the mat.", "  leading and trailing  ", "tabs\tand\nnewlines\n\n\nend",
      "don't STOP'S we'll they've I'm", "digits 1234567 and 3.14", "caf\xC3\xA9 na\xC3\xAFve", "e\xCC\x81t\xC3\xA9",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", "emoji \xF0\x9F\x99\x82\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9",
      "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
      "runs     of spaces", std::string(300, 'x'), "The Dog ran, and it was in the Mat!", ""};
  return texts;
}

}  // namespace

TEST_CASE("tokenizer.json BPE merges by rank, leftmost first, in both merge forms", "[hf_json]") {
  for (bool pairs : {false, true}) {
    const auto t = parse(doc(abc_bpe(pairs)));
    CHECK(t->encode("abc") == Ids{4});       // a b -> ab (rank 0), then ab c (rank 2); b c's entry is stale
    CHECK(t->encode("bca") == Ids{5, 0});    // b c -> bc; no (bc, a) merge
    CHECK(t->encode("aabc") == Ids{0, 4});   // (a, b) rank 0 beats (a, a) rank 3: a ab c -> a abc
    CHECK(t->encode("aaa") == Ids{6, 0});    // equal ranks: the leftmost pair merges first
    CHECK(t->encode("") == Ids{});
    CHECK(t->encode("abd") == Ids{3});       // d is outside the vocabulary and there is no unk_token: dropped
    CHECK(t->decode({3, 2}) == "ab c");      // no decoder: tokens joined by spaces
  }
}

TEST_CASE("tokenizer.json BPE byte_fallback, unk_token and fuse_unk", "[hf_json]") {
  json model{{"type", "BPE"},
             {"unk_token", "<unk>"},
             {"byte_fallback", true},
             {"vocab", {{"<unk>", 0}, {"<0xC3>", 1}, {"<0xA9>", 2}, {"a", 3}}},
             {"merges", json::array()}};
  CHECK(parse(doc(model))->encode("a\xC3\xA9") == Ids{3, 1, 2});  // é: its bytes
  CHECK(parse(doc(model))->encode("\xE2\x82\xAC\xE2\x82\xAC" "a") == Ids{0, 0, 3});  // €: bytes missing, unk each
  model["fuse_unk"] = true;
  CHECK(parse(doc(model))->encode("\xE2\x82\xAC\xE2\x82\xAC" "a") == Ids{0, 3});  // fused into one unk
}

TEST_CASE("tokenizer.json BPE ignore_merges, continuing_subword_prefix and end_of_word_suffix", "[hf_json]") {
  json model{{"type", "BPE"},
             {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}}},
             {"merges", json::array({"a b"})}};
  CHECK(parse(doc(model))->encode("abc") == Ids{3, 2});
  model["ignore_merges"] = true;
  CHECK(parse(doc(model))->encode("abc") == Ids{4});  // the whole word is a token
  CHECK(parse(doc(model))->encode("cab") == Ids{2, 3});

  json affixed{{"type", "BPE"},
               {"continuing_subword_prefix", "##"},
               {"end_of_word_suffix", "</w>"},
               {"vocab", {{"a", 0}, {"##b", 1}, {"##c</w>", 2}, {"ab", 3}, {"a</w>", 4}}},
               {"merges", json::array({"a ##b"})}};  // merged: "a" + "##b" without its prefix = "ab"
  const auto t = parse(doc(affixed));
  CHECK(t->encode("abc") == Ids{3, 2});
  CHECK(t->encode("a") == Ids{4});
}

TEST_CASE("tokenizer.json WordPiece: longest match first, unk for the whole word", "[hf_json]") {
  json model{{"type", "WordPiece"},
             {"unk_token", "[UNK]"},
             {"continuing_subword_prefix", "##"},
             {"max_input_chars_per_word", 100},
             {"vocab", {{"[UNK]", 0}, {"un", 1}, {"##aff", 2}, {"##able", 3}, {"u", 4}, {"##n", 5}, {"\xC3\xA9", 6}}}};
  CHECK(parse(doc(model))->encode("unaffable") == Ids{1, 2, 3});
  CHECK(parse(doc(model))->encode("unx") == Ids{0});    // "##x" has no match: the whole word is [UNK]
  CHECK(parse(doc(model))->encode("\xC3\xA9") == Ids{6});
  model["max_input_chars_per_word"] = 5;
  CHECK(parse(doc(model))->encode("unaffable") == Ids{0});
  CHECK(parse(doc(model))->encode("un") == Ids{1});
}

TEST_CASE("tokenizer.json Unigram: Viterbi over scores, unknowns fused, byte fallback", "[hf_json]") {
  json model{{"type", "Unigram"},
             {"unk_id", 0},
             {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"a", -1.0}), json::array({"b", -2.0}),
                                    json::array({"ab", -1.5}), json::array({"c", -3.0})})}};
  CHECK(parse(doc(model))->encode("ab") == Ids{3});        // ab -1.5 beats a + b = -3
  CHECK(parse(doc(model))->encode("abc") == Ids{3, 4});
  CHECK(parse(doc(model))->encode("xxa") == Ids{0, 1});    // x x: one fused unknown
  model["vocab"].push_back(json::array({"<0x78>", -20.0}));
  model["byte_fallback"] = true;
  CHECK(parse(doc(model))->encode("xa") == Ids{5, 1});     // x: unknown to the lattice, then its byte piece
  CHECK(parse(doc(model))->encode("\xC3\xA9") == Ids{0});  // é's bytes have no pieces: unk
}

TEST_CASE("tokenizer.json added tokens: raw matching, strip flags, single_word and split_special_tokens", "[hf_json]") {
  json model{{"type", "BPE"},
             {"vocab", {{"a", 0}, {"b", 1}, {" ", 2}, {"<", 3}, {"s", 4}, {">", 5}, {"h", 6}, {"i", 7}, {"x", 8}}},
             {"merges", json::array()}};
  json j = doc(model);
  j["added_tokens"] = json::array({added(9, "<s>", true)});
  auto special = added(10, "<m>", false);
  special["lstrip"] = special["rstrip"] = true;
  j["added_tokens"].push_back(special);
  auto word = added(11, "hi", false);
  word["single_word"] = true;
  j["added_tokens"].push_back(word);
  const auto t = parse(j);
  CHECK(t->vocab_size() == 12);
  CHECK(t->encode("a<s>b") == Ids{0, 9, 1});
  CHECK(t->encode("a<s>b", true) == Ids{0, 3, 4, 5, 1});  // split_special_tokens: plain text
  CHECK(t->encode("a <m>  b") == Ids{0, 10, 1});          // lstrip / rstrip take the spaces around it
  CHECK(t->encode("a <m>  b", true) == Ids{0, 10, 1});    // not special: still matched
  CHECK(t->encode("hi x") == Ids{11, 2, 8});
  CHECK(t->encode("hix") == Ids{6, 7, 8});                // not a single word
  CHECK(t->decode({0, 9, 1}) == "a <s> b");
  CHECK(t->is_special_added(9));
  CHECK_FALSE(t->is_special_added(10));
}

TEST_CASE("tokenizer.json decoders: ByteLevel, WordPiece, Metaspace, ByteFallback, Fuse, Strip, Replace", "[hf_json]") {
  // Llama-2's decoder on Metaspace-style pieces with byte fallback.
  json model{{"type", "BPE"},
             {"vocab", {{"\xE2\x96\x81hi", 0}, {"\xE2\x96\x81there", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}, {"a", 4}}},
             {"merges", json::array()}};
  json j = doc(model);
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}},
                                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  CHECK(parse(j)->decode({0, 1, 2, 3}) == "hi there\xC3\xA9");
  CHECK(parse(j)->decode({0, 2, 4}) == "hi\xEF\xBF\xBD" "a");  // a lone 0xC3: U+FFFD per byte
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}};
  CHECK(parse(j)->decode({0, 1}) == "hi there");
  j["decoder"]["prepend_scheme"] = "never";
  CHECK(parse(j)->decode({0, 1}) == " hi there");

  json wp{{"type", "WordPiece"},
          {"vocab", {{"[UNK]", 0}, {"un", 1}, {"##aff", 2}, {"##able", 3}, {",", 4}, {"it", 5}, {"'", 6}, {"s", 7}}}};
  json k = doc(wp);
  k["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  CHECK(parse(k)->decode({1, 2, 3, 4, 5, 6, 7}) == "unaffable, it ' s");  // cleanup runs per token: " '" stays
  k["decoder"]["cleanup"] = false;
  CHECK(parse(k)->decode({1, 2, 3, 4, 5}) == "unaffable , it");

  json bl{{"type", "BPE"}, {"vocab", {{"\xC4\xA0hello", 0}, {"\xC3\xA3\xC4\xA3", 1}, {"<|x|>", 2}}}, {"merges", json::array()}};
  json m = doc(bl);
  m["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  CHECK(parse(m)->decode({0}) == " hello");
  CHECK(parse(m)->decode({0, 2}) == " hello<|x|>");              // not byte-level characters: as written
  CHECK(parse(m)->decode({1}) == "\xEF\xBF\xBD");                // "ãģ": bytes E3 81, cut: one U+FFFD (from_utf8_lossy)
  CHECK(parse(m)->decode({1, 1}) == "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("tokenizer.json post-processors wrap one sequence", "[hf_json]") {
  json j = doc(abc_bpe(false));
  j["added_tokens"] = json::array({added(7, "[CLS]", true), added(8, "[SEP]", true)});
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                                 {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}})},
                         {"pair", json::array()},
                         {"special_tokens", {{"[CLS]", {{"id", "[CLS]"}, {"ids", {7}}, {"tokens", {"[CLS]"}}}},
                                             {"[SEP]", {{"id", "[SEP]"}, {"ids", {8}}, {"tokens", {"[SEP]"}}}}}}};
  CHECK(parse(j)->post_process(parse(j)->encode("abc")) == Ids{7, 4, 8});
  json seq = j;
  seq["post_processor"] = {{"type", "Sequence"},
                           {"processors", json::array({{{"type", "ByteLevel"}, {"add_prefix_space", true},
                                                        {"trim_offsets", false}, {"use_regex", true}},
                                                       j["post_processor"]})}};
  CHECK(parse(seq)->post_process({0}) == Ids{7, 0, 8});
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 8}}, {"cls", {"[CLS]", 7}}};
  CHECK(parse(j)->post_process({1, 2}) == Ids{7, 1, 2, 8});
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"[SEP]", 8}}, {"cls", {"[CLS]", 7}},
                         {"trim_offsets", true}, {"add_prefix_space", false}};
  CHECK(parse(j)->post_process({}) == Ids{7, 8});
  j["post_processor"] = nullptr;
  CHECK(parse(j)->post_process({1}) == Ids{1});
}

TEST_CASE("tokenizer.json refusals name the file and the field in one line", "[hf_json]") {
  struct Row {
    std::function<void(json&)> edit;
    std::string fragment;
  };
  const std::vector<Row> rows = {
      {[](json& j) { j["model"]["type"] = "WordLevel"; }, "tokenizer.json: model.type: 'WordLevel' is not supported"},
      {[](json& j) { j["decoder"] = {{"type", "CTC"}}; }, "tokenizer.json: decoder.type: 'CTC' is not supported"},
      {[](json& j) { j["post_processor"] = {{"type", "Fancy"}}; }, "post_processor.type: 'Fancy'"},
      {[](json& j) { j["extra"] = 1; }, "tokenizer.json: extra: unknown field"},
      {[](json& j) { j["model"]["merges"].push_back("a z"); }, "tokenizer.json: model.merges[4]: token 'z' is not in model.vocab"},
      {[](json& j) { j["model"]["merges"].push_back("c c"); }, "model.merges[4]: the merged token 'cc' is not in model.vocab"},
      {[](json& j) { j["added_tokens"] = json::array({added(2, "<s>", true)}); }, "added_tokens[0].id: 2 collides"},
      {[](json& j) { j["added_tokens"] = json::array({added(9, "a", true)}); }, "added_tokens[0].id: 9 collides: the vocabulary gives 'a' id 0"},
      {[](json& j) { j["model"]["vocab"] = json::array(); }, "model.vocab: expected an object"},
      {[](json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout: BPE dropout is refused"},
      {[](json& j) { j["model"]["fuse_unk"] = "yes"; }, "model.fuse_unk: expected true or false"},
      {[](json& j) { j["model"]["vocab"]["a"] = -1; }, "model.vocab[\"a\"]: expected a token id"},
      {[](json& j) { j["decoder"] = {{"type", "Replace"}, {"pattern", {{"Regex", "x"}}}, {"content", ""}}; }, "decoder.pattern.Regex"},
      {[](json& j) { j["decoder"] = {{"type", "Sequence"}, {"decoders", json::array({{{"type", "Nope"}}})}}; }, "decoder.decoders[0].type: 'Nope'"},
      {[](json& j) { j.erase("model"); }, "tokenizer.json: model: missing"},
  };
  TempDir tmp;
  for (size_t i = 0; i < rows.size(); ++i) {
    json j = doc(abc_bpe(false));
    rows[i].edit(j);
    const fs::path dir = tmp.path / ("row" + std::to_string(i));
    write_json_dir(dir, j.dump());
    const std::string err = load_error(dir);
    INFO("row " << i << ": " << err);
    CHECK(err.find(rows[i].fragment) != std::string::npos);
    CHECK(err.find((dir / "tokenizer.json").string()) == 0);
    CHECK(err.find('\n') == std::string::npos);
  }
  const fs::path bad = tmp.path / "malformed";
  write_json_dir(bad, "{\"model\": {\"type\": \"BPE\", ");
  CHECK(load_error(bad).find("tokenizer.json: (document): not valid JSON") != std::string::npos);
  write_json_dir(bad, std::string(100000, '[') + std::string(100000, ']'));
  CHECK(load_error(bad).find("nested deeper than 128 levels") != std::string::npos);
  write_json_dir(bad, "[1, 2]");
  CHECK(load_error(bad).find("(document): expected a JSON object") != std::string::npos);
  write_json_dir(bad, doc(abc_bpe(false)).dump(), R"({"eos_token": "</s>"})");
  CHECK(load_error(bad).find("tokenizer_config.json: eos_token: '</s>' is not in tokenizer.json's vocabulary") !=
        std::string::npos);
}

TEST_CASE("tokenizer.json directories load, save, serialize and take their special ids from tokenizer_config.json",
          "[hf_json]") {
  TempDir tmp;
  json j = doc(abc_bpe(false));
  j["added_tokens"] = json::array({added(7, "</s>", true), added(8, "<pad>", true)});
  write_json_dir(tmp.path / "tok", j.dump(), R"({"eos_token": {"content": "</s>", "__type": "AddedToken"}, "pad_token": "<pad>", "bos_token": null})");
  Tokenizer tok = Tokenizer::load(tmp / "tok");
  CHECK(tok.kind() == TokenizerKind::kHfJson);
  CHECK(tok.special().eos == 7);
  CHECK(tok.special().pad == 8);
  CHECK(tok.special().bos == -1);
  CHECK(tok.is_special(7));
  CHECK(tok.vocab_size() == 9);
  CHECK(tok.encode("abc</s>") == Ids{4, 7});
  CHECK(tok.piece_bytes(7) == 0);
  CHECK(tok.piece_bytes(4) == 3);
  CHECK(tok.add_special_tokens({1}) == Ids{1});  // no post-processor: unchanged
  tok.set_split_special_tokens(true);
  CHECK(tok.encode("ab</s>") == Ids{3});  // "<", "/", "s", ">" are not in the vocabulary: dropped
  tok.save(tmp / "saved");
  CHECK(fs::exists(tmp.path / "saved" / "tokenizer.json"));
  const Tokenizer back = Tokenizer::load(tmp / "saved");
  CHECK(back.hash() == tok.hash());
  CHECK(back.encode("abc</s>") == Ids{4, 7});
  const Tokenizer blob = Tokenizer::from_serialized(tok.serialized());
  CHECK(blob.kind() == TokenizerKind::kHfJson);
  CHECK(blob.special().eos == 7);
  // No config: the usual spellings of the special added tokens.
  write_json_dir(tmp.path / "noconfig", j.dump());
  CHECK(Tokenizer::load(tmp / "noconfig").special().eos == 7);
  CHECK(Tokenizer::load(tmp / "noconfig").special().pad == 8);
  // A directory with both tokenizer.json and the legacy files reads tokenizer.json.
  write_tiny_gpt2(tmp.path / "both");
  write_json_dir(tmp.path / "both", j.dump());
  CHECK(Tokenizer::load(tmp / "both").kind() == TokenizerKind::kHfJson);
}

TEST_CASE("GPT-2 BPE matches <|endoftext|> written in text, unless split_special_tokens", "[hf_json]") {
  TempDir tmp;
  write_tiny_gpt2(tmp.path / "gpt2");
  Tokenizer tok = Tokenizer::load(tmp / "gpt2");
  REQUIRE(tok.kind() == TokenizerKind::kGpt2Bpe);
  CHECK(tok.encode(" the<|endoftext|> the") == Ids{258, 259, 258});
  tok.set_split_special_tokens(true);
  const Ids plain = tok.encode(" the<|endoftext|> the");
  CHECK(plain.size() == 2 + 13);  // " the", 13 characters, " the"
  CHECK(std::find(plain.begin(), plain.end(), 259) == plain.end());
  CHECK_THROWS_WITH(tok.add_special_tokens({1}), Catch::Contains("tokenizer.json tokenizers only"));
}

TEST_CASE("tokenizer.json written for GPT-2 BPE and WordPiece loads back with the same ids", "[hf_json]") {
  TempDir tmp;
  std::vector<std::pair<std::string, fs::path>> sources;
  write_tiny_gpt2(tmp.path / "gpt2");
  sources.emplace_back("tiny gpt2", tmp.path / "gpt2");
  if (!gpt2_vocab_dir().empty()) sources.emplace_back("GPT-2's vocabulary", gpt2_vocab_dir());
  else WARN("GPT-2's real vocabulary not fetched (tools/fetch_gpt2_vocab.sh): only the tiny one is checked");
  fs::create_directories(tmp.path / "uncased");
  fs::create_directories(tmp.path / "cased");
  write_bert_vocab(tmp.path / "uncased", false);
  sources.emplace_back("uncased wordpiece", tmp.path / "uncased");
  write_bert_vocab(tmp.path / "cased", true);
  sources.emplace_back("cased wordpiece", tmp.path / "cased");
  std::vector<std::string> texts = varied_texts();
  texts.push_back("a<|endoftext|>b [CLS] x");
  texts.push_back(english_like_text(3000, 3));
  for (size_t k = 0; k < sources.size(); ++k) {
    const auto& [name, dir] = sources[k];
    INFO(name);
    const Tokenizer source = Tokenizer::load(dir.string());
    const auto written = tokenizer_json_for(source);
    REQUIRE(written);
    const fs::path out = tmp.path / ("json-" + std::to_string(k));
    write_json_dir(out, *written);
    const Tokenizer back = Tokenizer::load(out.string());
    CHECK(back.kind() == TokenizerKind::kHfJson);
    CHECK(back.vocab_size() == source.vocab_size());
    for (const std::string& text : texts) {
      INFO(text);
      CHECK(back.encode(text) == source.encode(text));
    }
    if (source.kind() == TokenizerKind::kWordPiece) {
      CHECK(back.add_special_tokens(back.encode("the cat")) ==
            Ids{source.piece_to_id("[CLS]"), source.piece_to_id("the"), source.piece_to_id("cat"), source.piece_to_id("[SEP]")});
    } else {
      CHECK(back.decode(back.encode(texts[6])) == texts[6]);
    }
  }
}

TEST_CASE("lmzoo tokenizer encode and prepare read a tokenizer.json directory; bad files end in one line", "[hf_json]") {
  TempDir tmp;
  json j = doc(abc_bpe(false));
  j["added_tokens"] = json::array({added(7, "</s>", true)});
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 7}}, {"cls", {"</s>", 7}}};
  write_json_dir(tmp.path / "tok", j.dump());
  write_text(tmp.path / "in.txt", "abc</s>bca");
  const std::string tok = " --tokenizer " + (tmp / "tok");
  CliResult r = run_cli("tokenizer encode --ids" + tok, tmp / "in.txt");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "4 7 5 0\n");
  r = run_cli("tokenizer encode --ids --split-special-tokens" + tok, tmp / "in.txt");
  CHECK(r.out == "4 5 0\n");
  r = run_cli("tokenizer encode --ids --add-special-tokens" + tok, tmp / "in.txt");
  CHECK(r.out == "7 4 7 5 0 7\n");
  write_tiny_gpt2(tmp.path / "gpt2");
  r = run_cli("tokenizer encode --ids --add-special-tokens --tokenizer " + (tmp / "gpt2"), tmp / "in.txt");
  CHECK(r.exit_code != 0);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find("tokenizer.json") != std::string::npos);

  write_text(tmp.path / "doc.txt", "abcabc bca\n");
  r = run_cli("prepare --input " + (tmp / "doc.txt") + " --out " + (tmp / "data") + tok + " --val-fraction 0");
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(tmp.path / "data" / "tokenizer.json"));

  json bad = j;
  bad["model"]["merges"].push_back("a q");
  write_json_dir(tmp.path / "bad", bad.dump());
  r = run_cli("prepare --input " + (tmp / "doc.txt") + " --out " + (tmp / "bad-data") + " --tokenizer " + (tmp / "bad"));
  CHECK(r.exit_code == 1);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find((tmp.path / "bad" / "tokenizer.json").string() + ": model.merges[4]") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp.path / "bad-data"));
}

TEST_CASE("a run on tokenizer.json data checkpoints, generates and exports its tokenizer.json", "[hf_json][cli]") {
  TempDir tmp;
  json j = doc(abc_bpe(false));
  j["added_tokens"] = json::array({added(7, "</s>", true)});
  write_json_dir(tmp.path / "tok", j.dump());
  std::string text;
  for (int i = 0; i < 400; ++i) text += i % 3 ? "abcabc bca " : "cab\n";
  write_text(tmp.path / "doc.txt", text);
  CliResult r = run_cli("prepare --input " + (tmp / "doc.txt") + " --out " + (tmp / "data") + " --tokenizer " +
                        (tmp / "tok") + " --val-fraction 0.1");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = run_cli("train --arch gpt --data " + (tmp / "data") + " --out " + (tmp / "run") +
              " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 4 --steps 2 --warmup 1"
              " --eval-interval 2 --eval-iters 1 --device cpu --bias");  // --bias: a GPT-2 twin, so --format hf exports it
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(tmp.path / "run" / "last" / "tokenizer.json"));
  r = run_cli("generate --checkpoint " + (tmp / "run") + " --prompt abc --max-new-tokens 3 --temperature 0");
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("abc", 0) == 0);  // the prompt, then what the model adds
  r = run_cli("export --checkpoint " + (tmp / "run") + " --format hf --out " + (tmp / "hf"));
  REQUIRE(r.exit_code == 0);
  const Tokenizer source = Tokenizer::load(tmp / "tok");
  const Tokenizer exported = Tokenizer::load((tmp.path / "hf" / "tokenizer.json").string());
  for (const std::string probe : {"abcabc bca", "cab</s>ab", ""}) CHECK(exported.encode(probe) == source.encode(probe));
}
