// CLI table test: bad inputs to every subcommand end in one stderr line, the right exit code (2 usage, 1 runtime),
// no stack trace and no file left behind; plus --version and help text. Most rows fail before a model is built.
#include "tests/catch_compat.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <future>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <torch/version.h>

#include "data/safetensors.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"

using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

struct BadInput {
  std::string args;      // after `lmzoo`; {tok} {data} {text} {in} {ckpt} are replaced, the rest is shell text
  int exit_code;         // 2: usage error, 1: runtime error
  std::string fragment;  // part of the one stderr line
  std::string stdin_file = "";  // a file of {in}, or "" for /dev/null
  std::string cwd = "";         // the working directory ({in}/... ), or "" for a fresh empty one
};

// Every file under DIRS, recursively: what a row may not add to.
std::set<std::string> listing(const std::vector<std::string>& dirs) {
  std::set<std::string> files;
  for (const auto& dir : dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) files.insert(entry.path().string());
  }
  return files;
}

struct RowOutcome {
  CliResult result;
  std::vector<std::string> left;  // files in the row's working directory after it ran
};

// Runs `lmzoo ARGS` (already quoted) in a fresh empty working directory, as run_cli does in the test's own, or in
// WORKING_DIR where given (what is left there is the inputs' listing's to find); stdin from STDIN_FILE, or
// /dev/null. Thread-safe: no Catch2 macro, no chdir.
RowOutcome run_in_fresh_dir(const std::string& args, const std::string& stdin_file,
                            const std::string& working_dir = "") {
  TempDir cwd, io;
  const std::string dir = working_dir.empty() ? cwd.path.string() : working_dir;
  const std::string cmd = "cd " + dir + " && " + LMZOO_BINARY + " " + args + " >" + (io / "out") + " 2>" +
                          (io / "err") + " <" + (stdin_file.empty() ? "/dev/null" : stdin_file);
  RowOutcome outcome;
  const int status = std::system(cmd.c_str());
  outcome.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  outcome.result.out = read_text(io.path / "out");
  outcome.result.err = read_text(io.path / "err");
  const auto left = listing({cwd.path.string()});
  outcome.left.assign(left.begin(), left.end());
  return outcome;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// A copy of CHECKPOINT's last/ as IN/NAME whose config.json has PART.FIELD (part "model" or "train") set to VALUE.
void write_edited_checkpoint(const std::string& in, const std::string& checkpoint, const std::string& name,
                             const std::string& part, const std::string& field, const nlohmann::json& value) {
  fs::copy(checkpoint + "/last", in + "/" + name, fs::copy_options::recursive);
  auto config = nlohmann::json::parse(read_text(in + "/" + name + "/config.json"));
  config[part][field] = value;
  write_text(in + "/" + name + "/config.json", config.dump());
}

// A Hugging Face GPT-2 directory holding only a config.json with N_LAYER and N_EMBD.
void write_hf_gpt2(const std::string& dir, const nlohmann::json& n_layer, int64_t n_embd) {
  fs::create_directories(dir);
  write_text(dir + "/config.json", nlohmann::json({{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"},
                                                   {"vocab_size", 99}, {"n_positions", 64}, {"n_embd", n_embd},
                                                   {"n_layer", n_layer}, {"n_head", 16}})
                                       .dump());
}

// Inputs of the limit rows: checkpoints and configs with values of the wrong type or past their ranges, a model
// no machine holds, Hugging Face configs of such models, a tiny t5 and a prompt as long as argv allows.
void write_limit_inputs(const std::string& in, const Fixture& f, const std::string& checkpoint) {
  write_edited_checkpoint(in, checkpoint, "float_layers", "model", "n_layer", 2.5);
  write_edited_checkpoint(in, checkpoint, "many_layers", "model", "n_layer", 10000000);
  write_edited_checkpoint(in, checkpoint, "seq_float", "model", "max_seq_len", 1e12);
  write_edited_checkpoint(in, checkpoint, "seq_int", "model", "max_seq_len", int64_t(1000000000000));
  write_edited_checkpoint(in, checkpoint, "arch_number", "model", "arch", 3);
  write_edited_checkpoint(in, checkpoint, "bias_string", "model", "bias", "yes");
  write_edited_checkpoint(in, checkpoint, "dropout_big", "model", "dropout", 1.5);
  write_edited_checkpoint(in, checkpoint, "train_batch", "train", "batch_size", int64_t(1000000000000));
  write_edited_checkpoint(in, checkpoint, "train_lr_string", "train", "lr", "fast");
  write_edited_checkpoint(in, checkpoint, "train_steps_float", "train", "steps", 10.5);
  // In every range, but 1024 blocks of width 65536: about 53 trillion parameters.
  fs::copy(checkpoint + "/last", in + "/huge_model", fs::copy_options::recursive);
  auto huge = nlohmann::json::parse(read_text(in + "/huge_model/config.json"));
  huge["model"]["n_layer"] = 1024;
  huge["model"]["d_model"] = 65536;
  huge["model"]["n_head"] = 64;
  write_text(in + "/huge_model/config.json", huge.dump());
  write_text(in + "/float_config.json", R"({"arch": "gpt", "n_layer": 2.5, "n_head": 2, "d_model": 16})");
  write_text(in + "/layers_config.json", R"({"arch": "gpt", "n_layer": 10000000, "n_head": 2, "d_model": 16})");
  write_text(in + "/bias_config.json", R"({"arch": "gpt", "n_layer": 1, "n_head": 2, "d_model": 16, "bias": "yes"})");
  write_hf_gpt2(in + "/hf_layers", 10000000, 64);
  write_hf_gpt2(in + "/hf_float", 2.5, 64);
  write_hf_gpt2(in + "/hf_huge", 1024, 65536);
  const CliResult t5 = run_cli("train --data " + f.data_dir + " --out " + in + "/t5 --arch t5 --n-layer 1 --n-head 4 "
                               "--d-model 16 --seq-len 16 --batch-size 2 --steps 1 --warmup 0 --eval-iters 1 --device cpu");
  INFO(t5.err);
  REQUIRE(t5.exit_code == 0);
  // 120,000 bytes: about as long as one argv string may be (Linux: 128 KiB); a t5's relative positions do not
  // bound its input, and its encoder's attention over it would need hundreds of GB.
  std::string prompt;
  for (int i = 0; prompt.size() < 120000; ++i) prompt += std::string(1, char('a' + (i * 7919) % 26)) + (i % 5 ? "" : " ");
  write_text(in + "/big_prompt.txt", prompt);
}

using Tensors = std::map<std::string, torch::Tensor>;

// The name in TENSORS that ends with SUFFIX (GPT-2's names may carry the "transformer." prefix).
std::string name_ending(const Tensors& tensors, const std::string& suffix) {
  for (const auto& item : tensors) {
    if (item.first.size() >= suffix.size() && item.first.compare(item.first.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return item.first;
    }
  }
  throw std::runtime_error("the exported model has no tensor ending in " + suffix);
}

// A copy of the Hugging Face directory BASE as DIR whose model.safetensors holds TENSORS.
void hf_with_tensors(const std::string& base, const std::string& dir, const Tensors& tensors) {
  fs::copy(base, dir, fs::copy_options::recursive);
  lmzoo::write_safetensors(dir + "/model.safetensors", {tensors.begin(), tensors.end()});
}

// A copy of the Hugging Face directory BASE as DIR whose model.safetensors is BYTES.
void hf_with_bytes(const std::string& base, const std::string& dir, const std::string& bytes) {
  fs::copy(base, dir, fs::copy_options::recursive);
  write_text(dir + "/model.safetensors", bytes);
}

// BYTES (a safetensors file) with the first FROM in its header replaced by TO, of the same length.
std::string header_edited(std::string bytes, const std::string& from, const std::string& to) {
  const size_t header_end = 8 + size_t(bytes[0] & 0xff) + (size_t(bytes[1] & 0xff) << 8);
  const size_t at = bytes.find(from, 8);
  if (at == std::string::npos || at + from.size() > header_end || from.size() != to.size()) {
    throw std::runtime_error("cannot edit the header: '" + from + "' not found");
  }
  return bytes.replace(at, from.size(), to);
}

// Hugging Face directories that import refuses (hostile safetensors, integer or non-finite weights, shapes),
// corpora without text, and data whose ids exceed the model's vocabulary: a manifest edited to a larger
// vocab_size (bigvocab) and shards whose every id is the vocabulary size (oov).
// (The rows use {ckpt} as it is; the model to import needs biases and is trained here.)
void write_io_inputs(const std::string& in, const Fixture& f, const std::string& /*checkpoint*/) {
  write_text(in + "/blank.txt", "  \t \n   \n\r\n ");
  write_text(in + "/newlines.txt", "\n\n\n\n");
  write_text(in + "/blank.jsonl", "{\"text\": \"  \"}\n{\"text\": \"\\n\\n\"}\n");
  const std::string hf = in + "/hf", gpt2 = in + "/gpt2";  // GPT-2's shape (biases) for export --format hf
  const CliResult trained = run_cli("train --data " + f.data_dir + " --out " + gpt2 +
                                    " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --steps 1 --bias --device cpu");
  const CliResult exported = run_cli("export --checkpoint " + gpt2 + " --format hf --out " + hf);
  if (trained.exit_code != 0 || exported.exit_code != 0) {
    throw std::runtime_error("cannot make the GPT-2 directory to import: " + trained.err + exported.err);
  }
  const Tensors base = lmzoo::load_safetensors_dir(hf);
  const std::string wte = name_ending(base, "wte.weight"), ln_f = name_ending(base, "ln_f.bias");
  const std::string attn = name_ending(base, "h.0.attn.c_attn.weight");
  auto variant = [&](const std::string& name, const std::function<void(Tensors&)>& edit) {
    Tensors tensors;
    for (const auto& [key, value] : base) tensors[key] = value.clone();
    edit(tensors);
    hf_with_tensors(hf, in + "/" + name, tensors);
  };
  variant("hf_int64", [&](Tensors& t) { t[wte] = t[wte].to(torch::kLong); });
  variant("hf_int32", [&](Tensors& t) { t[attn] = t[attn].to(torch::kInt); });
  variant("hf_bool", [&](Tensors& t) { t[ln_f] = t[ln_f].to(torch::kBool); });
  variant("hf_nan", [&](Tensors& t) { t[wte][3][5] = NAN; });
  variant("hf_inf", [&](Tensors& t) { t[ln_f].fill_(INFINITY); });
  variant("hf_f16_neg_inf", [&](Tensors& t) {
    t[attn] = t[attn].to(torch::kHalf);
    t[attn][0][0] = -INFINITY;
  });
  variant("hf_shape", [&](Tensors& t) { t[wte] = t[wte].narrow(0, 0, t[wte].size(0) - 1).contiguous(); });
  variant("hf_missing", [&](Tensors& t) { t.erase(ln_f); });
  variant("hf_extra", [&](Tensors& t) { t["lm_zoo_extra.weight"] = torch::ones({2}); });
  const std::string bytes = read_text(hf + "/model.safetensors");
  hf_with_bytes(hf, in + "/hf_latin1_name", header_edited(bytes, "wte.weight", "wt\xE9.weight"));
  hf_with_bytes(hf, in + "/hf_latin1_metadata", header_edited(bytes, "\"pt\"", "\"p\xE9\""));
  hf_with_bytes(hf, in + "/hf_truncated", bytes.substr(0, 8 + 10));
  hf_with_bytes(hf, in + "/hf_not_json", header_edited(bytes, "{", "["));
  hf_with_bytes(hf, in + "/hf_bad_dtype", header_edited(bytes, "\"F32\"", "\"X32\""));
  hf_with_bytes(hf, in + "/hf_offsets", header_edited(bytes, "[0,", "[4,"));
  const std::string twice = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                            "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  hf_with_bytes(hf, in + "/hf_twice", std::string(1, char(twice.size())) + std::string(7, '\0') + twice + "abcd");

  fs::copy(f.data_dir, in + "/bigvocab", fs::copy_options::recursive);
  auto manifest = nlohmann::json::parse(read_text(in + "/bigvocab/manifest.json"));
  manifest["vocab_size"] = f.vocab_size + 100;
  write_text(in + "/bigvocab/manifest.json", manifest.dump());
  fs::copy(f.data_dir, in + "/oov", fs::copy_options::recursive);
  for (const char* shard : {"/oov/train_0000.bin", "/oov/val_0000.bin"}) {
    const std::string path = in + shard;
    std::string ids = read_text(path);
    for (size_t i = 0; i + 1 < ids.size(); i += 2) ids[i] = char(f.vocab_size & 0xff), ids[i + 1] = char(f.vocab_size >> 8);
    write_text(path, ids);
  }
}

// tokenizer.json directories the loader refuses: an unknown decoder, a merge naming a token outside the vocabulary,
// an added token whose id is another token's, malformed JSON.
void write_tokenizer_json_inputs(const std::string& in) {
  const auto dir_with = [&in](const std::string& name, const std::string& json) {
    fs::create_directories(in + "/" + name);
    write_text(in + "/" + name + "/tokenizer.json", json);
  };
  const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  dir_with("hfjson_unknown", "{" + model + R"(, "decoder": {"type": "CTC"}})");
  dir_with("hfjson_merge", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a q"]}})");
  dir_with("hfjson_collide", "{" + model + R"(, "added_tokens": [{"id": 1, "content": "<s>", "special": true}]})");
  dir_with("hfjson_malformed", "{" + model);
  // One id of 2e9, inside the id range: per-id tables up to it would take ~144 GB.
  dir_with("hfjson_sparse", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2000000000}, "merges": ["a b"]}})");
}

