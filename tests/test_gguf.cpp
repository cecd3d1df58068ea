// GGUF files (issue 42): the writer's bytes against a hand-computed header, q8_0 against its formula, the reader's
// refusals of damaged files, export refusals of what llama.cpp cannot run, and export -> import exact for f32.
// Leaves out: llama.cpp itself (test_gguf_llama_cpp.cpp).
#include <cstring>
#include <filesystem>
#include <fstream>

#include "data/gguf/gguf_import_tokenizer.h"
#include "data/gguf/gguf_reader.h"
#include "data/gguf/gguf_tokenizer.h"
#include "data/gguf/gguf_writer.h"
#include "data/gguf/q8_0.h"
#include "models/gguf_architecture.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/model_fixtures.h"
#include "tests/test_gguf_models.h"
#include "train/interchange/gguf_interchange.h"

namespace fs = std::filesystem;
using namespace lmzoo;
using namespace lmzoo::test;

namespace {

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}

std::string tiny_file() {
  GgufWriter w;
  w.add("a", GgufValue::u32(7));
  w.add_tensor("t", torch::tensor({1.5f, -2.0f}), GgufTensorType::kF32);
  TempDir tmp;
  w.write(tmp / "x.gguf");
  return read_text(tmp / "x.gguf");
}

std::string refusal(const std::string& bytes) {
  try {
    GgufFile::parse(bytes, "bad.gguf");
  } catch (const GgufFormatError& e) {
    return e.what();
  }
  return "";
}

void patch_u32(std::string& s, size_t at, uint32_t v) { std::memcpy(&s[at], &v, 4); }
void patch_u64(std::string& s, size_t at, uint64_t v) { std::memcpy(&s[at], &v, 8); }

}  // namespace

TEST_CASE("a one-key one-tensor GGUF file has the bytes GGUF v3 prescribes", "[gguf]") {
  std::string expect;
  put<uint32_t>(expect, 0x46554747);  // "GGUF"
  put<uint32_t>(expect, 3);
  put<uint64_t>(expect, 1);  // tensors
  put<uint64_t>(expect, 1);  // keys
  put<uint64_t>(expect, 1);
  expect += "a";
  put<uint32_t>(expect, 4);  // uint32
  put<uint32_t>(expect, 7);
  put<uint64_t>(expect, 1);
  expect += "t";
  put<uint32_t>(expect, 1);  // n_dims
  put<uint64_t>(expect, 2);  // ne[0]
  put<uint32_t>(expect, 0);  // f32
  put<uint64_t>(expect, 0);  // offset
  REQUIRE(expect.size() == 74);
  expect.resize(96, '\0');  // aligned to 32
  put<float>(expect, 1.5f);
  put<float>(expect, -2.0f);
  expect.resize(128, '\0');
  CHECK(expect.substr(0, 4) == "GGUF");
  CHECK(tiny_file() == expect);

  const GgufFile f = GgufFile::parse(expect, "tiny.gguf");
  CHECK(f.version() == 3);
  CHECK(f.get("a").as_int("a") == 7);
  REQUIRE(f.tensors().size() == 1);
  CHECK(f.tensors()[0].shape == std::vector<int64_t>{2});
  CHECK(torch::equal(f.tensor(f.tensors()[0]), torch::tensor({1.5f, -2.0f})));
}

