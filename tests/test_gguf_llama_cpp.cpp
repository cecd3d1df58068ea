// lmzoo's GGUF files in llama.cpp itself (issue 42), through node-llama-cpp 3.21.1's prebuilt llama.cpp
// (tools/gguf_check/check.mjs, installed by tools/fetch_gguf_check.sh): for tiny random Llama, Qwen2, GPT-2 and
// GPT-NeoX models, llama.cpp's ids for the held-out texts of tests/tokenizer_texts.jsonl equal lmzoo's, its greedy
// continuations (32 tokens, 4 prompts) equal lmzoo's for f32 files; bf16 and q8_0 files agree on the first token
// (llama.cpp rounds the activations to bf16 / q8_0 blocks too, lmzoo multiplies in f32 with the file's weights), with
// the log-probability differences and the count of whole equal continuations printed. Skipped, saying why, where node or the packages are absent.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "models/generation.h"
#include "models/gpt.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/test_gguf_models.h"

namespace fs = std::filesystem;
using namespace lmzoo;
using namespace lmzoo::test;

namespace {

std::string gguf_check_dir() {
  if (const char* d = std::getenv("LMZOO_GGUF_CHECK")) return d;
  const char* cache = std::getenv("LMZOO_NPM_CACHE");
  const char* home = std::getenv("HOME");
  return cache ? std::string(cache) + "/gguf_check" : std::string(home ? home : "/root") + "/.cache/lmzoo/npm/gguf_check";
}

// Why the llama.cpp reference cannot run here, or "".
std::string reference_missing() {
  if (std::system("node --version >/dev/null 2>&1") != 0) return "node is not installed";
  if (!fs::exists(gguf_check_dir() + "/node_modules/node-llama-cpp/package.json")) {
    return "node-llama-cpp is not installed in " + gguf_check_dir() + " (tools/fetch_gguf_check.sh)";
  }
  return "";
}

std::vector<std::string> held_out_texts() {
  std::vector<std::string> texts;
  std::ifstream in(std::string(LMZOO_SOURCE_DIR) + "/tests/tokenizer_texts.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) texts.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return texts;
}

const std::vector<std::string> kPrompts = {"the cat", "Once upon a time there", "1234 and 5678", "naïve ❤ café"};

nlohmann::json run_reference(const nlohmann::json& request, const std::string& dir) {
  const std::string req = dir + "/request.json", out = dir + "/reply.json", err = dir + "/reply.err";
  write_text(req, request.dump());
  const std::string cmd = "node " + std::string(LMZOO_SOURCE_DIR) + "/tools/gguf_check/check.mjs " + req + " >" +
                          out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  INFO(read_text(err));
  REQUIRE(rc == 0);
  return nlohmann::json::parse(read_text(out));
}

std::vector<int64_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

// lmzoo's greedy continuation (generate --temperature 0's sampler) and its log-probabilities at the first step.
std::vector<int64_t> lmzoo_greedy(GPT& model, const std::vector<int64_t>& prompt, int64_t n) {
  SamplingOptions o;
  o.max_new_tokens = n;
  o.temperature = 0;
  return generate_tokens(model, prompt, o);
}

torch::Tensor lmzoo_log_probs(GPT& model, const std::vector<int64_t>& prompt) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto logits = model->forward(torch::tensor(prompt, torch::kLong).view({1, -1}));  // (1, T, V)
  return torch::log_softmax(logits[0][-1].to(torch::kFloat64), -1);
}

}  // namespace