// Inputs shared by the rows: files that are not UTF-8, empty, not a tokenizer; a data directory with an id
// outside its vocabulary; a checkpoint whose config fails validation.
void write_inputs(const std::string& in, const Fixture& f, const std::string& checkpoint) {
  write_text(in + "/latin1.txt", "caf\xE9 au lait\n");                      // 0xE9 at byte offset 3
  write_text(in + "/latin1.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"caf\xE9\"}\n");  // line 2, offset 30
  write_text(in + "/latin1_pairs.tsv", "a cat\tthe cat\nle caf\xE9\tthe coffee\n");
  write_text(in + "/pairs.tsv", "a cat\tthe cat\na dog\tthe dog\n");
  write_text(in + "/empty.txt", "");
  write_text(in + "/junk.model", "this is no SentencePiece model");
  write_text(in + "/ids.txt", "5 6 99999\n");
  fs::create_directories(in + "/emptydir");
  fs::copy(f.data_dir, in + "/corrupt", fs::copy_options::recursive);
  {
    std::fstream shard(in + "/corrupt/val_0000.bin", std::ios::in | std::ios::out | std::ios::binary);
    shard.seekp(20);
    shard.write("\xFF\xFF", 2);  // token 10 of the val split: id 65535
  }
  fs::copy(checkpoint + "/last", in + "/badconfig", fs::copy_options::recursive);
  auto config = nlohmann::json::parse(read_text(in + "/badconfig/config.json"));
  config["model"]["n_head"] = 3;  // d_model 16 is not a multiple of it
  write_text(in + "/badconfig/config.json", config.dump());
  write_limit_inputs(in, f, checkpoint);
  write_io_inputs(in, f, checkpoint);
  write_tokenizer_json_inputs(in);
}