TEST_CASE("every value type and tensor type reads back as written", "[gguf]") {
  GgufWriter w;
  w.add("s", GgufValue::string("héllo"));
  w.add("b", GgufValue::boolean(true));
  w.add("f", GgufValue::f32(0.25f));
  w.add("i", GgufValue::i32(-5));
  w.add("u", GgufValue::u64(uint64_t{1} << 40));
  w.add("strs", GgufValue::string_array({"a", "", "c d"}));
  w.add("nums", GgufValue::number_array(GgufValueType::kInt32, {1, -2, 3}));
  torch::manual_seed(1);
  const torch::Tensor m = torch::randn({3, 64});
  w.add_tensor("f32", m, GgufTensorType::kF32);
  w.add_tensor("f16", m, GgufTensorType::kF16);
  w.add_tensor("bf16", m, GgufTensorType::kBF16);
  w.add_tensor("q8", m, GgufTensorType::kQ8_0);
  TempDir tmp;
  w.write(tmp / "all.gguf");
  const GgufFile f = GgufFile::open(tmp / "all.gguf");
  CHECK(f.get("s").as_string("s") == "héllo");
  CHECK(f.get("b").as_int("b") == 1);
  CHECK(f.get("f").as_number("f") == 0.25);
  CHECK(f.get("i").as_int("i") == -5);
  CHECK(f.get("u").as_int("u") == (int64_t{1} << 40));
  CHECK(f.get("strs").strings == std::vector<std::string>{"a", "", "c d"});
  CHECK(f.get("nums").numbers == std::vector<double>{1, -2, 3});
  for (const auto& t : f.tensors()) CHECK(t.offset % 32 == 0);
  CHECK(torch::equal(f.tensor(*f.find_tensor("f32")), m));
  CHECK(torch::equal(f.tensor(*f.find_tensor("f16")), m.to(torch::kHalf).to(torch::kFloat32)));
  CHECK(torch::equal(f.tensor(*f.find_tensor("bf16")), m.to(torch::kBFloat16).to(torch::kFloat32)));
  CHECK(f.find_tensor("q8")->bytes == 3 * 2 * 34);
  CHECK((f.tensor(*f.find_tensor("q8")) - m).abs().max().item<float>() < 0.03f);
}

TEST_CASE("q8_0 blocks are an fp16 max/127 scale and round-half-away int8s", "[gguf]") {
  std::vector<float> x(64, 0.0f);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) * 0.5f;  // max |x| = 8; second block all zero
  const std::string q = quantize_q8_0(torch::tensor(x));
  REQUIRE(q.size() == 68);
  const float d = 8.0f / 127.0f;
  uint16_t d16;
  std::memcpy(&d16, q.data(), 2);
  CHECK(d16 == c10::Half(d).x);
  for (int j = 0; j < 32; ++j) {
    INFO(j);
    CHECK(static_cast<int8_t>(q[2 + j]) == static_cast<int8_t>(std::round(x[j] / d)));
  }
  CHECK(static_cast<int8_t>(q[2]) == -127);  // x = -8
  for (int j = 0; j < 34; ++j) CHECK(q[34 + j] == 0);  // a zero block: d 0, q 0
  const torch::Tensor back = dequantize_q8_0(reinterpret_cast<const uint8_t*>(q.data()), 64);
  const float dh = static_cast<float>(c10::Half(d));
  for (int j = 0; j < 32; ++j) CHECK(back[j].item<float>() == dh * static_cast<float>(static_cast<int8_t>(q[2 + j])));
  CHECK_THROWS(quantize_q8_0(torch::zeros({33})));
}

TEST_CASE("damaged GGUF files are refused in one line naming the fault", "[gguf]") {
  const std::string good = tiny_file();
  REQUIRE(refusal(good).empty());
  std::string bad = good;
  bad[0] = 'X';
  CHECK_THAT(refusal(bad), Catch::Contains("not a GGUF file"));
  bad = good;
  patch_u32(bad, 4, 4);
  CHECK_THAT(refusal(bad), Catch::Contains("version 4 is not supported"));
  bad = good;
  patch_u64(bad, 8, uint64_t{1} << 50);
  CHECK_THAT(refusal(bad), Catch::Contains("tensor count"));
  bad = good;
  patch_u64(bad, 16, 1000000);
  CHECK_THAT(refusal(bad), Catch::Contains("metadata count"));
  bad = good;
  patch_u64(bad, 24, 1000);  // the key's length
  CHECK_THAT(refusal(bad), Catch::Contains("truncated"));
  bad = good;
  patch_u32(bad, 62, 2);  // the tensor type: q4_1
  CHECK_THAT(refusal(bad), Catch::Contains("ggml type 2"));
  bad = good;
  patch_u64(bad, 66, 64);  // offset past the 32 data bytes
  CHECK_THAT(refusal(bad), Catch::Contains("outside the data section"));
  bad = good;
  patch_u64(bad, 66, 8);
  CHECK_THAT(refusal(bad), Catch::Contains("not aligned"));
  CHECK_THAT(refusal(good.substr(0, 100)), Catch::Contains("outside the data section"));
  CHECK_THAT(refusal(good.substr(0, 40)), Catch::Contains("more than the file can hold"));
  CHECK_THAT(refusal(""), Catch::Contains("not a GGUF file"));
  for (const std::string& r : {refusal(bad), refusal(good.substr(0, 40))}) CHECK(r.find('\n') == std::string::npos);
}