TEST_CASE("llama.cpp tokenizes and greedily decodes lmzoo's GGUF exports as lmzoo does", "[gguf][llama_cpp]") {
  const std::string missing = reference_missing();
  if (!missing.empty()) {
    WARN("skipped: " + missing);
    return;
  }
  const std::vector<std::string> texts = held_out_texts();
  REQUIRE(texts.size() >= 50);
  TempDir tmp;
  for (const auto& family : gguf_families()) {
    DYNAMIC_SECTION(family) {
      const std::string ckpt = tmp / family;
      write_gguf_test_checkpoint(family, ckpt, tmp.path);
      const Tokenizer tokenizer = Tokenizer::from_serialized(read_checkpoint(ckpt).tokenizer_model);
      nlohmann::json prompts = nlohmann::json::array();
      std::vector<std::vector<int64_t>> prompt_ids;
      for (const auto& p : kPrompts) {
        std::vector<int64_t> ids;
        for (int id : tokenizer.encode(p)) ids.push_back(id);
        prompt_ids.push_back(ids);
        prompts.push_back(ids);
      }
      for (const std::string type : {"f32", "bf16", "q8_0"}) {
        const std::string file = tmp / (family + "_" + type + ".gguf"), back = tmp / (family + "_" + type + "_back");
        auto exported = run_cli("export --checkpoint " + ckpt + " --format gguf --type " + type + " --out " + file);
        INFO(exported.out << exported.err);
        REQUIRE(exported.exit_code == 0);
        // lmzoo's side runs the weights the file holds (bf16 and q8_0 read back), on lmzoo's own graph.
        REQUIRE(run_cli("import " + file + " --out " + back).exit_code == 0);
        GPT model = load_model(read_checkpoint(type == "f32" ? ckpt : back), torch::kCPU).as<GPT>();
        const nlohmann::json reply =
            run_reference({{"model", file}, {"texts", type == "f32" ? texts : std::vector<std::string>{}},
                           {"special", tokenizer.kind() != TokenizerKind::kSentencePiece},
                           {"prompts", prompts}, {"n", 32}, {"top", 5}, {"top_steps", 1}},
                          tmp.path.string());
        CHECK(reply["metadata"]["general.architecture"] == family);
        if (type == "f32") {
          // llama.cpp's SentencePiece-style tokenizer writes spaces as U+2581 before merging, so a literal U+2581 in
          // the text is a space to it; SentencePiece keeps the two apart.
          const bool spm = tokenizer.kind() == TokenizerKind::kSentencePiece;
          int same = 0, literal_marker = 0;
          for (size_t i = 0; i < texts.size(); ++i) {
            std::vector<int64_t> ours;
            for (int id : tokenizer.encode(texts[i])) ours.push_back(id);
            const bool equal = ours == ids_of(reply["tokens"][i]);
            same += equal;
            if (spm && texts[i].find("\xE2\x96\x81") != std::string::npos) {
              ++literal_marker;
              continue;
            }
            CHECK(equal);
            if (!equal) UNSCOPED_INFO(family << " text " << i << " differs: " << nlohmann::json(texts[i]).dump());
          }
          std::cout << "[gguf] " << family << ": llama.cpp tokenization equals lmzoo's on " << same << "/"
                    << texts.size() << " held-out texts"
                    << (literal_marker ? " (" + std::to_string(literal_marker) + " holding a literal U+2581 not compared)" : "")
                    << std::endl;
        }
        int equal_prompts = 0, first_equal = 0;
        double max_diff = 0;
        for (size_t p = 0; p < prompt_ids.size(); ++p) {
          const auto ours = lmzoo_greedy(model, prompt_ids[p], 32);
          const auto theirs = ids_of(reply["greedy"][p]);
          equal_prompts += ours == theirs;
          first_equal += !ours.empty() && !theirs.empty() && ours[0] == theirs[0];
          const torch::Tensor lp = lmzoo_log_probs(model, prompt_ids[p]);
          for (const auto& pair : reply["top"][p][0]) {
            max_diff = std::max(max_diff, std::abs(lp[pair[0].get<int64_t>()].item<double>() - pair[1].get<double>()));
          }
          if (type == "f32") {
            INFO(family << " " << type << " prompt " << p);
            CHECK(ours == theirs);
          }
        }
        std::cout << "[gguf] " << family << " " << type << ": greedy 32 tokens equal on " << equal_prompts << "/"
                  << prompt_ids.size() << " prompts, first token on " << first_equal
                  << "; max |log p lmzoo - log p llama.cpp| over the top 5 at step 1: " << max_diff << std::endl;
        if (type != "f32") CHECK(first_equal == static_cast<int>(prompt_ids.size()));
      }
    }
  }
}