// clang-format off
const std::vector<BadInput> kBadInputs = {
    // lmzoo itself
    {"", 2, "no command given"},
    {"frobnicate", 2, "unknown command 'frobnicate'"},
    // tokenizer
    {"tokenizer train --input {text} --out tok --vocab-size 10", 2, "--vocab-size 10 is too small: the minimum is 364"},
    {"tokenizer train --input {text} --out tok --max-sentences 0", 2, "--max-sentences must be positive"},
    {"tokenizer train --input {in}/latin1.txt --out tok --vocab-size 400", 1,
     "latin1.txt is not UTF-8 text: invalid byte 0xE9 at byte offset 3"},
    {"tokenizer train --input {in}/empty.txt --out tok --vocab-size 400", 1, "contains no text"},
    {"tokenizer encode --tokenizer {in}/junk.model", 1, "invalid tokenizer model: not a SentencePiece model file"},
    {"tokenizer encode --tokenizer {in}/empty.txt", 1, "invalid tokenizer model: the file is empty"},
    {"tokenizer encode --tokenizer {tok}", 1, "stdin is not UTF-8 text: invalid byte 0xE9 at byte offset 3",
     "latin1.txt"},
    {"tokenizer decode --tokenizer {tok}", 1, "'99999' on stdin is not a token id", "ids.txt"},
    {"tokenizer encode --tokenizer {in}/hfjson_unknown", 1, "hfjson_unknown/tokenizer.json: decoder.type: 'CTC' is not supported"},
    {"tokenizer encode --tokenizer {in}/hfjson_collide", 1, "tokenizer.json: added_tokens[0].id: 1 collides"},
    {"tokenizer encode --tokenizer {in}/hfjson_malformed", 1, "hfjson_malformed/tokenizer.json: (document): not valid JSON"},
    {"tokenizer encode --tokenizer {in}/hfjson_sparse", 1,
     "hfjson_sparse/tokenizer.json: model.vocab[\"ab\"]: id 2000000000 is too large: lmzoo keeps a row per id"},
    {"prepare --tokenizer {in}/hfjson_sparse --input {text} --out out", 1, "model.vocab[\"ab\"]: id 2000000000 is too large"},
    {"prepare --tokenizer {in}/hfjson_merge --input {text} --out out", 1,
     "hfjson_merge/tokenizer.json: model.merges[0]: token 'q' is not in model.vocab"},
    {"tokenizer encode --add-special-tokens --tokenizer {tok}", 2, "--add-special-tokens applies to tokenizer.json tokenizers only"},
    // prepare
    {"prepare --tokenizer {tok} --input {in}/empty.txt --out new/out", 1, "nothing to prepare"},
    {"prepare --tokenizer {tok} --input {text} {in}/latin1.txt --out out", 1,
     "latin1.txt is not UTF-8 text: invalid byte 0xE9 at byte offset 3"},
    {"prepare --tokenizer {tok} --input {in}/latin1.jsonl --out out", 1, "invalid byte 0xE9 at byte offset 30 (line 2)"},
    {"prepare --tokenizer {tok} --pairs {in}/latin1_pairs.tsv --out out", 1, "invalid byte 0xE9 at byte offset 20 (line 2)"},
    {"prepare --tokenizer {tok} --input {text} --pairs {in}/pairs.tsv --out out", 2, "give one of --input, --pairs and --chat, not more"},
    {"prepare --tokenizer {tok} --input {text} --out out --threads -1", 2, "--threads must be >= 0"},
    // train (each fails before a model is built)
    {"train --data {data} --out run --threads 0", 2, "--threads must be at least 1, got 0"},
    {"train --data {data} --out run --steps 0", 2, "steps"},
    {"train --data {data} --out run --device tpu", 2, "--device 'tpu' is not auto, cpu, cuda or cuda:N"},
    {"train --data {data} --out run --preset nope", 2, "unknown preset 'nope'"},
    {"train --data {data} --out run --n-layer 1 --d-model 16 --n-head 3", 2, "model config"},
    {"train --data {in}/nowhere --out run", 1, "data directory not found"},
    // eval
    {"eval --checkpoint {ckpt} --data {data} --threads -4", 2, "--threads must be at least 1, got -4"},
    {"eval --checkpoint {ckpt} --data {data} --stride 0", 2, "--stride must be positive"},
    {"eval --checkpoint {ckpt} --data {data} --split test", 2, "--split must be val or train"},
    {"eval --checkpoint {in}/nowhere --data {data}", 1, "does not exist"},
    {"eval --checkpoint {in}/badconfig --data {data}", 1, "badconfig is corrupt: model config"},
    {"eval --checkpoint {ckpt} --data {in}/corrupt", 1, "val_0000.bin is corrupt: token 10 is id 65535"},
    {"eval --checkpoint {ckpt} --text {in}/latin1.txt", 1, "latin1.txt is not UTF-8 text: invalid byte 0xE9"},
    // generate
    {"generate --checkpoint {ckpt} --prompt \"$(printf 'caf\\351')\"", 2,
     "--prompt is not UTF-8 text: invalid byte 0xE9 at byte offset 3"},
    {"generate --checkpoint {ckpt} --prompt hi --top-p 0", 2, "--top-p must be in (0, 1]"},
    {"generate --checkpoint {ckpt} --prompt hi --temperature nan", 2, "--temperature: 'nan' is not a valid value"},
    {"generate --checkpoint {ckpt} --prompt hi --temperature -1e-300", 2, "--temperature must be a finite number >= 0"},
    {"generate --checkpoint {in}/emptydir --prompt hi", 1, "is not a checkpoint or run directory"},
    // export
    {"export --checkpoint {ckpt} --out .", 1, "--out . is a directory"},
    {"export --checkpoint {ckpt} --out nowhere/model.pt", 1, "directory nowhere does not exist"},
    {"export --checkpoint {in}/nowhere --out model.pt", 1, "does not exist"},
    // io faults, ids, import (issue 25)
    {"export --checkpoint {in}/gpt2 --format hf --out {in}/blank.txt", 1, "blank.txt: Not a directory"},
    {"import {in}/hf_int64 --out ck", 1, "wte.weight' has dtype Long where a floating-point weight belongs"},
    {"import {in}/hf_int32 --out ck", 1, "c_attn.weight' has dtype Int where a floating-point weight belongs"},
    {"import {in}/hf_bool --out ck", 1, "ln_f.bias' has dtype Bool where a floating-point weight belongs"},
    {"import {in}/hf_nan --out ck", 1, "wte.weight' holds 1 NaN or infinite value ("},
    {"import {in}/hf_inf --out ck", 1, "ln_f.bias' holds 16 NaN or infinite values"},
    {"import {in}/hf_f16_neg_inf --out ck", 1, "c_attn.weight' holds 1 NaN or infinite value ("},
    {"import {in}/hf_shape --out ck", 1, "wte.weight' has shape"},
    {"import {in}/hf_missing --out ck", 1, "ln_f.bias', which GPT2LMHeadModel needs"},
    {"import {in}/hf_extra --out ck", 1, "'lm_zoo_extra.weight', which GPT2LMHeadModel as lmzoo builds it has no place for"},
    {"import {in}/hf_latin1_name --out ck", 1,
     "model.safetensors is not a valid safetensors file: the header is not UTF-8: invalid byte 0xE9 at byte offset"},
    {"import {in}/hf_latin1_metadata --out ck", 1, "the header is not UTF-8: invalid byte 0xE9"},
    {"import {in}/hf_truncated --out ck", 1, "runs past the end of the file"},
    {"import {in}/hf_not_json --out ck", 1, "the header is not valid JSON"},
    {"import {in}/hf_bad_dtype --out ck", 1, "has the dtype 'X32', not one of"},
    {"import {in}/hf_offsets --out ck", 1, "bytes for shape"},
    {"import {in}/hf_twice --out ck", 1, "has the key 'a' twice in one object"},
    {"import {in}/hf_nan --out new/deeper/ck", 1, "NaN or infinite"},
    {"prepare --tokenizer {tok} --input {in}/blank.txt --out out", 1, "blank.txt holds no text (only whitespace)"},
    {"prepare --tokenizer {tok} --input {in}/newlines.txt --out new/out", 1, "newlines.txt holds no text (only whitespace)"},
    {"prepare --tokenizer {tok} --input {in}/blank.jsonl --out out", 1, "blank.jsonl holds no text (only whitespace)"},
    {"prepare --tokenizer {tok} --input {in}/blank.txt {in}/newlines.txt --out out", 1,
     "2 input files hold no text (only whitespace)"},
    {"prepare --tokenizer {tok} --input {in}/empty.txt {in}/newlines.txt --out out", 1, "2 input files hold no text"},
    {"eval --checkpoint {ckpt} --text {in}/emptydir", 1, "emptydir is a directory, not a text file"},
    {"eval --checkpoint {ckpt} --text {in}", 1, " is a directory, not a text file"},
    {"eval --checkpoint {ckpt} --data {in}/bigvocab", 1, "more ids than the model's vocabulary of"},
    {"train --data {in}/bigvocab --out run --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --steps 1 --device cpu", 1,
     "more ids than the model's vocabulary of"},
    {"eval --checkpoint {ckpt} --data {in}/oov", 1, "oov/val_0000.bin is corrupt: token 0 is id"},
    {"eval --checkpoint {ckpt} --data {in}/oov --split train", 1, "oov/train_0000.bin is corrupt: token"},
    // presets
    {"presets --show nope", 2, "unknown preset 'nope'"},
    {"presets --frobnicate", 2, "frobnicate"},
    // bench
    {"bench", 2, "takes its vocabulary from a tokenizer: give --data or --vocab-size"},
    {"bench --data {data} --skip -1", 2, "--skip must be >= 0"},
    {"bench --data {data} --threads 0", 2, "--threads must be at least 1"},
    {"bench --data {data} --preset nope", 2, "unknown preset 'nope'"},
    {"bench --data {data} --steps 2 --skip 1 --profile nowhere/trace.json", 1, "cannot write the profile nowhere/trace.json"},
    // limits, ranges, memory (issue 25)
    {"train --data {data} --out run --d-model 1000000000", 2, "d_model must be between 1 and 65536, got 1000000000"},
    {"train --data {data} --out run --n-layer 10000000", 2, "n_layer must be between 1 and 1024, got 10000000"},
    {"train --data {data} --out run --seq-len 1000000000000", 2, "max_seq_len must be between 1 and 16777216"},
    {"train --data {data} --out run --n-head 100000", 2, "n_head must be between 1 and 4096"},
    {"train --data {data} --out run --d-ff 2000000", 2, "d_ff must be between 0 and 1048576"},
    {"train --data {data} --out run --vocab-multiple 1000000", 2, "vocab_multiple must be between 1 and 65536"},
    {"train --data {data} --out run --norm-eps 5", 2, "norm_eps must be in (0, 1]"},
    {"train --data {data} --out run --batch-size 1000000000000", 2, "batch_size must be between 1 and 1048576"},
    {"train --data {data} --out run --grad-accum 10000000", 2, "grad_accum must be between 1 and 1048576"},
    {"train --data {data} --out run --eval-iters 10000000", 2, "eval_iters must be between 1 and 1048576"},
    {"train --data {data} --out run --lr 1e9", 2, "lr must be in (0, 10]"},
    {"train --data {data} --out run --n-layer 1024 --d-model 16384 --n-head 16", 1, "but this machine has"},
    {"train --data {data} --out run --batch-size 1048576 --seq-len 4096", 1,
     "at batch 1048576 x 4096 tokens needs about"},
    {"train --data {data} --out run --config {in}/float_config.json", 2, "model config: n_layer must be an integer, got 2.5"},
    {"train --data {data} --out run --config {in}/layers_config.json", 2, "n_layer must be between 1 and 1024"},
    {"train --data {data} --out run --config {in}/bias_config.json", 2, "bias must be true or false, got \"yes\""},
    {"train --data {data} --out run --steps 5 --tie-embeddings=5", 2, "--tie-embeddings: '5' is not a valid value"},
    {"train --data {data} --out run --dist-timeout 1e300", 2, "--dist-timeout must be a positive number of seconds, at most 86400"},
    {"train --data {data} --out run --threads 100000", 2, "--threads 100000 is too many: at most"},
    {"eval --checkpoint {in}/float_layers --data {data}", 1, "model config: n_layer must be an integer, got 2.5"},
    {"eval --checkpoint {in}/many_layers --data {data}", 1, "n_layer must be between 1 and 1024, got 10000000"},
    {"eval --checkpoint {in}/seq_float --data {data}", 1, "max_seq_len must be an integer"},
    {"eval --checkpoint {in}/seq_int --data {data}", 1, "max_seq_len must be between 1 and 16777216"},
    {"eval --checkpoint {in}/arch_number --data {data}", 1, "arch must be a string, got 3"},
    {"eval --checkpoint {in}/bias_string --data {data}", 1, "bias must be true or false"},
    {"eval --checkpoint {in}/dropout_big --data {data}", 1, "dropout must be in [0, 1)"},
    {"eval --checkpoint {in}/train_batch --data {data}", 1, "training config: batch_size must be between 1 and 1048576"},
    {"eval --checkpoint {in}/train_lr_string --data {data}", 1, "training config: lr must be a number"},
    {"eval --checkpoint {in}/train_steps_float --data {data}", 1, "training config: steps must be an integer, got 10.5"},
    {"eval --checkpoint {in}/huge_model --data {data}", 1, "evaluating at --batch-size 8 needs about"},
    {"eval --checkpoint {ckpt} --data {data} --batch-size 1000000000000", 2, "--batch-size must be between 1 and 1048576"},
    {"eval --checkpoint {ckpt} --data {data} --threads 100000", 2, "is too many"},
    {"generate --checkpoint {ckpt} --prompt hi --max-new-tokens 9223372036854775807", 2,
     "--max-new-tokens 9223372036854775807 is past the maximum of 1048576"},
    {"generate --checkpoint {in}/t5 --prompt hi --max-new-tokens 9223372036854775807", 2, "is past the maximum of 1048576"},
    {"generate --checkpoint {ckpt} --prompt hi --beams 1000000000", 1, "with 1000000000 beams needs about"},
    {"generate --checkpoint {in}/t5 --prompt hi --beams 1000000000", 1, "with 1000000000 beams"},
    {"generate --checkpoint {in}/t5 --prompt \"$(cat {in}/big_prompt.txt)\"", 1, "-token input needs about"},
    {"generate --checkpoint {in}/huge_model --prompt hi", 1, "parameters needs about"},
    {"generate --checkpoint {in}/seq_int --prompt hi", 1, "max_seq_len must be between"},
    {"export --checkpoint {in}/huge_model --out model.pt", 1, "but this machine has"},
    {"export --checkpoint {in}/float_layers --out model.pt", 1, "n_layer must be an integer"},
    {"import {in}/hf_layers --out imported", 2, "n_layer must be between 1 and 1024"},
    {"import {in}/hf_float --out imported", 2, "'n_layer' is not an integer"},
    {"import {in}/hf_huge --out imported", 1, "importing"},
    {"tokenizer train --input {text} --out tok --vocab-size 2000000000", 2,
     "--vocab-size 2000000000 is too large: the maximum is 1000000"},
    {"prepare --tokenizer {tok} --input {text} --out out --threads 100000", 2, "is too many"},
    {"bench --data {data} --threads 100000", 2, "is too many"},
    {"bench --data {data} --batch-size 1000000000000", 2, "batch_size must be between 1 and 1048576"},
    {"bench --data {data} --seq-len 1000000000000", 2, "max_seq_len must be between"},
    {"bench --data {data} --batch-size 1048576 --seq-len 4096", 1, "needs about"},
};
// clang-format on