TEST_CASE("export to GGUF refuses by name what llama.cpp cannot run, writing nothing", "[gguf]") {
  TempDir tmp;
  const Tokenizer tokenizer = Tokenizer::load(tiny_corpus("bpe").tokenizer_dir);
  const int64_t vocab = tokenizer.vocab_size();
  auto refused = [&](ModelConfig c, const std::string& name) {
    const std::string dir = tmp / name;
    torch::manual_seed(0);
    AnyModel model = build_model(c);
    CheckpointInfo info;
    info.model = c;
    info.train.objective = default_objective(c.arch, false);
    info.tokenizer_model = tokenizer.serialized();
    save_checkpoint(dir, model.module(), nullptr, info);
    auto r = run_cli("export --checkpoint " + dir + " --format gguf --out " + (tmp / (name + ".gguf")));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK_FALSE(fs::exists(tmp / (name + ".gguf")));
    return r.err;
  };
  ModelConfig bert = tiny_bert_config(vocab);
  CHECK_THAT(refused(bert, "bert"), Catch::Contains("bert model has no GGUF form"));
  ModelConfig alibi = tiny_gpt_config(vocab);
  alibi.position = Position::kAlibi;
  CHECK_THAT(refused(alibi, "alibi"), Catch::Contains("alibi"));
  ModelConfig t5 = tiny_t5_config(false, vocab);
  CHECK_THAT(refused(t5, "t5"), Catch::Contains("t5 model has no GGUF form"));

  // A unigram SentencePiece tokenizer: llama.cpp's llama tokenizer would cut differently.
  const std::string dir = tmp / "llama_unigram";
  write_gguf_test_checkpoint("llama", dir, tmp.path);
  CheckpointInfo info = read_checkpoint(dir);
  info.tokenizer_model = Tokenizer::load(tiny_corpus("unigram").tokenizer_dir).serialized();
  CHECK_THROWS_WITH(export_gguf_model(info, tmp / "u.gguf", GgufTensorType::kF32),
                    Catch::Contains("unigram SentencePiece model"));
  CHECK_FALSE(fs::exists(tmp / "u.gguf"));
  auto bad_type = run_cli("export --checkpoint " + dir + " --format gguf --type q4_0 --out " + (tmp / "q.gguf"));
  CHECK(bad_type.exit_code == 2);
  CHECK_THAT(bad_type.err, Catch::Contains("f32|f16|q8_0|bf16"));
  auto wrong_format = run_cli("export --checkpoint " + dir + " --format hf --type f16 --out " + (tmp / "hf"));
  CHECK(wrong_format.exit_code == 2);
}

