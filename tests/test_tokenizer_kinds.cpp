// Tests of the Tokenizer facade's kinds: lmzoo's SentencePiece, T5- and Llama-style SentencePiece models, WordPiece
// and GPT-2 BPE load with their special ids, save and reload to the same ids, serialize, and drive the batchers.
#include "tests/catch_compat.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>

#include "data/batching/batcher_mlm.h"
#include "data/batching/batcher_span.h"
#include "data/tokenizers/sentencepiece_bridge.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

// save() into a fresh directory and load() it back: same kind, files, ids and hash.
void check_save_reload(const Tokenizer& tok, const std::string& text) {
  TempDir dir;
  tok.save(dir / "saved");
  const Tokenizer back = Tokenizer::load(dir / "saved");
  CHECK(back.kind() == tok.kind());
  CHECK(back.file_names() == tok.file_names());
  CHECK(back.hash() == tok.hash());
  CHECK(back.encode(text) == tok.encode(text));
  CHECK(back.special().eos == tok.special().eos);
  CHECK(back.special().sentinels == tok.special().sentinels);
  const Tokenizer blob = Tokenizer::from_serialized(tok.serialized());
  CHECK(blob.hash() == tok.hash());
  CHECK(blob.encode(text) == tok.encode(text));
}

}  // namespace

TEST_CASE("native SentencePiece: lmzoo's fixed ids, tokenizer.model, stable hash", "[tokenizers]") {
  const Fixture& f = tiny_corpus("bpe");
  const Tokenizer tok = Tokenizer::load(f.tokenizer_dir);
  CHECK(tok.kind() == TokenizerKind::kSentencePiece);
  CHECK(tok.file_names() == std::vector<std::string>{"tokenizer.model"});
  const SpecialIds s = tok.special();
  CHECK((s.pad == 0 && s.unk == 1 && s.bos == 2 && s.eos == 3 && s.mask == 4 && s.cls == 5 && s.sep == 6));
  REQUIRE(s.sentinels.size() == 100);
  CHECK((s.sentinels.front() == 7 && s.sentinels.back() == 106));
  CHECK(tok.is_special(106));
  CHECK_FALSE(tok.is_special(107));
  CHECK(tok.serialized() == read_text(f.tokenizer_dir + "/tokenizer.model"));  // hash() digests the file itself
  check_save_reload(tok, "The cat sat on the mat.");
}

TEST_CASE("T5-style SentencePiece: pad 0, eos 1, unk 2, sentinels added above, <extra_id_0> highest", "[tokenizers]") {
  TempDir dir;
  const std::string proto = train_hf_spm(SpmStyle::kT5);
  write_text(dir / "spiece.model", proto);
  const Tokenizer tok = Tokenizer::load(dir.path.string());
  CHECK(tok.kind() == TokenizerKind::kSentencePiece);
  const SpecialIds& s = tok.special();
  CHECK((s.pad == 0 && s.eos == 1 && s.unk == 2 && s.bos == -1 && s.mask == -1 && s.cls == -1 && s.sep == -1));
  const int pieces = tok.vocab_size() - 100;
  REQUIRE(s.sentinels.size() == 100);
  CHECK(s.sentinels[0] == pieces + 99);
  CHECK(s.sentinels[99] == pieces);
  CHECK(tok.id_to_piece(pieces + 99) == "<extra_id_0>");
  CHECK(tok.piece_to_id("<extra_id_3>") == pieces + 96);
  const std::vector<int> ids = tok.encode("the cat <extra_id_0> on the mat<extra_id_1>");
  CHECK(std::count(ids.begin(), ids.end(), s.sentinels[0]) == 1);
  CHECK(ids.back() == s.sentinels[1]);
  const std::string text = tok.decode(ids);
  CHECK(text.find("<extra_id_0>") != std::string::npos);
  CHECK(text.find("<extra_id_1>") != std::string::npos);
  CHECK(tok.is_special(s.sentinels[5]));
  // No byte fallback: an unseen character is <unk>; piece_bytes and is_word_start still answer.
  const std::vector<int> unknown = tok.encode("\xCE\xA9");
  CHECK(std::find(unknown.begin(), unknown.end(), s.unk) != unknown.end());
  for (int id : tok.encode("the cat")) CHECK(tok.piece_bytes(id) >= 0);
  CHECK(tok.is_word_start(tok.encode("the")[0]));
  check_save_reload(tok, "the cat <extra_id_7> sat");
  CHECK(Tokenizer::from_serialized(proto).file_names() == std::vector<std::string>{"spiece.model"});
}

TEST_CASE("Llama-style SentencePiece: unk 0, bos 1, eos 2, no pad or sentinels", "[tokenizers]") {
  TempDir dir;
  write_text(dir / "tokenizer.model", train_hf_spm(SpmStyle::kLlama));
  const Tokenizer tok = Tokenizer::load(dir / "tokenizer.model");
  const SpecialIds& s = tok.special();
  CHECK((s.unk == 0 && s.bos == 1 && s.eos == 2 && s.pad == -1 && s.mask == -1));
  CHECK(s.sentinels.empty());
  CHECK(tok.decode(tok.encode("the cat sat")).find("cat sat") != std::string::npos);
  check_save_reload(tok, "the dog ran");
  const TokenStream stream = TokenStream::from_tokens({10, 11, 12});
  CHECK_THROWS_WITH(SpanBatcher(stream, s, SpanOptions{}, 1),
                    Catch::Contains("objective span needs a <pad> token; the sentencepiece tokenizer has none"));
}