using PathNames = std::vector<std::pair<std::string, std::string>>;

// Runs ROWS two at a time (each process spends most of its ~0.7 s in LibTorch's static initialisation), with the
// PATHS ({in}, {data}, ...) put into their args, fragments and working directories; then checks each row's exit
// code, its one stderr line holding the fragment, no stack trace, nothing left in its fresh working directory,
// and that no file was added under INPUTS.
void check_bad_inputs(const std::vector<BadInput>& rows, const PathNames& paths, const std::vector<std::string>& inputs) {
  auto with_paths = [&](std::string text) {
    for (const auto& [key, value] : paths) text = replace_all(text, key, value);
    return text;
  };
  const auto inputs_before = listing(inputs);
  std::vector<std::string> args(rows.size());
  std::vector<RowOutcome> outcomes(rows.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < rows.size(); i = next++) {
      args[i] = with_paths(rows[i].args);
      const std::string stdin_file = rows[i].stdin_file.empty() ? "" : with_paths("{in}/" + rows[i].stdin_file);
      outcomes[i] = run_in_fresh_dir(args[i], stdin_file, with_paths(rows[i].cwd));
    }
  };
  auto second = std::async(std::launch::async, worker);
  worker();
  second.get();

  for (size_t i = 0; i < rows.size(); ++i) {
    const CliResult& r = outcomes[i].result;
    INFO("lmzoo " << args[i] << "\nexit " << r.exit_code << ", stderr: " << r.err);
    CHECK(r.exit_code == rows[i].exit_code);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find(with_paths(rows[i].fragment)) != std::string::npos);
    for (const char* trace : {"terminate", "Exception raised from", "frame #"}) CHECK(r.err.find(trace) == std::string::npos);
    INFO("left in its working directory: " << (outcomes[i].left.empty() ? "nothing" : outcomes[i].left.front()));
    CHECK(outcomes[i].left.empty());
  }
  const auto inputs_after = listing(inputs);
  std::vector<std::string> added;
  std::set_difference(inputs_after.begin(), inputs_after.end(), inputs_before.begin(), inputs_before.end(),
                      std::back_inserter(added));
  INFO("left beside the inputs: " << (added.empty() ? std::string("nothing") : added.front()));
  CHECK(added.empty());
}

}  // namespace