TEST_CASE("export -> import through GGUF f32 gives the same weights for the four architectures", "[gguf]") {
  TempDir tmp;
  for (const auto& family : gguf_families()) {
    DYNAMIC_SECTION(family) {
      const std::string ckpt = tmp / family, file = tmp / (family + ".gguf"), back = tmp / (family + "_back");
      write_gguf_test_checkpoint(family, ckpt, tmp.path);
      auto exported = run_cli("export --checkpoint " + ckpt + " --format gguf --out " + file);
      INFO(exported.out << exported.err);
      REQUIRE(exported.exit_code == 0);
      const GgufFile f = GgufFile::open(file);
      CHECK(f.get("general.architecture").as_string("") == family);
      CHECK(f.get("general.alignment").as_int("") == 32);
      CHECK(f.find_tensor("token_embd.weight") != nullptr);
      CHECK(f.find_tensor("blk.1.attn_norm.weight") != nullptr);
      auto imported = run_cli("import " + file + " --out " + back);
      INFO(imported.out << imported.err);
      REQUIRE(imported.exit_code == 0);
      const auto a = load_model(read_checkpoint(ckpt), torch::kCPU).module()->named_parameters();
      const auto b = load_model(read_checkpoint(back), torch::kCPU).module()->named_parameters();
      REQUIRE(a.size() == b.size());
      for (const auto& p : a) {
        INFO(p.key());
        const torch::Tensor* q = b.find(p.key());
        REQUIRE(q != nullptr);
        CHECK(torch::equal(p.value(), *q));
      }
      const Tokenizer ta = Tokenizer::from_serialized(read_checkpoint(ckpt).tokenizer_model);
      const Tokenizer tb = Tokenizer::from_serialized(read_checkpoint(back).tokenizer_model);
      for (const std::string text : {"the cat sat on 1234 mats", "  two  spaces\nand a line", "naïve café ❤"}) {
        INFO(text);
        CHECK(ta.encode(text) == tb.encode(text));
      }
    }
  }
}

TEST_CASE("q8_0 and bf16 exports store matrices quantized and norms in f32; import dequantizes", "[gguf]") {
  TempDir tmp;
  const std::string ckpt = tmp / "llama";
  write_gguf_test_checkpoint("llama", ckpt, tmp.path);
  for (const std::string type : {"q8_0", "bf16", "f16"}) {
    const std::string file = tmp / ("m_" + type + ".gguf");
    auto r = run_cli("export --checkpoint " + ckpt + " --format gguf --type " + type + " --out " + file);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const GgufFile f = GgufFile::open(file);
    CHECK(enum_name(f.find_tensor("blk.0.attn_q.weight")->type) == type);
    CHECK(f.find_tensor("blk.0.attn_norm.weight")->type == GgufTensorType::kF32);
    CHECK(f.find_tensor("output_norm.weight")->type == GgufTensorType::kF32);
    auto back = run_cli("import " + file + " --out " + (tmp / ("back_" + type)));
    INFO(back.out << back.err);
    CHECK(back.exit_code == 0);
  }
}

TEST_CASE("lmzoo import of a damaged .gguf: one line, exit 1, nothing written", "[gguf]") {
  TempDir tmp;
  const std::string ckpt = tmp / "gpt2", file = tmp / "m.gguf";
  write_gguf_test_checkpoint("gpt2", ckpt, tmp.path);
  REQUIRE(run_cli("export --checkpoint " + ckpt + " --format gguf --out " + file).exit_code == 0);
  const std::string bytes = read_text(file);
  std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", bytes.substr(0, bytes.size() / 2)}, {"magic", "GGUX" + bytes.substr(4)}};
  std::string renamed = bytes;
  const size_t at = renamed.find("blk.0.ffn_up.weight");
  REQUIRE(at != std::string::npos);
  renamed.replace(at, 7, "blk.0.x");  // same length: a name gpt2 has no place for
  cases.emplace_back("name", renamed);
  for (const auto& [name, content] : cases) {
    INFO(name);
    write_text(tmp / (name + ".gguf"), content);
    auto r = run_cli("import " + (tmp / (name + ".gguf")) + " --out " + (tmp / ("out_" + name)));
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(count_lines(r.err) == 1);
    CHECK_FALSE(fs::exists(tmp / ("out_" + name)));
  }
}