TEST_CASE("WordPiece: BERT's special ids, [SEP] as eos, tokenizer_config switches travel with it", "[tokenizers]") {
  TempDir dir;
  write_bert_vocab(dir.path, /*cased=*/true);
  const Tokenizer tok = Tokenizer::load(dir.path.string());
  CHECK(tok.kind() == TokenizerKind::kWordPiece);
  CHECK(tok.file_names() == std::vector<std::string>{"tokenizer_config.json", "vocab.txt"});
  const SpecialIds& s = tok.special();
  CHECK((s.pad == 0 && s.unk == 100 && s.cls == 101 && s.sep == 102 && s.mask == 103 && s.eos == 102));
  CHECK(s.bos == -1);
  CHECK(s.sentinels.empty());
  CHECK(tok.encode("The cat") != tok.encode("the cat"));  // do_lower_case false from tokenizer_config.json
  CHECK(tok.encode("the [MASK] sat")[1] == 103);
  CHECK(tok.decode(tok.encode("the cats sat.")) == "the cats sat .");
  CHECK_FALSE(tok.is_word_start(tok.piece_to_id("##s")));
  check_save_reload(tok, "The cats sat on the mat.");
}

TEST_CASE("GPT-2 BPE: <|endoftext|> is bos and eos, exact bytes, no mask", "[tokenizers]") {
  const std::string vocab = gpt2_vocab_dir();
  if (vocab.empty()) {
    WARN("GPT-2 vocabulary not fetched (tools/fetch_gpt2_vocab.sh): skipped");
    return;
  }
  const Tokenizer tok = Tokenizer::load(vocab);
  CHECK(tok.kind() == TokenizerKind::kGpt2Bpe);
  CHECK(tok.vocab_size() == 50257);
  const SpecialIds& s = tok.special();
  CHECK((s.eos == 50256 && s.bos == 50256 && s.pad == -1 && s.mask == -1 && s.cls == -1));
  CHECK(tok.encode("Hello world") == std::vector<int>{15496, 995});
  const std::string text = "The caf\xC3\xA9 sat.\n\nA <|endoftext|> b";
  const std::vector<int> ids = tok.encode(text);
  CHECK(tok.decode(ids) == text);
  // <|endoftext|> written in the text is its id, as in HF's GPT2TokenizerFast: a control id, 0 bytes.
  CHECK(std::count(ids.begin(), ids.end(), 50256) == 1);
  int bytes = 0;
  for (int id : ids) bytes += tok.piece_bytes(id);
  CHECK(bytes == int(text.size()) - 13);
  CHECK(tok.piece_bytes(50256) == 0);
  CHECK(tok.is_special(50256));
  CHECK(tok.is_word_start(995));
  check_save_reload(tok, text);
  CHECK_THROWS_WITH(require_mlm_ids(s),
                    Catch::Contains("objective mlm needs a [MASK] token; the gpt2-bpe tokenizer has none"));
}

TEST_CASE("a directory without a tokenizer, or a broken blob, fails with one clear message", "[tokenizers]") {
  TempDir dir;
  write_text(dir / "merges.txt", "#version: 0.2\n");  // half of a GPT-2 pair
  CHECK_THROWS_WITH(Tokenizer::load(dir.path.string()),
                    Catch::Contains("tokenizer not found in " + dir.path.string()) && Catch::Contains("vocab.txt"));
  CHECK_THROWS_WITH(Tokenizer::from_serialized(R"({"format": "other"})"), Catch::Contains("not an lmzoo tokenizer blob"));
}

TEST_CASE("batchers use the tokenizer's ids: WordPiece masks with 103, T5 sentinels count down", "[tokenizers]") {
  TempDir dir;
  write_bert_vocab(dir.path, /*cased=*/false);
  const Tokenizer wp = Tokenizer::load(dir.path.string());
  const SpecialIds& s = wp.special();
  std::vector<int64_t> words;
  for (int id : wp.encode("the cat sat on the mat and the dog ran")) words.push_back(id);
  MlmExample e = frame_segments(s, words, {words[0]});
  CHECK((e.ids.front() == 101 && e.ids[words.size() + 1] == 102 && e.ids.back() == 102));
  std::mt19937_64 rng(3);
  apply_masking(e, {1.0, 1.0, 0.0, false}, s, wp.vocab_size(), rng);
  for (size_t i = 0; i < e.ids.size(); ++i) CHECK((e.labels[i] < 0 ? s.contains(e.ids[i]) : e.ids[i] == 103));
  CHECK(std::count(e.ids.begin(), e.ids.end(), 103) == int64_t(words.size() + 1));
  MlmExample r = frame_segments(s, words);
  apply_masking(r, {1.0, 0.0, 1.0, false}, s, wp.vocab_size(), rng);  // every selected id replaced at random
  for (int64_t id : r.ids) CHECK((id >= 0 && id < wp.vocab_size()));
  for (size_t i = 1; i + 1 < r.ids.size(); ++i) CHECK_FALSE(s.contains(r.ids[i]));
  CHECK(collate_mlm({frame_segments(s, {7}), frame_segments(s, {7, 8})}, s.pad).input_ids[0][3].item<int64_t>() == 0);

  SpecialIds t5;
  t5.pad = 0;
  t5.eos = 1;
  t5.unk = 2;
  for (int i = 0; i < 100; ++i) t5.sentinels.push_back(399 - i);
  const Seq2SeqExample c = span_corrupt(t5, {10, 11, 12, 13, 14}, {false, true, false, true, true});
  CHECK(c.inputs == std::vector<int64_t>{10, 399, 12, 398, 1});
  CHECK(c.targets == std::vector<int64_t>{399, 11, 398, 13, 14, 1});
}