TEST_CASE("cli: every bad input gives its exit code, one stderr line and no file", "[cli][bad_inputs]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir root;
  const std::string in = root / "in", ckpt = root / "ckpt";
  fs::create_directories(in);
  const CliResult trained = run_cli("train --data " + f.data_dir + " --out " + ckpt +
                                    " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 2 --steps 1 --warmup 0 "
                                    "--eval-iters 1 --device cpu");
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  write_inputs(in, f, ckpt);
  REQUIRE(kBadInputs.size() >= 40);

  check_bad_inputs(kBadInputs, {{"{tok}", f.tokenizer_dir}, {"{data}", f.data_dir}, {"{text}", f.text_file},
                                {"{in}", in}, {"{ckpt}", ckpt}},
                   {in, ckpt, f.dir});
}

namespace {

// A tiny Llama config.json (no weights: the rows fail on the config) with FIELD set to VALUE, as IN/NAME.
void write_hf_llama_with(const std::string& in, const std::string& name, const std::string& field,
                         const nlohmann::json& value) {
  nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", 97},
                           {"hidden_size", 32}, {"intermediate_size", 88}, {"num_hidden_layers", 2},
                           {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"max_position_embeddings", 32},
                           {"rms_norm_eps", 1e-6}, {"rope_theta", 500000.0}, {"hidden_act", "silu"},
                           {"tie_word_embeddings", false}};
  config[field] = value;
  fs::create_directories(in + "/" + name);
  write_text(in + "/" + name + "/config.json", config.dump());
}