TEST_CASE("disk full: export --format gguf keeps the previous file and leaves no partial one", "[gguf][disk_full]") {
  TempDir probe;
  const std::string probe_cmd = "bash -c \"trap '' XFSZ; ulimit -f 1 && head -c 4096 /dev/zero >" + (probe / "p") +
                                "\" 2>/dev/null";
  std::error_code ec;
  if (std::system(probe_cmd.c_str()) == 0 || fs::file_size(probe / "p", ec) != 1024) {
    WARN("skipped: ulimit -f does not limit file sizes here");
    return;
  }
  TempDir tmp;
  const std::string ckpt = tmp / "gpt2", out_dir = tmp / "out", out = out_dir + "/model.gguf";
  write_gguf_test_checkpoint("gpt2", ckpt, tmp.path);
  fs::create_directories(out_dir);
  write_text(out, "the previous export");
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f 16; exec " + std::string(LMZOO_BINARY) +
                          " export --checkpoint " + ckpt + " --format gguf --out " + out + "\" >" + (tmp / "o") +
                          " 2>" + (tmp / "e") + " </dev/null";
  const int status = std::system(cmd.c_str());
  const std::string err = read_text(tmp / "e");
  INFO(err);
  CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 1);
  CHECK(count_lines(err) == 1);
  CHECK(err.find("File too large") != std::string::npos);
  CHECK(read_text(out) == "the previous export");
  CHECK(std::distance(fs::directory_iterator(out_dir), fs::directory_iterator()) == 1);  // no temporary sibling
  CHECK(run_cli("export --checkpoint " + ckpt + " --format gguf --out " + out).exit_code == 0);
  CHECK(fs::file_size(out) > 16 * 1024);
}

TEST_CASE("tokenizer.json pre-tokenizers get llama.cpp's names and come back from GGUF cutting the same", "[gguf]") {
  TempDir tmp;
  const std::string regex_tail = "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const std::string head = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|";
  for (const auto& [pre, digits] : std::vector<std::pair<std::string, std::string>>{
           {"llama-bpe", "\\p{N}{1,3}"}, {"qwen2", "\\p{N}"}, {"smollm", ""}}) {
    DYNAMIC_SECTION(pre) {
      const fs::path dir = tmp.path / pre;
      fs::create_directories(dir);
      write_smollm2_tokenizer(dir);
      if (!digits.empty()) {
        nlohmann::json j = nlohmann::json::parse(read_text(dir / "tokenizer.json"));
        j["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", head + digits + regex_tail}}}, {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
        write_text(dir / "tokenizer.json", j.dump());
      }
      const Tokenizer tokenizer = Tokenizer::load(dir.string());
      GgufWriter w;
      w.add("general.architecture", GgufValue::string("qwen2"));
      const GgufTokenizerSummary summary = add_gguf_tokenizer(w, tokenizer, tokenizer.vocab_size() + 3);
      CHECK(summary.model == "gpt2");
      CHECK(summary.pre == pre);
      w.write(tmp / (pre + ".gguf"));
      const GgufFile f = GgufFile::open(tmp / (pre + ".gguf"));
      CHECK(f.get("tokenizer.ggml.tokens").strings.size() == static_cast<size_t>(tokenizer.vocab_size() + 3));
      CHECK(f.get("tokenizer.ggml.tokens").strings.back() == "[PAD" + std::to_string(tokenizer.vocab_size() + 2) + "]");
      const fs::path back = tmp.path / (pre + "_back");
      fs::create_directories(back);
      for (const auto& [name, bytes] : tokenizer_files_from_gguf(f)) write_text(back / name, bytes);
      const Tokenizer again = Tokenizer::load(back.string());
      CHECK(again.vocab_size() == tokenizer.vocab_size());
      for (const std::string text : {"the cat 12345 sat", "  x\n\ny  ", "<|im_start|>user hi<|im_end|>", "naïve 東京"}) {
        INFO(text);
        CHECK(again.encode(text) == tokenizer.encode(text));
      }
    }
  }
}