const std::string kAdapterModule = "base_model.model.model.layers.0.self_attn.q_proj";

// A PEFT adapter IN/NAME on the first q_proj of a d_model-16 Llama: CONFIG_TEXT as adapter_config.json, lora_A
// (RANK, 16) and lora_B (16, RANK) drawn at random, then changed by EDIT.
void write_adapter(const std::string& in, const std::string& name, const std::string& config_text, int64_t rank = 2,
                   const std::function<void(torch::Tensor&, torch::Tensor&)>& edit = {}) {
  fs::create_directories(in + "/" + name);
  write_text(in + "/" + name + "/adapter_config.json", config_text);
  torch::Tensor A = torch::randn({rank, 16}), B = torch::randn({16, rank});
  if (edit) edit(A, B);
  lmzoo::write_safetensors(in + "/" + name + "/adapter_model.safetensors",
                           {{kAdapterModule + ".lora_A.weight", A}, {kAdapterModule + ".lora_B.weight", B}});
}

// Issue 39's inputs: a tiny Llama base and a LoRA run on it, PEFT adapters for that base with hostile settings
// or tensors, Llama config.json files whose rope_scaling is not an object, and a working directory holding a run
// directory named like an init scheme (bert).
void write_issue39_inputs(const std::string& in, const Fixture& f) {
  const std::string tiny = " --n-layer 1 --n-head 2 --d-model 16 --seq-len 16 --batch-size 2 --steps 1 --warmup 0 "
                           "--eval-iters 1 --device cpu";
  const CliResult base = run_cli("train --data " + f.data_dir + " --out " + in + "/base" + tiny +
                                 " --position rope --norm rmsnorm --activation swiglu");
  const CliResult lora = run_cli("train --data " + f.data_dir + " --out " + in + "/lora --init " + in + "/base" +
                                 " --lora-rank 2 --batch-size 2 --steps 1 --warmup 0 --eval-iters 1 --device cpu");
  if (base.exit_code != 0 || lora.exit_code != 0) throw std::runtime_error("cannot train the base: " + base.err + lora.err);
  fs::create_directories(in + "/cwd_bert");
  fs::copy(in + "/base", in + "/cwd_bert/bert", fs::copy_options::recursive);

  const nlohmann::json ok = {{"peft_type", "LORA"}, {"r", 2}, {"lora_alpha", 4}, {"bias", "none"},
                             {"lora_dropout", 0.0}, {"target_modules", {"q_proj"}}};
  auto with = [&ok](const std::string& key, const nlohmann::json& value) {
    nlohmann::json j = ok;
    j[key] = value;
    return j.dump();
  };
  torch::manual_seed(39);
  write_adapter(in, "peft_ok", ok.dump());
  write_adapter(in, "peft_alpha_neg", with("lora_alpha", -32));
  write_adapter(in, "peft_alpha_huge", with("lora_alpha", 1e300));
  write_adapter(in, "peft_alpha_string", with("lora_alpha", "16"));
  nlohmann::json rslora = ok;
  rslora["lora_alpha"] = 1000000;
  rslora["use_rslora"] = true;  // 1e6 / sqrt(2) is lmzoo's 1e6 sqrt(2) / 2: past 1048576
  write_adapter(in, "peft_rslora_huge", rslora.dump());
  write_adapter(in, "peft_rslora_string", with("use_rslora", "yes"));
  write_adapter(in, "peft_dropout", with("lora_dropout", 1.5));
  write_adapter(in, "peft_array", "[]");
  write_adapter(in, "peft_type_number", with("peft_type", 5));
  write_adapter(in, "peft_bias_number", with("bias", 3));
  write_adapter(in, "peft_rank_huge", with("r", int64_t(1) << 62));
  write_adapter(in, "peft_rank_wide", with("r", 32), 32);  // q_proj is 16 x 16
  write_adapter(in, "peft_nan_b", ok.dump(), 2, [](torch::Tensor&, torch::Tensor& B) { B[3][1] = NAN; });
  write_adapter(in, "peft_inf_a", ok.dump(), 2, [](torch::Tensor& A, torch::Tensor&) { A[0][0] = -INFINITY; });
  write_adapter(in, "peft_int_b", ok.dump(), 2, [](torch::Tensor&, torch::Tensor& B) { B = B.to(torch::kInt); });

  write_hf_llama_with(in, "hf_rope_string", "rope_scaling", "linear");
  write_hf_llama_with(in, "hf_rope_list", "rope_scaling", nlohmann::json::array({2.0}));
  write_hf_llama_with(in, "hf_rope_params_string", "rope_parameters", "default");
}

// clang-format off
const std::vector<BadInput> kIssue39Inputs = {
    // PEFT import: adapter_config.json's fields, each named with the file
    {"import {in}/peft_alpha_neg --lora-base {in}/base --out ck", 2,
     "adapter_config.json: lora_alpha must be in (0, 1048576], got -32"},
    {"import {in}/peft_alpha_huge --lora-base {in}/base --out ck", 2,
     "adapter_config.json: lora_alpha must be in (0, 1048576], got 1e+300"},
    {"import {in}/peft_alpha_string --lora-base {in}/base --out ck", 2,
     "adapter_config.json: lora_alpha must be a number in (0, 1048576], got \"16\""},
    {"import {in}/peft_rslora_huge --lora-base {in}/base --out ck", 2,
     "adapter_config.json: lora_alpha 1000000 with use_rslora and r 2 becomes lmzoo's lora_alpha 1414213.56 "
     "(alpha * sqrt(r), for its scale alpha / r), which must be in (0, 1048576]"},
    {"import {in}/peft_rslora_string --lora-base {in}/base --out ck", 2,
     "adapter_config.json: use_rslora must be true or false, got \"yes\""},
    {"import {in}/peft_dropout --lora-base {in}/base --out ck", 2,
     "adapter_config.json: lora_dropout must be in [0, 1), got 1.5"},
    {"import {in}/peft_array --lora-base {in}/base --out ck", 2,
     "adapter_config.json: must hold a JSON object (PEFT's LoraConfig), got []"},
    {"import {in}/peft_type_number --lora-base {in}/base --out ck", 2, "adapter_config.json: peft_type must be a string, got 5"},
    {"import {in}/peft_bias_number --lora-base {in}/base --out ck", 2, "adapter_config.json: bias must be a string, got 3"},
    {"import {in}/peft_rank_huge --lora-base {in}/base --out ck", 2,
     "adapter_config.json: r must be an integer between 1 and 65536, got 4611686018427387904"},
    {"import {in}/peft_rank_wide --lora-base {in}/base --out ck", 2,
     "adapter_config.json: r 32 exceeds the smaller side (16) of the 16 x 16 projection"},
    // PEFT import: the adapter tensors, checked as a model's weights are
    {"import {in}/peft_nan_b --lora-base {in}/base --out ck", 1,
     "adapter_model.safetensors: tensor '" + kAdapterModule + ".lora_B.weight' holds 1 NaN or infinite value"},
    {"import {in}/peft_inf_a --lora-base {in}/base --out new/deeper/ck", 1,
     "adapter_model.safetensors: tensor '" + kAdapterModule + ".lora_A.weight' holds 1 NaN or infinite value"},
    {"import {in}/peft_int_b --lora-base {in}/base --out ck", 1,
     "adapter_model.safetensors: tensor '" + kAdapterModule + ".lora_B.weight' has dtype Int where a floating-point "
     "weight belongs"},
    // HF import: rope settings that are not a default-typed object
    {"import {in}/hf_rope_string --out imported", 2, "config.json: rope_scaling \"linear\" is not supported"},
    {"import {in}/hf_rope_list --out imported", 2, "config.json: rope_scaling [2.0] is not supported"},
    {"import {in}/hf_rope_params_string --out imported", 2, "config.json: rope_parameters \"default\" is not supported"},
    // train: --init read as the scheme beside a directory of that name, lora_alpha's range, --init with --resume
    {"train --data {data} --init bert --lora-rank 4 --out run", 2,
     "--init bert is both a weight init scheme and the checkpoint directory ./bert: give --init ./bert", "",
     "{in}/cwd_bert"},
    {"train --data {data} --init bert --out run --steps 1", 2, "--init bert is both a weight init scheme", "",
     "{in}/cwd_bert"},
    {"train --data {data} --init gpt2 --lora-rank 4 --out run", 2,
     "--lora-rank needs --init: the checkpoint whose weights LoRA adapts (--init gpt2 names a weight init scheme)"},
    {"train --data {data} --out run --init {in}/base --lora-rank 2 --lora-alpha 1e30", 2,
     "lora_alpha must be in (0, 1048576], got 1e+30"},
    {"train --data {data} --out run --init {in}/base --lora-rank 2 --lora-alpha 0", 2,
     "lora_alpha must be in (0, 1048576], got 0"},
    {"train --resume {in}/lora --init {in}/base", 2,
     "--init applies to a new run; --resume {in}/lora continues from its own base ("},
    {"train --resume {in}/lora --init {in}/elsewhere --steps 3", 2, "--init applies to a new run; --resume {in}/lora"},
    {"train --resume {in}/lora --init {in}/base --dry-run", 2, "--init applies to a new run; --resume {in}/lora"},
};
// clang-format on

}  // namespace

TEST_CASE("cli: hostile PEFT adapters, rope_scaling forms and misleading train refusals (issue 39)", "[cli][bad_inputs]") {
  const Fixture& f = tiny_corpus("bpe");
  TempDir root;
  const std::string in = root / "in";
  fs::create_directories(in);
  write_issue39_inputs(in, f);
  check_bad_inputs(kIssue39Inputs, {{"{data}", f.data_dir}, {"{in}", in}}, {in, f.dir});

  // What the refusals point to works: the well-formed adapter imports, and ./bert is the checkpoint.
  const CliResult imported = run_cli("import " + in + "/peft_ok --lora-base " + in + "/base --out " + root / "ok");
  INFO(imported.err);
  CHECK(imported.exit_code == 0);
  const RowOutcome dry = run_in_fresh_dir("train --data " + f.data_dir + " --init ./bert --lora-rank 2 --dry-run", "",
                                          in + "/cwd_bert");
  INFO(dry.result.err);
  CHECK(dry.result.exit_code == 0);
}

TEST_CASE("cli: --version names lmzoo's version and the LibTorch it was built against", "[cli][bad_inputs]") {
  const CliResult r = run_cli("--version");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("lmzoo ", 0) == 0);
  CHECK(r.out.find(std::string("(LibTorch ") + TORCH_VERSION + ", CUDA ") != std::string::npos);
}

TEST_CASE("cli: help texts state each default once", "[cli][bad_inputs]") {
  for (const char* command : {"tokenizer train", "prepare", "train", "eval", "generate", "export", "presets", "bench"}) {
    const CliResult r = run_cli(std::string(command) + " --help");
    INFO("lmzoo " << command << " --help\n" << r.out);
    CHECK(r.exit_code == 0);
    // An option's entry, wrapped over several lines, runs until the next line whose first non-blank is '-'.
    std::string entry;
    std::istringstream lines(r.out + "\n  -");
    for (std::string line; std::getline(lines, line);) {
      const auto text = line.find_first_not_of(' ');
      if (text != std::string::npos && line[text] == '-') {
        const auto first = entry.find("(default:");
        CHECK((first == std::string::npos || entry.find("(default:", first + 1) == std::string::npos));
        entry.clear();
      }
      entry += line + " ";
    }
  }
}
